package sessions

import (
	"context"
	"encoding/json"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// withResumeContext builds the prompt for a turn that owes the resume
// context: the transcript before this turn, then the request itself. It
// runs off the actor, after the turn start is durable.
func (m *Manager) withResumeContext(sessionID string, t session.Turn) (json.RawMessage, error) {
	ctx := context.Background()
	var msgs []session.Message
	var calls []session.ToolCall
	var turns []session.Turn
	err := m.store.Snapshot(ctx, func(r *store.Store) error {
		var err error
		if turns, err = r.ListTurns(ctx, sessionID); err != nil {
			return err
		}
		if msgs, err = r.ListMessages(ctx, sessionID); err != nil {
			return err
		}
		calls, err = r.ListToolCalls(ctx, sessionID)
		return err
	})
	if err != nil {
		return nil, err
	}
	// Neither this turn nor the turns a rewind took back (rewind.go).
	left := map[string]bool{t.PromptID: true}
	for _, x := range turns {
		if x.Rewound {
			left[x.PromptID] = true
		}
	}
	msgs = exceptPrompts(msgs, left, func(m session.Message) string { return m.PromptID })
	calls = exceptPrompts(calls, left, func(c session.ToolCall) string { return c.PromptID })
	history := session.History(msgs, calls)
	if len(history) == 0 {
		return t.Prompt, nil // nothing happened before: nothing to restore
	}
	text := session.ResumeContext(history, promptText(t.Prompt))
	var blocks []map[string]any
	if err := json.Unmarshal(t.Prompt, &blocks); err != nil {
		return nil, err
	}
	out := []map[string]any{{"type": "text", "text": text}}
	for _, b := range blocks {
		if b["type"] != "text" {
			out = append(out, b)
		}
	}
	return json.Marshal(out)
}

func exceptPrompts[T any](xs []T, left map[string]bool, id func(T) string) []T {
	out := xs[:0:0]
	for _, x := range xs {
		if !left[id(x)] {
			out = append(out, x)
		}
	}
	return out
}
