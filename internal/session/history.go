package session

// What a session needs after its agent was lost: the resume context that
// gives a fresh agent the conversation so far (history injection) and the
// history export; the recovery planner is recovery.go.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Truncation limits of the resume context (DESIGN.md section 4), and
// its whole history's budget: beyond MaxHistoryChars the oldest entries
// are left out (a line says how many), so a long session's hand-off or
// fork briefs the new agent with its latest work, not its context
// window's worth of the first.
const (
	MaxMessageChars    = 2000
	MaxToolResultChars = 500
	MaxHistoryChars    = 100_000
)

// HistoryEntryType names one line of the exported history.
type HistoryEntryType string

// History entry types, as exported in JSONL.
const (
	EntryUserMessage  HistoryEntryType = "user_message"
	EntryAgentMessage HistoryEntryType = "agent_message"
	EntryToolCall     HistoryEntryType = "tool_call"
	EntryToolResult   HistoryEntryType = "tool_result"
)

// HistoryEntry is one step of a session's history in conversation order.
type HistoryEntry struct {
	Type     HistoryEntryType `json:"type"`
	PromptID string           `json:"promptId,omitempty"`
	Text     string           `json:"text,omitempty"`
	// ToolCallID, Name and Status describe tool entries.
	ToolCallID string    `json:"toolCallId,omitempty"`
	Name       string    `json:"name,omitempty"`
	Status     string    `json:"status,omitempty"`
	Time       time.Time `json:"time"`
}

// History orders a transcript into entries: user and agent messages, each
// tool call followed by its result. Thoughts and system notices are not
// conversation and are left out.
func History(msgs []Message, calls []ToolCall) []HistoryEntry {
	var out []HistoryEntry
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			out = append(out, HistoryEntry{Type: EntryUserMessage, PromptID: m.PromptID, Text: m.Text, Time: m.CreatedAt})
		case RoleAgent:
			out = append(out, HistoryEntry{Type: EntryAgentMessage, PromptID: m.PromptID, Text: m.Text, Time: m.CreatedAt})
		}
	}
	for _, c := range calls {
		out = append(out, HistoryEntry{Type: EntryToolCall, PromptID: c.PromptID, ToolCallID: c.ToolCallID, Name: toolName(c), Time: c.CreatedAt})
		if c.Status == ToolCompleted || c.Status == ToolFailed {
			out = append(out, HistoryEntry{Type: EntryToolResult, PromptID: c.PromptID, ToolCallID: c.ToolCallID, Name: toolName(c),
				Status: string(c.Status), Text: toolText(c.Content), Time: c.UpdatedAt})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

func toolName(c ToolCall) string {
	if c.Title != "" {
		return c.Title
	}
	if c.Kind != "" {
		return c.Kind
	}
	return c.ToolCallID
}

// toolText extracts the text of ACP tool call content (text blocks, diffs).
func toolText(raw json.RawMessage) string {
	var items []struct {
		Type    string `json:"type"`
		Path    string `json:"path"`
		NewText string `json:"newText"`
		Content struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return ""
	}
	var parts []string
	for _, it := range items {
		switch {
		case it.Type == "content" && it.Content.Type == "text":
			parts = append(parts, it.Content.Text)
		case it.Type == "diff":
			parts = append(parts, "diff of "+it.Path+":\n"+it.NewText)
		}
	}
	return strings.Join(parts, "\n")
}

// ResumeContext wraps the prompt being sent with the conversation so far,
// so an agent that lost its session can continue it. It is injected once.
func ResumeContext(history []HistoryEntry, current string) string {
	var b strings.Builder
	b.WriteString("RESUME CONTEXT FOR CONTINUING TASK\n\n=== EXECUTION HISTORY ===\n")
	lines := make([]string, 0, len(history))
	for _, e := range history {
		switch e.Type {
		case EntryUserMessage:
			lines = append(lines, fmt.Sprintf("[USER]: %s\n", truncate(e.Text, MaxMessageChars)))
		case EntryAgentMessage:
			lines = append(lines, fmt.Sprintf("[ASSISTANT]: %s\n", truncate(e.Text, MaxMessageChars)))
		case EntryToolCall:
			lines = append(lines, fmt.Sprintf("[TOOL CALL: %s]\n", e.Name))
		case EntryToolResult:
			lines = append(lines, fmt.Sprintf("[TOOL RESULT: %s] %s\n", e.Name, truncate(e.Text, MaxToolResultChars)))
		}
	}
	from, size := len(lines), 0
	for from > 0 && size+len(lines[from-1]) <= MaxHistoryChars {
		from--
		size += len(lines[from])
	}
	if from > 0 {
		fmt.Fprintf(&b, "(%d earlier entries left out: over the history budget of %d characters)\n", from, MaxHistoryChars)
	}
	for _, l := range lines[from:] {
		b.WriteString(l)
	}
	b.WriteString("\n=== CURRENT REQUEST ===\n")
	b.WriteString(current)
	b.WriteString("\n\n=== INSTRUCTIONS ===\n")
	b.WriteString("You are continuing work on the above task. The history above is what happened before your session was restarted.\n")
	b.WriteString("Do not repeat work that was already completed.\n")
	return b.String()
}

// truncate cuts s to max runes, marking the cut.
func truncate(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max]) + "… [truncated]"
}
