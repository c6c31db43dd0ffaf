package events

import (
	"encoding/json"
	"time"

	"github.com/tether/tether/internal/recovery"
	"github.com/tether/tether/internal/session"
)

// The payload types below are the data of each event type, one per
// `*Data` schema of api/openapi.yaml (the JSON tags are the contract's
// member names; server tests check every frame against the contract).
// Members always present in the contract's examples have no omitempty;
// optional ones do. Emit a pointer (`&events.TurnStarted{...}`): the writer
// fills the Common members from the Draft.

// Common holds the members every event payload may carry. The writer sets
// sessionId, taskId and promptId from the Draft when the payload leaves
// them empty, so emit sites name them once, on the Draft.
type Common struct {
	SessionID string `json:"sessionId,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
	PromptID  string `json:"promptId,omitempty"`
}

func (c *Common) common() *Common { return c }

// Payload is a typed event payload: a pointer to one of this file's types
// (they embed Common).
type Payload interface{ common() *Common }

// fill sets the members the payload leaves empty from the draft.
func (c *Common) fill(d Draft) {
	if c.SessionID == "" {
		c.SessionID = d.SessionID
	}
	if c.TaskID == "" {
		c.TaskID = d.TaskID
	}
	if c.PromptID == "" {
		c.PromptID = d.PromptID
	}
}

// Session family.

// SessionCreatedData is the payload of session.created.
type SessionCreatedData struct {
	Common
	AgentProfileID string               `json:"agentProfileId"`
	Cwd            string               `json:"cwd"`
	State          session.SessionState `json:"state"`
	Title          string               `json:"title"`
	EventEpoch     string               `json:"eventEpoch"`
}

// SessionStateChangedData is the payload of session.state_changed.
type SessionStateChangedData struct {
	Common
	State         session.SessionState `json:"state"`
	PreviousState session.SessionState `json:"previousState"`
}

// ExecutorStatusData is the payload of session.executor_status.
type ExecutorStatusData struct {
	Common
	Status           session.ExecutorStatus `json:"status"`
	Runtime          session.Runtime        `json:"runtime"`
	Host             string                 `json:"host,omitempty"`
	PID              int                    `json:"pid,omitempty"`
	Error            string                 `json:"error,omitempty"`
	ErrorCode        string                 `json:"errorCode,omitempty"`
	ExitCode         *int                   `json:"exitCode,omitempty"`
	ExitSignal       string                 `json:"exitSignal,omitempty"`
	AgentExecutionID string                 `json:"agentExecutionId,omitempty"`
}

// SessionResumedData is the payload of session.resumed.
type SessionResumedData struct {
	Common
	Strategy        string `json:"strategy"`
	ContextRestored bool   `json:"contextRestored"`
	FallbackReason  string `json:"fallbackReason,omitempty"`
}

// CommandStartedData is the payload of command.started.
type CommandStartedData struct {
	Common
	CommandID string `json:"commandId"`
	Command   string `json:"command"`
}

// CommandOutputData is the payload of command.output.
type CommandOutputData struct {
	Common
	CommandID string `json:"commandId"`
	Offset    int64  `json:"offset"`
	Text      string `json:"text"`
}

// CommandTruncatedData is the payload of command.truncated: the
// command's output from Offset on is not recorded, for Reason. Bytes is
// how much is missing when that is known now (an executor's overrun);
// a limit's Limit is the limit, and command.exited says how much was
// left out in all.
type CommandTruncatedData struct {
	Common
	CommandID string `json:"commandId"`
	Offset    int64  `json:"offset"`
	Reason    string `json:"reason"`
	Bytes     int64  `json:"bytes,omitempty"`
	Limit     int64  `json:"limit,omitempty"`
}

// Reasons of command.truncated: the daemon's limits (the command's own
// output, the session's commands together), and output its executor
// dropped before the daemon could read it (a host that predates held
// commands).
const (
	TruncatedCommandLimit = "command_limit"
	TruncatedSessionLimit = "session_limit"
	TruncatedOverrun      = "overrun"
)

// CommandExitedData is the payload of command.exited: how the command
// ended and how much of its output the log holds (OutputBytes) and left
// out (DroppedBytes; for a lost command, as far as known).
type CommandExitedData struct {
	Common
	CommandID    string `json:"commandId"`
	State        string `json:"state"`
	ExitCode     *int   `json:"exitCode,omitempty"`
	OutputBytes  int64  `json:"outputBytes"`
	DroppedBytes int64  `json:"droppedBytes"`
}

// AutoContinuedData is the payload of session.auto_continued; PromptID
// (in Common) is the continuation's.
type AutoContinuedData struct {
	Common
	ContinuesPromptID string `json:"continuesPromptId"`
	Reason            string `json:"reason"`
}

// RecoveryChangedData is the payload of session.recovery_changed. Recovery
// comes first: the writer compares this Latest event's JSON with the last
// one stored, and payloads stored as maps had their keys sorted.
type RecoveryChangedData struct {
	Recovery recovery.Summary `json:"recovery"`
	Common
}

// SessionClosedData is the payload of session.closed.
type SessionClosedData struct {
	Common
	State session.SessionState `json:"state"`
}

// SessionOptionsChangedData is the payload of session.options_changed:
// the agent's own JSON for each member, absent when the agent never sent it.
type SessionOptionsChangedData struct {
	Common
	CurrentMode       json.RawMessage `json:"currentMode,omitempty"`
	AvailableModes    json.RawMessage `json:"availableModes,omitempty"`
	ConfigOptions     json.RawMessage `json:"configOptions,omitempty"`
	AvailableCommands json.RawMessage `json:"availableCommands,omitempty"`
}

// Task family (task events belong to no session; Common.TaskID names the
// task, and a session that moved its task names itself in SessionID).

// TaskCreatedData is the payload of task.created: the task whole.
type TaskCreatedData struct {
	Common
	Title     string            `json:"title"`
	Workspace string            `json:"workspace,omitempty"`
	State     session.TaskState `json:"state"`
	CreatedAt time.Time         `json:"createdAt"`
}

// TaskUpdatedData is the payload of task.updated (a rename).
type TaskUpdatedData struct {
	Common
	Title string `json:"title"`
}

// TaskStateChangedData is the payload of task.state_changed.
type TaskStateChangedData struct {
	Common
	State         session.TaskState `json:"state"`
	PreviousState session.TaskState `json:"previousState"`
}

// Control frames: stream data, never stored (no Common members).

// ResyncRequiredData is the data of resync_required: the client's cursor
// cannot be served; epoch and cursor say where the log stands.
type ResyncRequiredData struct {
	Reason string `json:"reason"`
	Epoch  string `json:"epoch"`
	Cursor string `json:"cursor"`
}

// ReplayCompleteData is the data of replay_complete: the replay reached
// cursor, live events follow.
type ReplayCompleteData struct {
	Cursor string `json:"cursor"`
}

// StreamLaggedData is the data of stream_lagged: the client fell behind at
// cursor and should reconnect from it.
type StreamLaggedData struct {
	Cursor string `json:"cursor"`
}
