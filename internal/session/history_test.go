package session_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tether/tether/internal/session"
)

const truncMarker = "… [truncated]"

func textContent(s string) json.RawMessage {
	raw, _ := json.Marshal([]map[string]any{{"type": "content", "content": map[string]any{"type": "text", "text": s}}})
	return raw
}

func TestHistoryOrderAndFiltering(t *testing.T) {
	msgs := []session.Message{
		{PromptID: "p1", Role: session.RoleUser, Text: "build it", CreatedAt: at(0)},
		{PromptID: "p1", Role: session.RoleThought, Text: "thinking", CreatedAt: at(1)},
		{PromptID: "p1", Role: session.RoleAgent, Text: "done", CreatedAt: at(9)},
		{PromptID: "p1", Role: session.RoleSystem, Text: "Turn interrupted", CreatedAt: at(10)},
		{PromptID: "p2", Role: session.RoleUser, Text: "again", CreatedAt: at(11)},
	}
	calls := []session.ToolCall{
		{ToolCallID: "tc2", PromptID: "p1", Title: "Edit main.go", Kind: "edit", Status: session.ToolInProgress, CreatedAt: at(6), UpdatedAt: at(7)},
		{ToolCallID: "tc1", PromptID: "p1", Title: "Run make", Kind: "execute", Status: session.ToolCompleted,
			Content: textContent("ok"), CreatedAt: at(2), UpdatedAt: at(5)},
		{ToolCallID: "tc3", PromptID: "p1", Kind: "fetch", Status: session.ToolFailed, Interrupted: true,
			Content: textContent("Tool execution result was not recorded"), CreatedAt: at(3), UpdatedAt: at(8)},
		{ToolCallID: "tc4", PromptID: "p1", Status: session.ToolPending, CreatedAt: at(4), UpdatedAt: at(4)},
	}
	got := session.History(msgs, calls)
	want := []session.HistoryEntry{
		{Type: session.EntryUserMessage, PromptID: "p1", Text: "build it", Time: at(0)},
		{Type: session.EntryToolCall, PromptID: "p1", ToolCallID: "tc1", Name: "Run make", Time: at(2)},
		{Type: session.EntryToolCall, PromptID: "p1", ToolCallID: "tc3", Name: "fetch", Time: at(3)},
		{Type: session.EntryToolCall, PromptID: "p1", ToolCallID: "tc4", Name: "tc4", Time: at(4)},
		{Type: session.EntryToolResult, PromptID: "p1", ToolCallID: "tc1", Name: "Run make", Status: "completed", Text: "ok", Time: at(5)},
		{Type: session.EntryToolCall, PromptID: "p1", ToolCallID: "tc2", Name: "Edit main.go", Time: at(6)},
		{Type: session.EntryToolResult, PromptID: "p1", ToolCallID: "tc3", Name: "fetch", Status: "failed",
			Text: "Tool execution result was not recorded", Time: at(8)},
		{Type: session.EntryAgentMessage, PromptID: "p1", Text: "done", Time: at(9)},
		{Type: session.EntryUserMessage, PromptID: "p2", Text: "again", Time: at(11)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("History:\n got %+v\nwant %+v", got, want)
	}
	for _, e := range got {
		if strings.Contains(e.Text, "thinking") || strings.Contains(e.Text, "Turn interrupted") {
			t.Errorf("thought or system message in history: %+v", e)
		}
	}
}

func TestHistoryEqualTimesKeepMessagesBeforeToolCalls(t *testing.T) {
	msgs := []session.Message{
		{PromptID: "p1", Role: session.RoleUser, Text: "u", CreatedAt: at(1)},
		{PromptID: "p1", Role: session.RoleAgent, Text: "a", CreatedAt: at(1)},
	}
	calls := []session.ToolCall{{ToolCallID: "tc", PromptID: "p1", Title: "T", Status: session.ToolCompleted, CreatedAt: at(1), UpdatedAt: at(1)}}
	got := session.History(msgs, calls)
	var types []session.HistoryEntryType
	for _, e := range got {
		types = append(types, e.Type)
	}
	want := []session.HistoryEntryType{session.EntryUserMessage, session.EntryAgentMessage, session.EntryToolCall, session.EntryToolResult}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("order with equal times = %v, want %v (stable)", types, want)
	}
}

func TestHistoryToolText(t *testing.T) {
	content := json.RawMessage(`[
		{"type":"content","content":{"type":"text","text":"line one"}},
		{"type":"content","content":{"type":"image","data":"xx"}},
		{"type":"diff","path":"/w/main.go","oldText":"a","newText":"b"},
		{"type":"terminal","terminalId":"t1"}
	]`)
	got := session.History(nil, []session.ToolCall{{ToolCallID: "tc", Title: "T", Status: session.ToolCompleted, Content: content, UpdatedAt: at(1)}})
	if len(got) != 2 || got[1].Type != session.EntryToolResult {
		t.Fatalf("entries = %+v", got)
	}
	if want := "line one\ndiff of /w/main.go:\nb"; got[1].Text != want {
		t.Errorf("tool result text = %q, want %q", got[1].Text, want)
	}
	bad := session.History(nil, []session.ToolCall{{ToolCallID: "tc", Status: session.ToolFailed, Content: json.RawMessage(`{"not":"array"}`)}})
	if len(bad) != 2 || bad[1].Text != "" {
		t.Errorf("malformed content should give an empty result text: %+v", bad)
	}
}

func TestResumeContextTemplate(t *testing.T) {
	h := session.History(
		[]session.Message{
			{PromptID: "p1", Role: session.RoleUser, Text: "build it", CreatedAt: at(0)},
			{PromptID: "p1", Role: session.RoleAgent, Text: "built", CreatedAt: at(5)},
		},
		[]session.ToolCall{{ToolCallID: "tc1", PromptID: "p1", Title: "Run make", Status: session.ToolCompleted,
			Content: textContent("ok"), CreatedAt: at(1), UpdatedAt: at(2)}})
	out := session.ResumeContext(h, "now test it")

	if !strings.HasPrefix(out, "RESUME CONTEXT FOR CONTINUING TASK\n") {
		t.Errorf("does not start with the title line:\n%s", out)
	}
	lines := strings.Split(out, "\n")
	index := func(line string) int {
		for i, l := range lines {
			if l == line {
				return i
			}
		}
		return -1
	}
	order := []string{
		"RESUME CONTEXT FOR CONTINUING TASK",
		"=== EXECUTION HISTORY ===",
		"[USER]: build it",
		"[TOOL CALL: Run make]",
		"[TOOL RESULT: Run make] ok",
		"[ASSISTANT]: built",
		"=== CURRENT REQUEST ===",
		"now test it",
		"=== INSTRUCTIONS ===",
		"Do not repeat work that was already completed.",
	}
	prev := -1
	for _, l := range order {
		i := index(l)
		if i < 0 {
			t.Errorf("line %q missing (exact, whole line):\n%s", l, out)
			continue
		}
		if i <= prev {
			t.Errorf("line %q out of order:\n%s", l, out)
		}
		prev = i
	}
	for _, heading := range []string{"RESUME CONTEXT FOR CONTINUING TASK", "=== EXECUTION HISTORY ===", "=== CURRENT REQUEST ===", "=== INSTRUCTIONS ==="} {
		if n := strings.Count(out, heading); n != 1 {
			t.Errorf("heading %q appears %d times", heading, n)
		}
	}

	empty := session.ResumeContext(nil, "hello")
	for _, l := range []string{"=== EXECUTION HISTORY ===", "=== CURRENT REQUEST ===", "hello", "=== INSTRUCTIONS ==="} {
		if !strings.Contains(empty, l) {
			t.Errorf("empty history: %q missing:\n%s", l, empty)
		}
	}
}

func TestResumeContextTruncation(t *testing.T) {
	// Multi-byte runes: the limits count characters, not bytes.
	long := func(keep, extra int) string { return strings.Repeat("é", keep) + strings.Repeat("Ω", extra) }
	cases := []struct {
		name   string
		entry  session.HistoryEntry
		prefix string
		limit  int
	}{
		{"user_message", session.HistoryEntry{Type: session.EntryUserMessage}, "[USER]: ", session.MaxMessageChars},
		{"agent_message", session.HistoryEntry{Type: session.EntryAgentMessage}, "[ASSISTANT]: ", session.MaxMessageChars},
		{"tool_result", session.HistoryEntry{Type: session.EntryToolResult, Name: "Run"}, "[TOOL RESULT: Run] ", session.MaxToolResultChars},
	}
	if session.MaxMessageChars != 2000 || session.MaxToolResultChars != 500 {
		t.Fatalf("limits = %d/%d, want 2000/500", session.MaxMessageChars, session.MaxToolResultChars)
	}
	for _, tc := range cases {
		t.Run(tc.name+"_over_limit", func(t *testing.T) {
			e := tc.entry
			e.Text = long(tc.limit, 10)
			out := session.ResumeContext([]session.HistoryEntry{e}, "cur")
			wantLine := tc.prefix + strings.Repeat("é", tc.limit) + truncMarker + "\n"
			if !strings.Contains(out, wantLine) {
				t.Errorf("want the first %d characters followed by %q", tc.limit, truncMarker)
			}
			if strings.Contains(out, "Ω") {
				t.Errorf("text beyond %d characters leaked into the context", tc.limit)
			}
		})
		t.Run(tc.name+"_at_limit", func(t *testing.T) {
			e := tc.entry
			e.Text = long(tc.limit, 0)
			out := session.ResumeContext([]session.HistoryEntry{e}, "cur")
			if !strings.Contains(out, tc.prefix+e.Text+"\n") || strings.Contains(out, truncMarker) {
				t.Errorf("text of exactly %d characters must be kept whole and unmarked", tc.limit)
			}
		})
	}
	t.Run("current_request_is_not_truncated", func(t *testing.T) {
		cur := long(5000, 0)
		out := session.ResumeContext(nil, cur)
		if !strings.Contains(out, cur) || strings.Contains(out, truncMarker) {
			t.Errorf("the current request must be sent whole")
		}
	})
	t.Run("tool_call_names_only", func(t *testing.T) {
		out := session.ResumeContext([]session.HistoryEntry{{Type: session.EntryToolCall, Name: "Run make"}}, "cur")
		if !strings.Contains(out, "[TOOL CALL: Run make]\n") {
			t.Errorf("tool call line missing:\n%s", out)
		}
	})
}
