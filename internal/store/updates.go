package store

import (
	"time"

	"github.com/tether/tether/internal/session"
	"gorm.io/gorm"
)

// The writer's most frequent updates (turn and executor rows, session and
// task states at every turn boundary and at start-up reconciliation), as
// statements prepared once on the pool (see prepareOnPool): gorm would
// build each from a map and compile it again in every write transaction.
const (
	updateTurnSQL = `UPDATE turns SET kind = ?, state = ?, prompt = ?, stop_reason = ?, error_code = ?,
		error_message = ?, interrupt_reason = ?, exit_code = ?, exit_signal = ?, continues_prompt_id = ?,
		cancel_requested = ?, context_injected = ?, started_at = ?, delivered_at = ?, ended_at = ?
		WHERE session_id = ? AND prompt_id = ?`
	updateExecutorSQL = `UPDATE executors_running SET runtime = ?, status = ?, agent_execution_id = ?, pid = ?,
		host = ?, resume_token = ?, supports_session_resume = ?, supports_load = ?, supports_workspace_only = ?,
		worktree_path = ?, worktree_branch = ?, worktree_repo = ?, worktree_state = ?, last_seen_at = ?, error_message = ?, error_code = ?,
		error_profile = ?, exit_code = ?, exit_signal = ?, sandbox = ?, sandbox_reason = ?, updated_at = ?
		WHERE session_id = ?`
	// executorOffsetSQL writes a host offset the events do not carry (or
	// a reset, ?3, to base ?4) into the executor row, with the session's
	// last event seq: the row's offset then stands for every event up to
	// it, so it also takes in the largest offset those events carry.
	executorOffsetSQL = `UPDATE executors_running SET
		host_offset = MAX(host_offset, ?1, COALESCE((SELECT e.host_offset FROM events e
			WHERE e.session_id = ?2 AND e.seq > executors_running.host_offset_seq AND e.host_offset IS NOT NULL
			ORDER BY e.seq DESC LIMIT 1), 0)),
		host_offset_seq = COALESCE((SELECT MAX(e.seq) FROM events e WHERE e.session_id = ?2), 0),
		host_offset_base = CASE WHEN ?3 THEN ?4 ELSE host_offset_base END
		WHERE session_id = ?2`
	sessionStateSQL       = `UPDATE sessions SET state = ?, updated_at = ?, closed_at = NULL WHERE id = ?`
	sessionClosedStateSQL = `UPDATE sessions SET state = ?, updated_at = ?2, closed_at = COALESCE(closed_at, ?2) WHERE id = ?3`
	sessionQueueHeldSQL   = `UPDATE sessions SET queue_held = ?, updated_at = ? WHERE id = ?`
	endTurnSQL            = `UPDATE turns SET state = ?, stop_reason = ?, error_code = ?, error_message = ?, interrupt_reason = ?,
		exit_code = ?, exit_signal = ?, ended_at = ?, stalled_at = NULL WHERE session_id = ? AND prompt_id = ?`
	turnDeliveredSQL       = `UPDATE turns SET delivered_at = ? WHERE session_id = ? AND prompt_id = ?`
	turnStartedSQL         = `UPDATE turns SET state = ?, started_at = ?, context_injected = ? WHERE session_id = ? AND prompt_id = ?`
	turnCancelRequestedSQL = `UPDATE turns SET cancel_requested = ? WHERE session_id = ? AND prompt_id = ?`
	taskStateSQL           = `UPDATE tasks SET state = ?, updated_at = ? WHERE id = ?`
	// taskFollowSQL is what a task following its session needs: its
	// state and whether another of its sessions runs a turn.
	taskFollowSQL = `SELECT state, EXISTS(SELECT 1 FROM sessions WHERE task_id = ?1 AND state = '` + string(session.SessionRunning) + `')
		FROM tasks WHERE id = ?1`
)

// committedOffsetSQL is the executor row's host_offset column as reads
// see it: the committed offset of a hosted session is the larger of the
// row's own and the one the session's last event after host_offset_seq
// carries (Executor.HostOffset). A standalone session has none to look
// for.
const committedOffsetSQL = `CASE WHEN runtime = '` + string(session.RuntimeStandalone) + `' THEN host_offset
	ELSE MAX(host_offset, COALESCE((SELECT e.host_offset FROM events e
		WHERE e.session_id = executors_running.session_id AND e.seq > executors_running.host_offset_seq
		AND e.host_offset IS NOT NULL ORDER BY e.seq DESC LIMIT 1), 0)) END AS host_offset`

// updateStatements are the statements prepareOnPool prepares at Open.
var updateStatements = []string{updateTurnSQL, endTurnSQL, turnDeliveredSQL, turnStartedSQL, turnCancelRequestedSQL, updateExecutorSQL, executorOffsetSQL, sessionStateSQL, sessionClosedStateSQL,
	sessionQueueHeldSQL, taskStateSQL, taskFollowSQL}

// updateRow runs one of the statements above, which updates one row, and
// returns missing() when it matched none.
func updateRow(db *gorm.DB, op string, missing func() error, query string, args ...any) error {
	begin := time.Now()
	var n int64
	res, err := execFast(db, query, args...)
	if err == nil {
		n, err = res.RowsAffected()
	}
	traced(db, begin, query, func() int64 { return n })
	if err != nil {
		return internal(err, op)
	}
	if n == 0 {
		return missing()
	}
	return nil
}
