// Package events owns the durable event log: the single group-commit
// writer that turns transcript changes into committed events, the live hub
// that fans them out to subscribers, and the cursors clients resume from.
package events

import (
	"strconv"
	"strings"

	"github.com/tether/tether/internal/errcode"
)

// Event types (DESIGN.md section 3). Payloads carry sessionId, taskId and,
// where a turn is involved, promptId.
const (
	SessionCreated         = "session.created"
	SessionStateChanged    = "session.state_changed"
	SessionExecutorStatus  = "session.executor_status"
	SessionResumed         = "session.resumed"
	SessionRecoveryChanged = "session.recovery_changed"
	// SessionAutoContinued audits a continuation tetherd made by itself.
	SessionAutoContinued = "session.auto_continued"
	SessionClosed        = "session.closed"
	TaskStateChanged     = "task.state_changed"
	// TaskCreated carries a new task whole; TaskUpdated its new title.
	TaskCreated     = "task.created"
	TaskUpdated     = "task.updated"
	TurnQueued      = "turn.queued"
	TurnStarted     = "turn.started"
	TurnCompleted   = "turn.completed"
	TurnFailed      = "turn.failed"
	TurnCancelled   = "turn.cancelled"
	TurnInterrupted = "turn.interrupted"
	// TurnDelivered records whether a turn's prompt reached the agent.
	TurnDelivered = "turn.delivered"
	// TurnCancelRequested records the user's cancel of a running turn.
	TurnCancelRequested = "turn.cancel_requested"
	// TurnWorkspaceChanges records what an interrupted turn changed.
	TurnWorkspaceChanges = "turn.workspace_changes"
	// SessionQueueHeld records whether the queued turns wait for the user.
	SessionQueueHeld    = "session.queue_held"
	MessageAdded        = "message.added"
	MessageChunk        = "message.chunk"
	ToolCallStarted     = "tool_call.started"
	ToolCallUpdated     = "tool_call.updated"
	PlanUpdated         = "plan.updated"
	PermissionRequested = "permission.requested"
	PermissionResolved  = "permission.resolved"
	// SessionOptionsChanged carries the session's modes, current mode,
	// config options and available commands whenever one of them changes.
	SessionOptionsChanged = "session.options_changed"
	// Commands run in a session's directory (sessions/commands.go).
	CommandStarted = "command.started"
	CommandOutput  = "command.output"
	// CommandTruncated: output from an offset on is not in the log.
	CommandTruncated = "command.truncated"
	CommandExited    = "command.exited"
)

// Control frames: sent on streams, never stored, never carrying an id.
const (
	ResyncRequired = "resync_required"
	ReplayComplete = "replay_complete"
	StreamLagged   = "stream_lagged"
)

// Resync reasons.
const (
	ReasonEpochMismatch = "epoch_mismatch"
	ReasonCursorAhead   = "cursor_ahead"
	ReasonCursorExpired = "cursor_expired"
)

// globalTypes are the event types the global stream carries.
var globalTypes = map[string]bool{
	SessionCreated: true, SessionStateChanged: true, SessionExecutorStatus: true, SessionResumed: true,
	SessionRecoveryChanged: true, SessionAutoContinued: true, SessionClosed: true, TaskStateChanged: true,
	TaskCreated: true, TaskUpdated: true,
}

// IsGlobal reports whether events of type t also go to GET /events.
func IsGlobal(t string) bool { return globalTypes[t] }

// Cursor is a position in a stream: the epoch of the history and the
// number (seq, or global id) of the last event seen.
type Cursor struct {
	Epoch string
	N     int64
}

// String renders the cursor as <epoch>:<n>.
func (c Cursor) String() string { return c.Epoch + ":" + strconv.FormatInt(c.N, 10) }

// ParseCursor parses <epoch>:<n>. A malformed cursor is a client error.
func ParseCursor(s string) (Cursor, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 || len(s) > 200 {
		return Cursor{}, errcode.New(errcode.InvalidCursor, "cursor %q is not of the form <epoch>:<seq>", s)
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || n < 0 {
		return Cursor{}, errcode.New(errcode.InvalidCursor, "cursor %q has a bad sequence number", s)
	}
	epoch := s[:i]
	for _, r := range epoch {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return Cursor{}, errcode.New(errcode.InvalidCursor, "cursor %q has a bad epoch", s)
		}
	}
	return Cursor{Epoch: epoch, N: n}, nil
}
