package onetruth_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/internal/onetruth"
	"github.com/tether/tether/internal/session"
)

// diffBase is a small state with one of each record.
func diffBase() *session.State {
	at := time.Unix(10, 0)
	return &session.State{
		Session: session.Session{ID: "s", TaskID: "t", State: session.SessionWaitingForInput, CreatedAt: at},
		Turns: []session.Turn{
			{SessionID: "s", PromptID: "p1", Seq: 1, State: session.TurnCompleted, Prompt: json.RawMessage(`[{"type":"text","text":"hi"}]`), StartedAt: &at, EndedAt: &at, DeliveredAt: &at},
			{SessionID: "s", PromptID: "p2", Seq: 2, State: session.TurnQueued},
		},
		Messages:    []session.Message{{ID: 1, SessionID: "s", PromptID: "p1", Role: session.RoleAgent, Text: "hello"}},
		ToolCalls:   []session.ToolCall{{SessionID: "s", PromptID: "p1", ToolCallID: "tc", Status: session.ToolCompleted}},
		Permissions: []session.Permission{{ID: "r", SessionID: "s", PromptID: "p1", State: session.PermissionPending}},
		Plan:        json.RawMessage(`[{"content":"a","status":"pending"}]`),
	}
}

func TestDiff(t *testing.T) {
	cases := []struct {
		name   string
		change func(s *session.State)
		want   []string
	}{
		{"the same state", func(*session.State) {}, nil},
		{"times and rows-only fields are left out", func(s *session.State) {
			later := time.Unix(99, 0)
			s.Turns[0].StartedAt, s.Turns[0].EndedAt = &later, &later
			s.Session.CreatedAt, s.Session.Prompted, s.Turns[0].Interruption = later, true, json.RawMessage(`{}`)
		}, nil},
		{"the log's flags", func(s *session.State) {
			s.Session.QueueHeld, s.Turns[0].CancelRequested = true, true
			s.Turns[0].DeliveredAt = nil
		}, []string{"session queueHeld: log false, served true", "turn p1 delivered: log true, served false",
			"turn p1 cancelRequested: log false, served true"}},
		{"JSON compares as values", func(s *session.State) {
			s.Turns[0].Prompt = json.RawMessage(`[ {"text":"hi", "type":"text"} ]`)
			s.Messages[0].Content = json.RawMessage(`null`)
		}, nil},
		{"a turn's state", func(s *session.State) { s.Turns[0].State = session.TurnRunning },
			[]string{"turn p1 state: log completed, served running"}},
		{"a turn that never ended", func(s *session.State) { s.Turns[0].EndedAt = nil },
			[]string{"turn p1 ended: log true, served false"}},
		{"a message's text", func(s *session.State) { s.Messages[0].Text = "hell" },
			[]string{`message 1 text: log "hello", served "hell"`}},
		{"a message missing", func(s *session.State) { s.Messages = nil },
			[]string{"message 1: in the log, not served"}},
		{"a tool call the log lacks", func(s *session.State) {
			s.ToolCalls = append(s.ToolCalls, session.ToolCall{SessionID: "s", PromptID: "p1", ToolCallID: "x"})
		}, []string{"tool call p1/x: served, not in the log"}},
		{"the same tool call id in another turn", func(s *session.State) {
			s.ToolCalls = append(s.ToolCalls, session.ToolCall{SessionID: "s", PromptID: "p2", ToolCallID: "tc", Status: session.ToolCompleted})
		}, []string{"tool call p2/tc: served, not in the log"}},
		{"turns out of order", func(s *session.State) { s.Turns[0], s.Turns[1] = s.Turns[1], s.Turns[0] },
			[]string{"turn order: log [p1 p2], served [p2 p1]"}},
		{"a permission resolved", func(s *session.State) { s.Permissions[0].State = session.PermissionExpired },
			[]string{"permission r state: log pending, served expired"}},
		{"the plan", func(s *session.State) { s.Plan = nil },
			[]string{`plan: log [{"content":"a","status":"pending"}], served `}},
		{"the session's state", func(s *session.State) { s.Session.State = session.SessionRunning },
			[]string{"session state: log WAITING_FOR_INPUT, served RUNNING"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			served := diffBase()
			tc.change(served)
			if got := onetruth.Diff(diffBase(), served); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
