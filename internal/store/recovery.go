package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/tether/tether/internal/session"
	"gorm.io/gorm"
)

// Reads for recovery planning. The planner looks at the end of a session:
// the running and queued turns, the last turn that ran and the output of
// that one turn. These reads fetch only that, by index seeks (migration
// 00010), so planning costs the same at the tenth and the ten-thousandth
// message; the whole-history check the planner also makes (no missing
// turn, no output of an unknown turn) reads only ids (HistoryRefs) and is
// made once per session by the caller.

// recentTurnsFromSQL is the seq the recent turns start at: the oldest of
// the running and queued turns, the last turn that started (by seq) and the
// turn that started last (a continuation runs before the turns held in the
// queue, so the two differ). Only queued and never-started turns follow
// the last started one, so the window is as long as the queue, not the
// transcript. NULL when no turn ever started: every turn is recent then.
const recentTurnsFromSQL = `SELECT MIN(seq) FROM (
	SELECT seq FROM turns WHERE session_id = ?1 AND state IN ('running', 'queued')
	UNION ALL SELECT seq FROM (SELECT seq FROM turns WHERE session_id = ?1 AND started_at IS NOT NULL ORDER BY seq DESC LIMIT 1) AS last_started
	UNION ALL SELECT seq FROM turns WHERE session_id = ?1 AND started_at = (
		SELECT MAX(started_at) FROM turns WHERE session_id = ?1)) AS recent`

// The plan's reads, each one statement prepared once on the pool (see
// prepareOnPool: inside the writer's transactions a statement gorm builds
// is compiled again in every transaction). recentTurnsSQL returns the
// recent turns with, on every row, the seq of the turn before the first
// (0 when none): the count of the earlier turns.
const (
	planSessionSQL = `SELECT state, context_lost, queue_held, usage, budget FROM sessions WHERE id = ?`
	recentTurnsSQL = `WITH f(seq) AS (` + recentTurnsFromSQL + `)
		SELECT ` + turnColumns + `,
			(SELECT COALESCE(MAX(p.seq), 0) FROM turns p WHERE p.session_id = ?1 AND p.seq < (SELECT seq FROM f))
		FROM turns WHERE session_id = ?1 AND seq >= COALESCE((SELECT seq FROM f), 0) ORDER BY seq`
	turnMessagesSQL  = `SELECT ` + messageColumns + ` FROM messages WHERE session_id = ? AND prompt_id = ? ORDER BY id`
	turnToolCallsSQL = `SELECT ` + toolCallColumns + ` FROM tool_calls WHERE session_id = ? AND prompt_id = ?
		ORDER BY created_at, rowid`
	pendingPermissionsSQL = `SELECT ` + permissionColumns + ` FROM permission_requests
		WHERE session_id = ? AND state = 'pending' ORDER BY created_at, rowid`
)

// recoveryStatements are the statements prepareOnPool prepares at Open.
var recoveryStatements = []string{planSessionSQL, recentTurnsSQL, turnMessagesSQL, turnChunksSQL, turnToolCallsSQL,
	pendingPermissionsSQL, historyTurnsSQL, historyMessageTurnsSQL, historyToolCallTurnsSQL}

// SessionFlags are the columns of a session a recovery plan reads.
type SessionFlags struct {
	State                  session.SessionState
	ContextLost, QueueHeld bool
	// OverBudget is the budget limit the session's usage has reached
	// ("" for none; session.Budget.Reached).
	OverBudget string
}

// GetSessionFlags returns the session's state and recovery flags (a
// session_not_found error when there is no such session).
func (s *Store) GetSessionFlags(ctx context.Context, sessionID string) (SessionFlags, error) {
	db := s.db.WithContext(ctx)
	var f SessionFlags
	var state string
	var usage, budget *string
	defer traced(db, time.Now(), planSessionSQL, func() int64 { return 1 })
	err := db.Statement.ConnPool.QueryRowContext(db.Statement.Context, bindFor(db, planSessionSQL), sessionID).
		Scan(&state, &f.ContextLost, &f.QueueHeld, &usage, &budget)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return f, sessionNotFound(sessionID)
	case err != nil:
		return f, internal(err, "get session")
	}
	f.State = session.SessionState(state)
	if budget != nil {
		var b session.Budget
		u, uerr := usageOf(usage)
		if err := errors.Join(uerr, json.Unmarshal([]byte(*budget), &b)); err != nil {
			return f, internal(err, "session budget")
		}
		f.OverBudget, _ = b.Reached(u)
	}
	return f, nil
}

// RecentTurns returns the session's turns from the oldest one recovery
// planning may need on (see recentTurnsFromSQL), in seq order, and how many
// turns come before them. The earlier turns' seqs are 1..earlier unless
// HistoryRefs shows a gap.
func (s *Store) RecentTurns(ctx context.Context, sessionID string) (turns []session.Turn, earlier int64, err error) {
	turns, err = queryRows[turnRow](s.db.WithContext(ctx), toTurn, []any{&earlier}, recentTurnsSQL, sessionID)
	if err != nil {
		return nil, 0, internal(err, "list recent turns")
	}
	return turns, earlier, nil
}

// ListTurnMessages returns one turn's messages in order, each with the
// text streamed into it so far.
func (s *Store) ListTurnMessages(ctx context.Context, sessionID, promptID string) ([]session.Message, error) {
	return s.listMessages(ctx, sessionID, &promptID)
}

// ListTurnToolCalls returns one turn's tool calls in the order they
// started (rowid breaks ties between calls started within the same
// nanosecond).
func (s *Store) ListTurnToolCalls(ctx context.Context, sessionID, promptID string) ([]session.ToolCall, error) {
	out, err := queryRows[toolCallRow](s.db.WithContext(ctx), toToolCall, nil, turnToolCallsSQL, sessionID, promptID)
	if err != nil {
		return nil, internal(err, "list tool calls")
	}
	return out, nil
}

// ListPendingPermissions returns the session's pending permission
// requests in the order they were asked.
func (s *Store) ListPendingPermissions(ctx context.Context, sessionID string) ([]session.Permission, error) {
	out, err := queryRows[permissionRow](s.db.WithContext(ctx), toPermission, nil, pendingPermissionsSQL, sessionID)
	if err != nil {
		return nil, internal(err, "list permissions")
	}
	return out, nil
}

// HistoryRefs are the ids the whole-history check compares: every turn's
// seq and prompt id, and the distinct prompt ids output is attributed to.
type HistoryRefs struct {
	Turns                       []TurnRef
	MessageTurns, ToolCallTurns []string
}

// TurnRef names a turn by its number and prompt id.
type TurnRef struct {
	Seq      int64
	PromptID string
}

// The whole-history check's reads: ids only, from indexes.
const (
	historyTurnsSQL         = `SELECT seq, prompt_id FROM turns WHERE session_id = ? ORDER BY seq`
	historyMessageTurnsSQL  = `SELECT DISTINCT prompt_id FROM messages WHERE session_id = ? AND prompt_id <> ''`
	historyToolCallTurnsSQL = `SELECT DISTINCT prompt_id FROM tool_calls WHERE session_id = ? AND prompt_id <> ''`
)

// HistoryRefs reads the session's turn numbers and the turns its messages
// and tool calls name, from indexes only (no text, no content).
func (s *Store) HistoryRefs(ctx context.Context, sessionID string) (HistoryRefs, error) {
	var h HistoryRefs
	db := s.db.WithContext(ctx)
	var err error
	if h.Turns, err = queryRows[TurnRef](db, func(r TurnRef) TurnRef { return r }, nil, historyTurnsSQL, sessionID); err != nil {
		return h, internal(err, "read history refs")
	}
	if h.MessageTurns, err = queryStrings(db, historyMessageTurnsSQL, sessionID); err != nil {
		return h, internal(err, "read history refs")
	}
	if h.ToolCallTurns, err = queryStrings(db, historyToolCallTurnsSQL, sessionID); err != nil {
		return h, internal(err, "read history refs")
	}
	return h, nil
}

func (r *TurnRef) fields() []any { return []any{&r.Seq, &r.PromptID} }

// queryStrings runs a query of one text column.
func queryStrings(db *gorm.DB, query string, args ...any) (out []string, err error) {
	defer traced(db, time.Now(), query, func() int64 { return int64(len(out)) })
	rows, err := db.Statement.ConnPool.QueryContext(db.Statement.Context, bindFor(db, query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
