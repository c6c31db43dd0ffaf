package sessions

import (
	"context"
	"slices"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/recovery"
	"github.com/tether/tether/internal/store"
)

// Withdraw takes a queued prompt out of the queue before it reaches the
// agent: the turn ends cancelled with stop reason "withdrawn" (event
// turn.cancelled{reason: withdrawn}) and the others keep their order. Only
// a queued turn can be withdrawn: one that runs or ended answers
// turn_not_queued, an unknown prompt id turn_not_found.
func (m *Manager) Withdraw(ctx context.Context, sessionID, promptID string) (store.Turn, error) {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return store.Turn{}, err
	}
	t, err := call(ctx, a.mb, func() (store.Turn, error) { return a.withdraw(promptID) })
	if err != nil {
		return store.Turn{}, err
	}
	return t, a.sync(ctx)
}

func (a *actor) withdraw(promptID string) (store.Turn, error) {
	t, ok := a.turns[promptID]
	if !ok {
		return store.Turn{}, errcode.New(errcode.TurnNotFound, "session has no turn %q", promptID).With("promptId", promptID)
	}
	i := slices.IndexFunc(a.queue, func(q store.Turn) bool { return q.PromptID == promptID })
	if i < 0 {
		return store.Turn{}, errcode.New(errcode.TurnNotQueued, "turn %q is %s; only a queued turn can be withdrawn", promptID, t.State).
			With("promptId", promptID).With("state", string(t.State))
	}
	// A turn whose admission is still being written ends after it: writes
	// apply in submission order, so the end always follows the row.
	a.queue = slices.Delete(a.queue, i, i+1)
	a.endTurn(t, store.TurnCancelled, func(t *store.Turn) { t.StopReason = recovery.Withdrawn })
	if len(a.queue) == 0 {
		a.releaseHeld()
	}
	a.startNext()
	return a.turns[promptID], nil
}

// releaseHeld clears a hold whose queue is gone (cancelled or withdrawn),
// so that a later queue runs as usual.
func (a *actor) releaseHeld() {
	if !a.sess.QueueHeld {
		return
	}
	a.sess.QueueHeld = false
	a.write(func(tx *store.Store, emit events.Emit) error { return tx.SetSessionQueueHeld(a.ctx(), a.id, false) })
	a.pushRecovery()
}
