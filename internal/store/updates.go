package store

import (
	"time"

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
		worktree_path = ?, worktree_branch = ?, last_seen_at = ?, error_message = ?, error_code = ?,
		error_profile = ?, exit_code = ?, exit_signal = ?, updated_at = ?
		WHERE session_id = ?`
	executorOffsetSQL     = `UPDATE executors_running SET host_offset = ? WHERE session_id = ?`
	sessionStateSQL       = `UPDATE sessions SET state = ?, updated_at = ?, closed_at = NULL WHERE id = ?`
	sessionClosedStateSQL = `UPDATE sessions SET state = ?, updated_at = ?2, closed_at = COALESCE(closed_at, ?2) WHERE id = ?3`
	sessionQueueHeldSQL   = `UPDATE sessions SET queue_held = ?, updated_at = ? WHERE id = ?`
	taskStateSQL          = `UPDATE tasks SET state = ?, updated_at = ? WHERE id = ?`
	// taskFollowSQL is what a task following its session needs: its
	// state and whether another of its sessions runs a turn.
	taskFollowSQL = `SELECT state, EXISTS(SELECT 1 FROM sessions WHERE task_id = ?1 AND state = '` + string(SessionRunning) + `')
		FROM tasks WHERE id = ?1`
)

// updateStatements are the statements prepareOnPool prepares at Open.
var updateStatements = []string{updateTurnSQL, updateExecutorSQL, executorOffsetSQL, sessionStateSQL, sessionClosedStateSQL,
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
