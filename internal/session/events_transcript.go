package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// transcriptPayloads are this file's types (events.go: payloads).
var transcriptPayloads = []func() EventPayload{
	func() EventPayload { return &MessageAddedData{} },
	func() EventPayload { return &MessageChunkData{} },
	func() EventPayload { return &ToolCallStartedData{} },
	func() EventPayload { return &ToolCallData{} },
	func() EventPayload { return &PlanUpdatedData{} },
	func() EventPayload { return &PermissionRequestedData{} },
	func() EventPayload { return &PermissionResolvedData{} },
}

// The transcript events: messages, tool calls, the plan and permission
// requests (see events.go for what a domain event is).

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

// EventType is message.added.
func (*MessageAddedData) EventType() string { return "message.added" }

// evolve folds MessageAddedData into s (State.Evolve).
func (p *MessageAddedData) evolve(s *State, e Event) error {
	if s.recent && p.PromptID != s.lastStarted {
		return nil
	}
	if _, dup := s.msg[p.MessageID]; dup {
		return fmt.Errorf("message %d added twice", p.MessageID)
	}
	s.msg[p.MessageID] = len(s.Messages)
	s.Messages = append(s.Messages, Message{ID: p.MessageID, SessionID: p.SessionID, PromptID: p.PromptID,
		Role: p.Role, Text: p.Text, Content: p.Content, CreatedAt: p.CreatedAt, UpdatedAt: p.CreatedAt})
	if p.AgentMessageID != "" {
		s.AgentMessageIDs[p.MessageID] = p.AgentMessageID
	}
	return nil
}

// MessageChunkData is the payload of message.chunk: text appended to a message.
type MessageChunkData struct {
	EventCommon
	MessageID int64       `json:"messageId"`
	Role      MessageRole `json:"role"`
	Text      string      `json:"text"`
	// AgentMessageID is the ACP messageId the chunk came with, which the
	// live actor notes (a message begun without one learns it, so the
	// next id tells a new message). Not recorded: the message keeps the
	// id it began with (MessageAddedData.AgentMessageID).
	AgentMessageID string `json:"-"`
}

// EventType is message.chunk.
func (*MessageChunkData) EventType() string { return "message.chunk" }

// evolve folds MessageChunkData into s (State.Evolve).
func (p *MessageChunkData) evolve(s *State, e Event) error {
	i, ok := s.msg[p.MessageID]
	if !ok && s.recent {
		return nil // output of an earlier turn
	}
	if !ok {
		return fmt.Errorf("chunk of message %d, which no message.added started", p.MessageID)
	}
	m := &s.Messages[i]
	// A message streams in thousands of chunks: appending to a
	// string would copy it whole each time. The builder grows in
	// place, and its String shares the bytes.
	b := s.text[m.ID]
	if b == nil {
		b = &strings.Builder{}
		b.WriteString(m.Text)
		s.text[m.ID] = b
	}
	b.WriteString(p.Text)
	m.Text, m.UpdatedAt = b.String(), e.At
	return nil
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
	// CreatedAt is when the call began, on a fork's copy of it (the
	// original's time); absent otherwise: the call began at its first
	// event.
	CreatedAt *time.Time `json:"createdAt,omitempty"`
}

// EventType is tool_call.updated.
func (*ToolCallData) EventType() string { return "tool_call.updated" }

// ToolCallStartedData is the payload of tool_call.started, a tool call's
// first event: the call whole, as ToolCallData.
type ToolCallStartedData struct{ ToolCallData }

// EventType is tool_call.started.
func (*ToolCallStartedData) EventType() string { return "tool_call.started" }

// evolve folds ToolCallData into s (State.Evolve): the tool call its
// turn and id name (ToolCallKey), new or replaced whole.
func (p *ToolCallData) evolve(s *State, e Event) error {
	c := ToolCall{SessionID: p.SessionID, ToolCallID: p.ToolCallID, PromptID: p.PromptID, Title: p.Title,
		Kind: p.Kind, Status: p.Status, Interrupted: p.Interrupted, Content: p.Content, Locations: p.Locations,
		RawInput: p.RawInput, RawOutput: p.RawOutput, CreatedAt: e.At, UpdatedAt: e.At}
	if p.CreatedAt != nil {
		c.CreatedAt = *p.CreatedAt
	}
	k := c.Key()
	if i, ok := s.tool[k]; ok {
		c.CreatedAt = s.ToolCalls[i].CreatedAt
		s.ToolCalls[i] = c
		return nil
	}
	if s.recent && p.PromptID != s.lastStarted {
		return nil // another turn's output (Recent keeps the latest's)
	}
	s.tool[k] = len(s.ToolCalls)
	s.ToolCalls = append(s.ToolCalls, c)
	return nil
}

// PlanUpdatedData is the payload of plan.updated: the agent's plan entries.
type PlanUpdatedData struct {
	EventCommon
	Entries json.RawMessage `json:"entries"`
}

// EventType is plan.updated.
func (*PlanUpdatedData) EventType() string { return "plan.updated" }

// evolve folds PlanUpdatedData into s (State.Evolve).
func (p *PlanUpdatedData) evolve(s *State, e Event) error {
	s.Plan = p.Entries
	return nil
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

// EventType is permission.requested.
func (*PermissionRequestedData) EventType() string { return "permission.requested" }

// OnGlobalStream: permission.requested also goes to GET /events, where the inbox and
// webhooks follow what waits for a person and how turns end.
func (*PermissionRequestedData) OnGlobalStream() {}

// evolve folds PermissionRequestedData into s (State.Evolve).
func (p *PermissionRequestedData) evolve(s *State, e Event) error {
	if _, dup := s.perm[p.RequestID]; dup {
		return fmt.Errorf("permission %s requested twice", p.RequestID)
	}
	s.perm[p.RequestID] = len(s.Permissions)
	s.Permissions = append(s.Permissions, Permission{ID: p.RequestID, SessionID: p.SessionID, PromptID: p.PromptID,
		ToolCallID: p.ToolCallID, Title: p.Title, Options: p.Options, State: PermissionPending, CreatedAt: e.At})
	return nil
}

// PermissionResolvedData is the payload of permission.resolved.
type PermissionResolvedData struct {
	EventCommon
	RequestID string          `json:"requestId"`
	State     PermissionState `json:"state"`
	OptionID  string          `json:"optionId,omitempty"`
}

// EventType is permission.resolved.
func (*PermissionResolvedData) EventType() string { return "permission.resolved" }

// OnGlobalStream: permission.resolved also goes to GET /events, where the inbox and
// webhooks follow what waits for a person and how turns end.
func (*PermissionResolvedData) OnGlobalStream() {}

// evolve folds PermissionResolvedData into s (State.Evolve).
func (p *PermissionResolvedData) evolve(s *State, e Event) error {
	i, ok := s.perm[p.RequestID]
	if !ok && s.recent {
		return nil // answered before the seed, or never pending here
	}
	if !ok {
		return fmt.Errorf("permission %s resolved, never requested", p.RequestID)
	}
	at := e.At
	pm := &s.Permissions[i]
	pm.State, pm.SelectedOptionID, pm.ResolvedAt = p.State, p.OptionID, &at
	if s.recent {
		s.trimPermissions()
	}
	return nil
}
