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
	err := m.store.Snapshot(ctx, func(r *store.Store) error {
		var err error
		if msgs, err = r.ListMessages(ctx, sessionID); err != nil {
			return err
		}
		calls, err = r.ListToolCalls(ctx, sessionID)
		return err
	})
	if err != nil {
		return nil, err
	}
	msgs = exceptPrompt(msgs, t.PromptID, func(m session.Message) string { return m.PromptID })
	calls = exceptPrompt(calls, t.PromptID, func(c session.ToolCall) string { return c.PromptID })
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

func exceptPrompt[T any](xs []T, promptID string, id func(T) string) []T {
	out := xs[:0:0]
	for _, x := range xs {
		if id(x) != promptID {
			out = append(out, x)
		}
	}
	return out
}
