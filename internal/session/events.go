package session

import (
	"encoding/json"
	"time"
)

// The domain events: the data of each event type of a session's log, one
// per `*Data` schema of api/openapi.yaml (the JSON tags are the contract's
// member names; server tests check every frame against the contract).
// Members always present in the contract's examples have no omitempty;
// optional ones do. Emit a pointer (`&session.TurnStartedData{...}`): the
// event writer (internal/events) fills the EventCommon members from the
// Draft.

// EventCommon holds the members every event payload may carry. The writer sets
// sessionId, taskId and promptId from the Draft when the payload leaves
// them empty, so emit sites name them once, on the Draft.
type EventCommon struct {
	SessionID string `json:"sessionId,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
	PromptID  string `json:"promptId,omitempty"`
}

// Base returns the common members, for the writer to fill.
func (c *EventCommon) Base() *EventCommon { return c }

// EventPayload is a typed event payload: a pointer to one of this file's types
// (they embed EventCommon).
type EventPayload interface{ Base() *EventCommon }

// Session family.

// SessionCreatedData is the payload of session.created.
type SessionCreatedData struct {
	EventCommon
	AgentProfileID string       `json:"agentProfileId"`
	Cwd            string       `json:"cwd"`
	State          SessionState `json:"state"`
	Title          string       `json:"title"`
	EventEpoch     string       `json:"eventEpoch"`
}

// SessionStateChangedData is the payload of session.state_changed.
type SessionStateChangedData struct {
	EventCommon
	State         SessionState `json:"state"`
	PreviousState SessionState `json:"previousState"`
}

// ExecutorStatusData is the payload of session.executor_status.
type ExecutorStatusData struct {
	EventCommon
	Status           ExecutorStatus `json:"status"`
	Runtime          Runtime        `json:"runtime"`
	Host             string         `json:"host,omitempty"`
	PID              int            `json:"pid,omitempty"`
	Error            string         `json:"error,omitempty"`
	ErrorCode        string         `json:"errorCode,omitempty"`
	ExitCode         *int           `json:"exitCode,omitempty"`
	ExitSignal       string         `json:"exitSignal,omitempty"`
	AgentExecutionID string         `json:"agentExecutionId,omitempty"`
}

// SessionResumedData is the payload of session.resumed.
type SessionResumedData struct {
	EventCommon
	Strategy        string `json:"strategy"`
	ContextRestored bool   `json:"contextRestored"`
	FallbackReason  string `json:"fallbackReason,omitempty"`
}

// Context is what a restore left the session owing its agent: the
// resume context once (inject: history injection) or nothing it can give
// (lost: neither native nor injected, the agent has no history).
func (d *SessionResumedData) Context() (inject, lost bool) {
	inject = d.Strategy == StrategyHistoryInjection
	return inject, !d.ContextRestored && !inject
}

// Restore strategies, as session.resumed reports them.
const (
	StrategyNativeResume     = "native_resume"
	StrategyNativeLoad       = "native_load"
	StrategyHistoryInjection = "history_injection"
	StrategyFresh            = "fresh"
)

// CommandStartedData is the payload of command.started.
type CommandStartedData struct {
	EventCommon
	CommandID string `json:"commandId"`
	Command   string `json:"command"`
}

// CommandOutputData is the payload of command.output.
type CommandOutputData struct {
	EventCommon
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
	EventCommon
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
	EventCommon
	CommandID    string `json:"commandId"`
	State        string `json:"state"`
	ExitCode     *int   `json:"exitCode,omitempty"`
	OutputBytes  int64  `json:"outputBytes"`
	DroppedBytes int64  `json:"droppedBytes"`
}

// AutoContinuedData is the payload of session.auto_continued; PromptID
// (in EventCommon) is the continuation's.
type AutoContinuedData struct {
	EventCommon
	ContinuesPromptID string `json:"continuesPromptId"`
	Reason            string `json:"reason"`
}

// RecoveryChangedData is the payload of session.recovery_changed. Recovery
// comes first: the writer compares this Latest event's JSON with the last
// one stored, and payloads stored as maps had their keys sorted.
type RecoveryChangedData struct {
	Recovery Recovery `json:"recovery"`
	EventCommon
}

// SessionClosedData is the payload of session.closed.
type SessionClosedData struct {
	EventCommon
	State SessionState `json:"state"`
}

// SessionOptionsChangedData is the payload of session.options_changed:
// the agent's own JSON for each member, absent when the agent never sent it.
type SessionOptionsChangedData struct {
	EventCommon
	CurrentMode       json.RawMessage `json:"currentMode,omitempty"`
	AvailableModes    json.RawMessage `json:"availableModes,omitempty"`
	ConfigOptions     json.RawMessage `json:"configOptions,omitempty"`
	AvailableCommands json.RawMessage `json:"availableCommands,omitempty"`
}

// SessionChoicesChangedData is the payload of session.choices_changed:
// the mode and config option values the user chose, which every later
// start of the agent applies again.
type SessionChoicesChangedData struct {
	EventCommon
	ModeChoice    string          `json:"modeChoice,omitempty"`
	ConfigChoices json.RawMessage `json:"configChoices,omitempty"`
}

// Task family (task events belong to no session; Common.TaskID names the
// task, and a session that moved its task names itself in SessionID).

// TaskCreatedData is the payload of task.created: the task whole.
type TaskCreatedData struct {
	EventCommon
	Title     string    `json:"title"`
	Workspace string    `json:"workspace,omitempty"`
	State     TaskState `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
}

// TaskUpdatedData is the payload of task.updated (a rename).
type TaskUpdatedData struct {
	EventCommon
	Title string `json:"title"`
}

// TaskStateChangedData is the payload of task.state_changed.
type TaskStateChangedData struct {
	EventCommon
	State         TaskState `json:"state"`
	PreviousState TaskState `json:"previousState"`
}

// Turn family: a turn's promptId is the Draft's PromptID.

// TurnQueuedData is the payload of turn.queued.
type TurnQueuedData struct {
	EventCommon
	Kind              TurnKind        `json:"kind"`
	Seq               int64           `json:"seq"`
	Prompt            json.RawMessage `json:"prompt"`
	ContinuesPromptID string          `json:"continuesPromptId,omitempty"`
	// Interruption is a continue turn's recovery summary (JSON) as it was
	// admitted.
	Interruption json.RawMessage `json:"interruption,omitempty"`
}

// TurnStartedData is the payload of turn.started.
type TurnStartedData struct {
	EventCommon
	Kind      TurnKind  `json:"kind"`
	StartedAt time.Time `json:"startedAt"`
	// ContextInjected: the prompt carries the resume context (history
	// injection), which the session owed its agent once.
	ContextInjected bool `json:"contextInjected,omitempty"`
}

// TurnCompletedData is the payload of turn.completed.
type TurnCompletedData struct {
	EventCommon
	State      TurnState  `json:"state"`
	EndedAt    *time.Time `json:"endedAt"`
	StopReason string     `json:"stopReason"`
}

// TurnFailedData is the payload of turn.failed.
type TurnFailedData struct {
	EventCommon
	State   TurnState  `json:"state"`
	EndedAt *time.Time `json:"endedAt"`
	Code    string     `json:"code"`
	Message string     `json:"message"`
}

// TurnCancelledData is the payload of turn.cancelled. Reason "withdrawn"
// marks a queued prompt its client withdrew.
type TurnCancelledData struct {
	EventCommon
	State      TurnState  `json:"state"`
	EndedAt    *time.Time `json:"endedAt"`
	StopReason string     `json:"stopReason,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	// CancelRequested: the user's cancel ended it (a queued turn the
	// cancel dropped).
	CancelRequested bool `json:"cancelRequested,omitempty"`
}

// TurnInterruptedData is the payload of turn.interrupted.
type TurnInterruptedData struct {
	EventCommon
	State             TurnState          `json:"state"`
	EndedAt           *time.Time         `json:"endedAt"`
	Reason            string             `json:"reason"`
	DanglingToolCalls []DanglingToolCall `json:"danglingToolCalls"`
	ExitCode          *int               `json:"exitCode,omitempty"`
	ExitSignal        string             `json:"exitSignal,omitempty"`
	// Code and Message say what else is known of the interruption:
	// host_outbox_damaged when the executor host found the session's
	// outbox damaged (some of the turn's output is lost).
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// TurnDeliveredData is the payload of turn.delivered: whether the turn's
// prompt reached the agent (DeliveredAt nil: a native load showed it did
// not, correcting an earlier record).
type TurnDeliveredData struct {
	EventCommon
	DeliveredAt *time.Time `json:"deliveredAt"`
}

// TurnCancelRequestedData is the payload of turn.cancel_requested: the
// user asked to cancel the running turn.
type TurnCancelRequestedData struct {
	EventCommon
}

// TurnWorkspaceChangesData is the payload of turn.workspace_changes: what
// the executor found changed since the interrupted turn's checkpoint.
type TurnWorkspaceChangesData struct {
	EventCommon
	Changes WorkspaceChanges `json:"changes"`
}

// SessionQueueHeldData is the payload of session.queue_held: whether the
// queued turns wait for the user (see PlanInput.QueueHeld).
type SessionQueueHeldData struct {
	EventCommon
	Held bool `json:"held"`
}

// Message family.

// MessageAddedData is the payload of message.added: a new transcript message.
type MessageAddedData struct {
	EventCommon
	MessageID int64           `json:"messageId"`
	Role      MessageRole     `json:"role"`
	Text      string          `json:"text"`
	CreatedAt time.Time       `json:"createdAt"`
	Content   json.RawMessage `json:"content,omitempty"`
	// AgentMessageID is the agent's ACP messageId of the message, if it
	// sent one: the log keeps it so that a daemon that takes a running
	// turn up again (a detached re-attach) still tells the agent's next
	// message from the one it was writing.
	AgentMessageID string `json:"agentMessageId,omitempty"`
	// Closes names the message this one ends (0: none known), whose
	// streamed chunks the projection folds into its row without reading
	// which message was open. It is a hint to the projection, not part of
	// the event: the log does not keep it.
	Closes int64 `json:"-"`
}

// MessageChunkData is the payload of message.chunk: text appended to a message.
type MessageChunkData struct {
	EventCommon
	MessageID int64       `json:"messageId"`
	Role      MessageRole `json:"role"`
	Text      string      `json:"text"`
}

// Tool call and plan family.

// ToolCallData is the payload of tool_call.started and tool_call.updated:
// the tool call whole, its ACP members as the agent sent them.
type ToolCallData struct {
	EventCommon
	ToolCallID  string          `json:"toolCallId"`
	Title       string          `json:"title"`
	Kind        string          `json:"kind"`
	Status      ToolCallStatus  `json:"status"`
	Interrupted bool            `json:"interrupted"`
	Content     json.RawMessage `json:"content,omitempty"`
	Locations   json.RawMessage `json:"locations,omitempty"`
	RawInput    json.RawMessage `json:"rawInput,omitempty"`
	RawOutput   json.RawMessage `json:"rawOutput,omitempty"`
}

// PlanUpdatedData is the payload of plan.updated: the agent's plan entries.
type PlanUpdatedData struct {
	EventCommon
	Entries json.RawMessage `json:"entries"`
}

// Permission family.

// PermissionRequestedData is the payload of permission.requested.
type PermissionRequestedData struct {
	EventCommon
	RequestID  string          `json:"requestId"`
	ToolCallID string          `json:"toolCallId"`
	Title      string          `json:"title"`
	Options    json.RawMessage `json:"options"`
}

// PermissionResolvedData is the payload of permission.resolved.
type PermissionResolvedData struct {
	EventCommon
	RequestID string          `json:"requestId"`
	State     PermissionState `json:"state"`
	OptionID  string          `json:"optionId,omitempty"`
}
