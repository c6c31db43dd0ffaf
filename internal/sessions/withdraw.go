package sessions

import (
	"context"

	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/session"
)

// Withdraw takes a queued prompt out of the queue before it reaches the
// agent: the turn ends cancelled with stop reason "withdrawn" (event
// turn.cancelled{reason: withdrawn}) and the others keep their order. Only
// a queued turn can be withdrawn: one that runs or ended answers
// turn_not_queued, an unknown prompt id turn_not_found.
func (m *Manager) Withdraw(ctx context.Context, sessionID, promptID string) (session.Turn, error) {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return session.Turn{}, err
	}
	t, err := mailbox.Call(ctx, a.mb, func() (session.Turn, error) { return a.withdraw(promptID) })
	if err != nil {
		return session.Turn{}, err
	}
	return t, a.sync(ctx)
}

func (a *actor) withdraw(promptID string) (session.Turn, error) {
	d := decide(a.viewOf(promptID), withdrawCmd{PromptID: promptID})
	if d.Refusal != nil {
		return session.Turn{}, d.Refusal
	}
	_ = a.perform(d, nil)
	return a.turns[promptID], nil
}
