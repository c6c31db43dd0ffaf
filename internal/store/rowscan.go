package store

import (
	"database/sql"
	"time"

	"gorm.io/gorm"
)

// Hand-written scans for the reads on hot paths: the recovery plan at
// every turn boundary (inside the writer's transaction) and start-up
// reconciliation. They run SQL constants through the connection pool's
// prepared statements (prepareOnPool) and scan columns into fields by
// position, without gorm building the query or reflecting over the row
// for every call. Each column list below is in the order of its fields
// method; TestRowScansMatchGorm checks both against gorm's reads.

const turnColumns = `session_id, prompt_id, seq, kind, state, prompt, stop_reason, error_code,
	error_message, interrupt_reason, exit_code, exit_signal, continues_prompt_id, cancel_requested,
	context_injected, interruption, workspace_changes, created_at, started_at, delivered_at, ended_at, rewound, usage, stalled_at`

func (r *turnRow) fields() []any {
	return []any{&r.SessionID, &r.PromptID, &r.Seq, &r.Kind, &r.State, &r.Prompt, &r.StopReason, &r.ErrorCode,
		&r.ErrorMessage, &r.InterruptReason, &r.ExitCode, &r.ExitSignal, &r.ContinuesPromptID, &r.CancelRequested,
		&r.ContextInjected, &r.Interruption, &r.WorkspaceChanges, &r.CreatedAt, &r.StartedAt, &r.DeliveredAt, &r.EndedAt, &r.Rewound, &r.Usage, &r.StalledAt}
}

const messageColumns = `id, session_id, prompt_id, role, text, content, created_at, updated_at`

func (r *messageRow) fields() []any {
	return []any{&r.ID, &r.SessionID, &r.PromptID, &r.Role, &r.Text, &r.Content, &r.CreatedAt, &r.UpdatedAt}
}

const toolCallColumns = `session_id, tool_call_id, prompt_id, title, kind, status, interrupted, content,
	locations, raw_input, raw_output, created_at, updated_at`

func (r *toolCallRow) fields() []any {
	return []any{&r.SessionID, &r.ToolCallID, &r.PromptID, &r.Title, &r.Kind, &r.Status, &r.Interrupted, &r.Content,
		&r.Locations, &r.RawInput, &r.RawOutput, &r.CreatedAt, &r.UpdatedAt}
}

const permissionColumns = `id, session_id, prompt_id, tool_call_id, title, options, state,
	selected_option_id, created_at, resolved_at`

func (r *permissionRow) fields() []any {
	return []any{&r.ID, &r.SessionID, &r.PromptID, &r.ToolCallID, &r.Title, &r.Options, &r.State,
		&r.SelectedOptionID, &r.CreatedAt, &r.ResolvedAt}
}

const executorColumns = `session_id, runtime, status, agent_execution_id, pid, host, ` + committedOffsetSQL + `,
	host_offset_base, resume_token,
	supports_session_resume, supports_load, supports_workspace_only, worktree_path, worktree_branch, worktree_repo, worktree_state,
	last_seen_at, error_message, error_code, error_profile, exit_code, exit_signal, sandbox, sandbox_reason, updated_at`

func (r *executorRow) fields() []any {
	return []any{&r.SessionID, &r.Runtime, &r.Status, &r.AgentExecutionID, &r.PID, &r.Host, &r.HostOffset, &r.HostOffsetBase, &r.ResumeToken,
		&r.SupportsSessionResume, &r.SupportsLoad, &r.SupportsWorkspaceOnly, &r.WorktreePath, &r.WorktreeBranch, &r.WorktreeRepo, &r.WorktreeState,
		&r.LastSeenAt, &r.ErrorMessage, &r.ErrorCode, &r.ErrorProfile, &r.ExitCode, &r.ExitSignal, &r.Sandbox, &r.SandboxReason, &r.UpdatedAt}
}

// scannedRow is a row type with a positional scan.
type scannedRow[R any] interface {
	*R
	fields() []any
}

// queryRows runs query on db's connection or transaction (its prepared
// statement when the query is one of the pool's) and scans every row,
// converted by conv. extra, when not nil, receives the columns after the
// row's own (the same on every row).
func queryRows[R any, P scannedRow[R], T any](db *gorm.DB, conv func(R) T, extra []any, query string, args ...any) (out []T, err error) {
	defer traced(db, time.Now(), query, func() int64 { return int64(len(out)) })
	rows, err := db.Statement.ConnPool.QueryContext(db.Statement.Context, bindFor(db, query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanAll[R, P](rows, conv, extra)
}

// traced reports a statement run beside gorm to the store's logger, as
// gorm reports its own: counted (Store.Statements) and logged when slow.
func traced(db *gorm.DB, begin time.Time, query string, rows func() int64) {
	db.Logger.Trace(db.Statement.Context, begin, func() (string, int64) { return query, rows() }, nil)
}

func scanAll[R any, P scannedRow[R], T any](rows *sql.Rows, conv func(R) T, extra []any) ([]T, error) {
	var out []T
	for rows.Next() {
		var r R
		if err := rows.Scan(append(P(&r).fields(), extra...)...); err != nil {
			return nil, err
		}
		out = append(out, conv(r))
	}
	return out, rows.Err()
}
