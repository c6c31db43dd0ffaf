package store

import (
	"context"

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
	UNION ALL SELECT seq FROM (SELECT seq FROM turns WHERE session_id = ?1 AND started_at IS NOT NULL ORDER BY seq DESC LIMIT 1)
	UNION ALL SELECT seq FROM turns WHERE session_id = ?1 AND started_at = (
		SELECT MAX(started_at) FROM turns WHERE session_id = ?1))`

// RecentTurns returns the session's turns from the oldest one recovery
// planning may need on (see recentTurnsFromSQL), in seq order, and how many
// turns come before them. The earlier turns' seqs are 1..earlier unless
// HistoryRefs shows a gap.
func (s *Store) RecentTurns(ctx context.Context, sessionID string) (turns []Turn, earlier int64, err error) {
	db := s.db.WithContext(ctx)
	var from *int64
	if err := db.Raw(recentTurnsFromSQL, sessionID).Scan(&from).Error; err != nil {
		return nil, 0, internal(err, "list recent turns")
	}
	q := db.Where("session_id = ?", sessionID)
	if from != nil {
		q = q.Where("seq >= ?", *from)
		if earlier, err = countTurnsBefore(db, sessionID, *from); err != nil {
			return nil, 0, err
		}
	}
	var rows []turnRow
	if err := q.Order("seq").Find(&rows).Error; err != nil {
		return nil, 0, internal(err, "list recent turns")
	}
	turns = make([]Turn, 0, len(rows))
	for _, r := range rows {
		turns = append(turns, toTurn(r))
	}
	return turns, earlier, nil
}

// countTurnsBefore is the seq of the turn before from, the count of the
// earlier turns when none is missing (seqs are unique and start at 1).
func countTurnsBefore(db *gorm.DB, sessionID string, from int64) (int64, error) {
	var prev *int64
	if err := db.Raw(`SELECT MAX(seq) FROM turns WHERE session_id = ? AND seq < ?`, sessionID, from).Scan(&prev).Error; err != nil {
		return 0, internal(err, "list recent turns")
	}
	if prev == nil {
		return 0, nil
	}
	return *prev, nil
}

// ListTurnMessages returns one turn's messages in order, each with the
// text streamed into it so far.
func (s *Store) ListTurnMessages(ctx context.Context, sessionID, promptID string) ([]Message, error) {
	return s.listMessages(ctx, sessionID, &promptID)
}

// ListTurnToolCalls returns one turn's tool calls in the order they started.
func (s *Store) ListTurnToolCalls(ctx context.Context, sessionID, promptID string) ([]ToolCall, error) {
	return s.listToolCalls(s.db.WithContext(ctx).Where("session_id = ? AND prompt_id = ?", sessionID, promptID))
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

// HistoryRefs reads the session's turn numbers and the turns its messages
// and tool calls name, from indexes only (no text, no content).
func (s *Store) HistoryRefs(ctx context.Context, sessionID string) (HistoryRefs, error) {
	var h HistoryRefs
	db := s.db.WithContext(ctx)
	if err := db.Raw(`SELECT seq, prompt_id FROM turns WHERE session_id = ? ORDER BY seq`, sessionID).
		Scan(&h.Turns).Error; err != nil {
		return h, internal(err, "read history refs")
	}
	if err := db.Raw(`SELECT DISTINCT prompt_id FROM messages WHERE session_id = ? AND prompt_id <> ''`, sessionID).
		Scan(&h.MessageTurns).Error; err != nil {
		return h, internal(err, "read history refs")
	}
	if err := db.Raw(`SELECT DISTINCT prompt_id FROM tool_calls WHERE session_id = ? AND prompt_id <> ''`, sessionID).
		Scan(&h.ToolCallTurns).Error; err != nil {
		return h, internal(err, "read history refs")
	}
	return h, nil
}
