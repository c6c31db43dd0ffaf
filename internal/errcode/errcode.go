// Package errcode defines the daemon's typed domain errors. Every error a
// client can cause carries a stable machine code; the HTTP edge maps codes to
// statuses in one table, so the core never thinks in HTTP terms.
package errcode

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error identifier (snake_case). Clients
// switch on it, so existing values never change meaning.
type Code string

// Codes raised by the core. The HTTP status of each lives in server/problem.go.
const (
	InvalidRequest       Code = "invalid_request"
	Unauthorized         Code = "unauthorized"
	NotFound             Code = "not_found"
	TaskNotFound         Code = "task_not_found"
	SessionNotFound      Code = "session_not_found"
	TurnNotFound         Code = "turn_not_found"
	PermissionNotFound   Code = "permission_not_found"
	WebhookNotFound      Code = "webhook_not_found"
	AgentProfileNotFound Code = "agent_profile_not_found"
	AgentUnavailable     Code = "agent_unavailable"
	// SandboxUnavailable: the agent's sandbox is required (mode required)
	// but bubblewrap does not work where it would run.
	SandboxUnavailable Code = "sandbox_unavailable"
	InvalidCwd         Code = "invalid_cwd"
	CwdRefused         Code = "cwd_refused"
	InvalidState       Code = "invalid_state"
	SessionTerminal    Code = "session_terminal"
	TurnActive         Code = "turn_active"
	PromptQueueFull    Code = "prompt_queue_full"
	// PromptContentUnsupported: the prompt holds a block (image, audio,
	// embedded resource) the agent's promptCapabilities do not allow.
	PromptContentUnsupported Code = "prompt_content_unsupported"
	AgentLimitReached        Code = "agent_limit_reached"
	PromptIDConflict         Code = "prompt_id_conflict"
	PermissionResolved       Code = "permission_already_resolved"
	InvalidPermissionOpt     Code = "invalid_permission_option"
	AgentStartFailed         Code = "agent_start_failed"
	// AgentAuthRequired: the agent answered ACP -32000, it needs credentials
	// (set in its profile's env, or a login command). Never means the
	// session is gone.
	AgentAuthRequired   Code = "agent_auth_required"
	AgentError          Code = "agent_error"
	PayloadTooLarge     Code = "payload_too_large"
	MethodNotAllowed    Code = "method_not_allowed"
	ServiceShuttingDown Code = "shutting_down"
	Internal            Code = "internal_error"
	// StoreWriteFailed: a change could not be written (the database stayed
	// locked past its busy timeout, a constraint failed, the disk is full);
	// nothing of it was recorded.
	StoreWriteFailed Code = "store_write_failed"
	// DatabaseUnavailable: the database cannot be reached (PostgreSQL
	// down, restarting, or cut off); what was asked may be asked again
	// once it is back (Retry-After). A change already accepted waits in
	// the event writer and commits then.
	DatabaseUnavailable Code = "database_unavailable"
	// SessionOverloaded: the session's actor did not take the request
	// within the busy timeout (it waits for a slow disk, or too many
	// requests are queued ahead); nothing was done.
	SessionOverloaded Code = "session_overloaded"
	// OutboxFull: an executor host's outbox (internal/outbox) holds its
	// limit of bytes the daemon has not acknowledged; the record was not
	// appended. The caller holds back (back-pressure) until an ack frees room.
	OutboxFull Code = "outbox_full"
	// Host protocol (internal/hostproto): why an executor host refused the
	// daemon, or why a conversation with it broke. The daemon reports them
	// as the executor's error; clients see them through it, never as a
	// fault of their own request.
	//
	// HostProtocolMismatch: the daemon and the host speak no common
	// protocol version (one of them needs an upgrade).
	HostProtocolMismatch Code = "host_protocol_mismatch"
	// HostUnauthorized: the host did not accept the daemon's token.
	HostUnauthorized Code = "host_unauthorized"
	// HostCertificateRejected: the daemon refused the host's TLS
	// certificate: it is not the pinned one, not issued by the configured
	// CA, or made out for another name.
	HostCertificateRejected Code = "host_certificate_rejected"
	// HostProtocolError: a peer sent something the protocol does not allow
	// (a malformed or truncated frame, an unknown or unexpected message).
	HostProtocolError Code = "host_protocol_error"
	// HostFrameTooLarge: a frame announced more bytes than the receiver's
	// limit; the connection cannot continue.
	HostFrameTooLarge Code = "host_frame_too_large"
	// HostSessionUnknown: the host holds no such session (it never
	// started it, or dropped it once its exit was acknowledged).
	HostSessionUnknown Code = "host_session_unknown"
	// HostSessionFenced: the host refused a session's command because it
	// carried an older generation (fencing token) than one it already
	// accepted for the session: another node owns the session now, and
	// this one lost it (protocol version 4, several nodes).
	HostSessionFenced Code = "host_session_fenced"
	// HostOutboxDamaged: the host found the session's outbox damaged on
	// disk (docs/executors.md, "A damaged outbox"): it delivered every
	// intact record before the damage, moved the rest aside, and reports
	// the agent lost. The message says what was damaged and where the
	// damaged files went.
	HostOutboxDamaged Code = "host_outbox_damaged"
	// ExecutorUnavailable: the session's executor host cannot be reached
	// right now; the daemon is reconnecting (retry later).
	ExecutorUnavailable Code = "executor_unavailable"
	// ExecutorLost: the host stayed unreachable past the reconnect
	// deadline; its sessions took the interruption path.
	ExecutorLost Code = "executor_lost"
	// ExecutorNotFound: a session asked for an executor (runtime or remote
	// host name) that this daemon is not configured with.
	ExecutorNotFound     Code = "executor_not_found"
	DatabaseTooNew       Code = "database_too_new"
	ValidationFailed     Code = "validation_failed"
	UnsupportedMediaType Code = "unsupported_media_type"
	RouteNotFound        Code = "route_not_found"
	MalformedJSON        Code = "malformed_json"
	InvalidCursor        Code = "invalid_cursor"
	TooManySubscribers   Code = "too_many_subscribers"
	WorkingDirMissing    Code = "working_directory_missing"
	ResumeFailed         Code = "resume_failed"
	TurnQueued           Code = "turn_queued"
	// TurnNotQueued: only a queued turn can be withdrawn; this one runs or ended.
	TurnNotQueued      Code = "turn_not_queued"
	PermissionPending  Code = "permission_pending"
	SessionClosing     Code = "session_closing"
	NothingToContinue  Code = "nothing_to_continue"
	HistoryDegraded    Code = "history_degraded"
	Timeout            Code = "timeout"
	RequestCancelled   Code = "request_cancelled"
	HostNotAllowed     Code = "host_not_allowed"
	RequestTimeout     Code = "request_timeout"
	TooManyConnections Code = "too_many_connections"
	// Stream tickets (server/tickets.go): why a ?ticket= did not open a stream.
	StreamTicketInvalid     Code = "stream_ticket_invalid"
	StreamTicketExpired     Code = "stream_ticket_expired"
	StreamTicketWrongStream Code = "stream_ticket_wrong_stream"
	StreamTicketInUse       Code = "stream_ticket_in_use"
	TooManyStreamTickets    Code = "too_many_stream_tickets"
	// Workspace API (internal/workspace): a session's files and git
	// state, served by its executor.
	//
	// WorkspacePathInvalid: the path is absolute, has a .. component, a
	// NUL byte, or is too long; WorkspacePathOutside: it leads out of the
	// session's directory through a symlink.
	WorkspacePathInvalid      Code = "workspace_path_invalid"
	WorkspacePathOutside      Code = "workspace_path_outside"
	WorkspacePathNotFound     Code = "workspace_path_not_found"
	WorkspaceNotDirectory     Code = "workspace_not_a_directory"
	WorkspaceNotFile          Code = "workspace_not_a_file"
	WorkspaceNotRepository    Code = "workspace_not_a_repository"
	WorkspaceRevisionNotFound Code = "workspace_revision_not_found"
	// WorkspaceCheckpointNotFound: the turn has no checkpoint on the
	// session's executor (it started before checkpoints, or elsewhere).
	WorkspaceCheckpointNotFound Code = "workspace_checkpoint_not_found"
	// WorkspaceWorktreeInvalid: the session's worktree cannot be made or
	// what is at its path is not it (never replaced).
	WorkspaceWorktreeInvalid Code = "workspace_worktree_invalid"
	// WorkspaceRootChanged: the session's directory is no longer the one
	// at its path (it, or a directory above it, was replaced with a
	// symlink): tetherd does not follow it elsewhere.
	WorkspaceRootChanged Code = "workspace_root_changed"
	// WorkspaceTargetNotEmpty: a fork restores its files into a new or
	// empty directory; the one named holds files.
	WorkspaceTargetNotEmpty Code = "workspace_target_not_empty"
	// RewindRunning: a rewind or fork waits for the running (or queued)
	// turn to end; RewindNotUndoable: there is no rewind to undo, or a
	// turn ran since it.
	RewindRunning     Code = "rewind_turn_running"
	RewindNotUndoable Code = "rewind_not_undoable"
	// RewindInProgress: the session's files are being restored; a prompt
	// or another rewind waits for it.
	RewindInProgress Code = "rewind_in_progress"
	// BudgetExceeded: the session used its token or cost budget (the
	// limit, budget and usage are in details); raise the budget (PATCH
	// /session/{id}) to prompt or continue again.
	BudgetExceeded Code = "budget_exceeded"
	// WorkspaceRepositoryRefused: the repository git would read for the
	// session's directory is reached through a .git that leads outside it
	// (a symlink, a gitfile whose git dir does not record this checkout,
	// a work tree moved by configuration), or its configuration
	// names a filter tetherd cannot switch off (docs/workspace.md).
	WorkspaceRepositoryRefused Code = "workspace_repository_refused"
	// Terminals (internal/terminal): TerminalDisabled, the executor serves
	// none (switched off, or a remote host that did not enable them).
	TerminalDisabled     Code = "terminal_disabled"
	TerminalNotFound     Code = "terminal_not_found"
	TerminalExited       Code = "terminal_exited"
	TerminalLimitReached Code = "terminal_limit_reached"
	CommandNotFound      Code = "command_not_found"
	// WorkspaceGitUnavailable: the executor has no git command.
	WorkspaceGitUnavailable Code = "workspace_git_unavailable"
	// WorkspaceUnsupported: the session's executor host speaks a protocol
	// version without the workspace (upgrade the host).
	WorkspaceUnsupported Code = "workspace_unsupported"
	UnknownMode          Code = "unknown_mode"
	UnknownConfigOption  Code = "unknown_config_option"
	InvalidConfigValue   Code = "invalid_config_value"
	// Several nodes (internal/cluster). SessionOwnedElsewhere: another live
	// node holds the session's lease (the edge forwards the request there;
	// a client sees it only when that node cannot be reached).
	// SessionLeaseLost: this node no longer holds the session's lease (it
	// expired, or another node took it); nothing of the request was
	// written: retry, and it reaches the new owner.
	SessionOwnedElsewhere Code = "session_owned_elsewhere"
	SessionLeaseLost      Code = "session_lease_lost"
	// NotReady: this node does not serve requests now (GET /ready).
	NotReady Code = "not_ready"
)

// Error is a domain error: a code, a human message and optional details that
// are safe to show to the client.
type Error struct {
	Code    Code
	Message string
	// Details are extra problem+json members (e.g. the current state).
	Details map[string]any
	// Err is the underlying cause; never shown to clients.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap exposes the cause to errors.Is/As.
func (e *Error) Unwrap() error { return e.Err }

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error that keeps err as its hidden cause.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// With returns a copy of e with an extra detail member.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// CodeOf returns the code of the first *Error in err's chain, or Internal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// MessageOf is the message of the first *Error in err's chain (without
// the error it wraps), else err's own text: what a person is shown.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
