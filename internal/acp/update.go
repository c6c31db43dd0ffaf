package acp

import (
	"encoding/json"

	sdk "github.com/coder/acp-go-sdk"
)

// UpdateKind is the ACP sessionUpdate discriminator of an Update.
type UpdateKind string

// The session/update kinds the daemon records. Anything else is ignored.
const (
	UpdateUserMessage       UpdateKind = "user_message_chunk"
	UpdateAgentMessage      UpdateKind = "agent_message_chunk"
	UpdateAgentThought      UpdateKind = "agent_thought_chunk"
	UpdateToolCall          UpdateKind = "tool_call"
	UpdateToolCallUpdate    UpdateKind = "tool_call_update"
	UpdatePlan              UpdateKind = "plan"
	UpdateAvailableCommands UpdateKind = "available_commands_update"
	UpdateCurrentMode       UpdateKind = "current_mode_update"
	UpdateConfigOptions     UpdateKind = "config_option_update"
	UpdateSessionInfo       UpdateKind = "session_info_update"
	UpdateUsage             UpdateKind = "usage_update"
)

// UpdateLateEnd is no ACP kind: an executor host's lost agent is handed
// no more updates after it (internal/executor delivers it at the agent's
// exit record, in order after what the agent sent while its host was
// unreachable), so its session can close that late output: what the
// agent left unfinished then never finishes.
const UpdateLateEnd UpdateKind = "tether_late_end"

// Update is one session/update notification in the daemon's terms.
type Update struct {
	SessionID string
	Kind      UpdateKind
	// Text is the text of a message/thought chunk's text block.
	Text string
	// Block is a chunk's content block when it is not plain text.
	Block json.RawMessage
	// MessageID is a chunk's ACP messageId ("" when the agent sent none):
	// chunks sharing it belong to one message, a change starts the next.
	MessageID string
	// Tool is set for tool_call and tool_call_update.
	Tool *ToolCall
	// Data carries the payload of the other kinds: plan entries, the
	// command list, the mode id, config options, session info, usage.
	Data json.RawMessage
	// Offset is the update's position in its executor host's outbox for
	// the session (internal/hostproto), 0 for an agent that is the
	// daemon's own child. The daemon stores it with what it commits for
	// the update, so that a replay after a restart skips what it has.
	Offset uint64
}

// ToolCall is a tool call start or update; nil/empty fields were not sent.
type ToolCall struct {
	ID        string
	Title     *string
	Kind      *string
	Status    *string
	Content   json.RawMessage
	Locations json.RawMessage
	RawInput  json.RawMessage
	RawOutput json.RawMessage
}

// translate converts an SDK notification. The SDK decodes an unknown
// sessionUpdate kind as whichever variant has matching fields, so each
// variant's own discriminator is checked: an unknown kind yields ok=false
// instead of being misfiled.
func translate(n sdk.SessionNotification) (Update, bool) {
	u := Update{SessionID: string(n.SessionId)}
	s := n.Update
	switch {
	case s.UserMessageChunk != nil && s.UserMessageChunk.SessionUpdate == string(UpdateUserMessage):
		u.Kind = UpdateUserMessage
		u.Text, u.Block = chunk(s.UserMessageChunk.Content)
		u.MessageID = deref(s.UserMessageChunk.MessageId)
	case s.AgentMessageChunk != nil && s.AgentMessageChunk.SessionUpdate == string(UpdateAgentMessage):
		u.Kind = UpdateAgentMessage
		u.Text, u.Block = chunk(s.AgentMessageChunk.Content)
		u.MessageID = deref(s.AgentMessageChunk.MessageId)
		if usage, ok := s.AgentMessageChunk.Meta["usage"]; ok && u.Text == "" && u.Block == nil {
			// qwen reports each model call's tokens so, on an empty
			// chunk (_meta.usage, in ACP's Usage terms): a usage report,
			// like the one a prompt's answer carries.
			u.Kind, u.Data = UpdateUsage, marshalAny(map[string]any{"sessionUpdate": string(UpdateUsage), "used": 0, "size": 0,
				"_meta": map[string]any{PromptUsageMeta: usage}})
		}
	case s.AgentThoughtChunk != nil && s.AgentThoughtChunk.SessionUpdate == string(UpdateAgentThought):
		u.Kind = UpdateAgentThought
		u.Text, u.Block = chunk(s.AgentThoughtChunk.Content)
		u.MessageID = deref(s.AgentThoughtChunk.MessageId)
	case s.ToolCall != nil && s.ToolCall.SessionUpdate == string(UpdateToolCall):
		t := s.ToolCall
		u.Kind = UpdateToolCall
		title := t.Title
		u.Tool = &ToolCall{ID: string(t.ToolCallId), Title: &title,
			Content: marshalNonEmpty(t.Content), Locations: marshalNonEmpty(t.Locations),
			RawInput: marshalAny(t.RawInput), RawOutput: marshalAny(t.RawOutput)}
		if t.Kind != "" {
			k := string(t.Kind)
			u.Tool.Kind = &k
		}
		st := string(t.Status)
		if st == "" {
			st = "pending"
		}
		u.Tool.Status = &st
	case s.ToolCallUpdate != nil && s.ToolCallUpdate.SessionUpdate == string(UpdateToolCallUpdate):
		t := s.ToolCallUpdate
		u.Kind = UpdateToolCallUpdate
		u.Tool = &ToolCall{ID: string(t.ToolCallId), Title: t.Title,
			Content: marshalNonEmpty(t.Content), Locations: marshalNonEmpty(t.Locations),
			RawInput: marshalAny(t.RawInput), RawOutput: marshalAny(t.RawOutput)}
		if t.Kind != nil {
			k := string(*t.Kind)
			u.Tool.Kind = &k
		}
		if t.Status != nil {
			st := string(*t.Status)
			u.Tool.Status = &st
		}
	case s.Plan != nil && s.Plan.SessionUpdate == string(UpdatePlan):
		u.Kind = UpdatePlan
		entries := s.Plan.Entries
		if entries == nil {
			entries = []sdk.PlanEntry{}
		}
		u.Data = marshalAny(entries)
	case s.AvailableCommandsUpdate != nil && s.AvailableCommandsUpdate.SessionUpdate == string(UpdateAvailableCommands):
		u.Kind = UpdateAvailableCommands
		u.Data = marshalAny(s.AvailableCommandsUpdate.AvailableCommands)
	case s.CurrentModeUpdate != nil && s.CurrentModeUpdate.SessionUpdate == string(UpdateCurrentMode):
		u.Kind = UpdateCurrentMode
		u.Data = marshalAny(s.CurrentModeUpdate.CurrentModeId)
	case s.ConfigOptionUpdate != nil && s.ConfigOptionUpdate.SessionUpdate == string(UpdateConfigOptions):
		u.Kind = UpdateConfigOptions
		u.Data = marshalAny(s.ConfigOptionUpdate.ConfigOptions)
	case s.SessionInfoUpdate != nil && s.SessionInfoUpdate.SessionUpdate == string(UpdateSessionInfo):
		u.Kind = UpdateSessionInfo
		u.Data = marshalAny(s.SessionInfoUpdate)
	case s.UsageUpdate != nil && s.UsageUpdate.SessionUpdate == string(UpdateUsage):
		u.Kind = UpdateUsage
		u.Data = marshalAny(s.UsageUpdate)
	default:
		return Update{}, false
	}
	return u, true
}

// chunk splits a content block into its text (for aggregation) or, for
// images, resources and the like, the block itself.
func chunk(b sdk.ContentBlock) (string, json.RawMessage) {
	if b.Text != nil {
		return b.Text.Text, nil
	}
	return "", marshalAny(b)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func marshalAny(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

func marshalNonEmpty[T any](v []T) json.RawMessage {
	if len(v) == 0 {
		return nil
	}
	return marshalAny(v)
}
