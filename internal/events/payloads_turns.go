package events

import (
	"encoding/json"
	"time"

	"github.com/tether/tether/internal/session"
)

// Turn family: a turn's promptId is the Draft's PromptID.

// TurnQueuedData is the payload of turn.queued.
type TurnQueuedData struct {
	Common
	Kind              session.TurnKind `json:"kind"`
	Seq               int64            `json:"seq"`
	Prompt            json.RawMessage  `json:"prompt"`
	ContinuesPromptID string           `json:"continuesPromptId,omitempty"`
}

// TurnStartedData is the payload of turn.started.
type TurnStartedData struct {
	Common
	Kind      session.TurnKind `json:"kind"`
	StartedAt time.Time        `json:"startedAt"`
}

// TurnCompletedData is the payload of turn.completed.
type TurnCompletedData struct {
	Common
	State      session.TurnState `json:"state"`
	EndedAt    *time.Time        `json:"endedAt"`
	StopReason string            `json:"stopReason"`
}

// TurnFailedData is the payload of turn.failed.
type TurnFailedData struct {
	Common
	State   session.TurnState `json:"state"`
	EndedAt *time.Time        `json:"endedAt"`
	Code    string            `json:"code"`
	Message string            `json:"message"`
}

// TurnCancelledData is the payload of turn.cancelled. Reason "withdrawn"
// marks a queued prompt its client withdrew.
type TurnCancelledData struct {
	Common
	State      session.TurnState `json:"state"`
	EndedAt    *time.Time        `json:"endedAt"`
	StopReason string            `json:"stopReason,omitempty"`
	Reason     string            `json:"reason,omitempty"`
}

// TurnInterruptedData is the payload of turn.interrupted.
type TurnInterruptedData struct {
	Common
	State             session.TurnState  `json:"state"`
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

// DanglingToolCall is a tool call an interrupted turn left without outcome.
type DanglingToolCall struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Kind  string `json:"kind"`
}

// Message family.

// MessageAddedData is the payload of message.added: a new transcript message.
type MessageAddedData struct {
	Common
	MessageID int64               `json:"messageId"`
	Role      session.MessageRole `json:"role"`
	Text      string              `json:"text"`
	CreatedAt time.Time           `json:"createdAt"`
	Content   json.RawMessage     `json:"content,omitempty"`
	// AgentMessageID is the agent's ACP messageId of the message, if it
	// sent one: the log keeps it so that a daemon that takes a running
	// turn up again (a detached re-attach) still tells the agent's next
	// message from the one it was writing.
	AgentMessageID string `json:"agentMessageId,omitempty"`
}

// MessageChunkData is the payload of message.chunk: text appended to a message.
type MessageChunkData struct {
	Common
	MessageID int64               `json:"messageId"`
	Role      session.MessageRole `json:"role"`
	Text      string              `json:"text"`
}

// Tool call and plan family.

// ToolCallData is the payload of tool_call.started and tool_call.updated:
// the tool call whole, its ACP members as the agent sent them.
type ToolCallData struct {
	Common
	ToolCallID  string                 `json:"toolCallId"`
	Title       string                 `json:"title"`
	Kind        string                 `json:"kind"`
	Status      session.ToolCallStatus `json:"status"`
	Interrupted bool                   `json:"interrupted"`
	Content     json.RawMessage        `json:"content,omitempty"`
	Locations   json.RawMessage        `json:"locations,omitempty"`
	RawInput    json.RawMessage        `json:"rawInput,omitempty"`
	RawOutput   json.RawMessage        `json:"rawOutput,omitempty"`
}

// PlanUpdatedData is the payload of plan.updated: the agent's plan entries.
type PlanUpdatedData struct {
	Common
	Entries json.RawMessage `json:"entries"`
}

// Permission family.

// PermissionRequestedData is the payload of permission.requested.
type PermissionRequestedData struct {
	Common
	RequestID  string          `json:"requestId"`
	ToolCallID string          `json:"toolCallId"`
	Title      string          `json:"title"`
	Options    json.RawMessage `json:"options"`
}

// PermissionResolvedData is the payload of permission.resolved.
type PermissionResolvedData struct {
	Common
	RequestID string                  `json:"requestId"`
	State     session.PermissionState `json:"state"`
	OptionID  string                  `json:"optionId,omitempty"`
}
