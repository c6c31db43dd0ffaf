package sessions

import (
	"context"
	"slices"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// A write that fails is never silent. The writer logs and counts it (under
// its session and code) and answers its Pending with the error; the actor
// hears of every failed write of its session (write.go), not only of the
// latest, and then believes the store again: once its writes in flight
// have reported, it reloads the session, executor and turns, and records a
// turn the store still shows running without a live run (its outcome was
// lost) as failed with store_write_failed, so clients see the turn end and
// status and transcript agree. The request that caused a failed write gets
// it as a 5xx problem (callWrites).

// writeFailed is told, on the actor, of one of its writes that failed.
func (a *actor) writeFailed(c events.Change, err error) {
	if errcode.Is(err, errcode.ServiceShuttingDown) {
		return // the writer closed: the next start reconciles from the store
	}
	a.log.Error("a change of this session was not stored; reloading the session from the store",
		"change", changeKind(c), "code", errcode.CodeOf(err), "err", err)
	if a.reloading {
		return
	}
	a.reloading = true
	a.reloadWhenQuiet()
}

// reloadWhenQuiet reloads once every write submitted so far has reported:
// a reload must not read the store while the actor's own changes are still
// on their way to it.
func (a *actor) reloadWhenQuiet() {
	last := a.last
	last.Then(func() {
		a.mb.post(func() {
			if a.last != last {
				a.reloadWhenQuiet() // written since: wait for that too
				return
			}
			a.reloading = false
			a.reload()
		})
	})
}

// reload replaces what the actor believes about the session with what the
// store holds. Live facts (the agent connection, the turn it runs, turns
// whose admission has not reported) stay.
func (a *actor) reload() {
	ctx := a.ctx()
	var sess store.Session
	var exec store.Executor
	var turns []store.Turn
	err := a.m.store.Snapshot(ctx, func(r *store.Store) error {
		var err error
		if sess, err = r.GetSession(ctx, a.id); err != nil {
			return err
		}
		if exec, err = r.GetExecutor(ctx, a.id); err != nil {
			return err
		}
		turns, err = r.ListTurns(ctx, a.id)
		return err
	})
	if err != nil {
		a.log.Error("reloading the session from the store failed", "err", err)
		return
	}
	// Field by field: TaskID and the ids never change, and write closures
	// still read them on the writer goroutine.
	a.sess.State, a.sess.Prompted, a.sess.QueueHeld = sess.State, sess.Prompted, sess.QueueHeld
	a.sess.ContextLost, a.sess.InjectContext, a.sess.Plan = sess.ContextLost, sess.InjectContext, sess.Plan
	a.sess.ModeChoice, a.sess.ConfigChoices = sess.ModeChoice, sess.ConfigChoices
	a.exec = exec

	running := ""
	if a.running != nil {
		running = a.running.turn.PromptID
		// The open message may be the one whose insert failed: the next
		// chunk starts a new message rather than naming a missing one.
		a.running.openMsg = 0
	}
	kept := map[string]store.Turn{}
	var queue, lost []store.Turn
	for _, t := range turns {
		switch {
		case t.PromptID == running:
			kept[t.PromptID] = a.turns[t.PromptID] // the live run knows best
		case t.State == store.TurnQueued:
			kept[t.PromptID] = t
			queue = append(queue, t)
		case t.State == store.TurnRunning:
			kept[t.PromptID] = t
			lost = append(lost, t)
		default:
			kept[t.PromptID] = t
		}
		if len(a.admitting) == 0 {
			a.lastPromptID = t.PromptID // turns come in seq order
		}
	}
	for id := range a.admitting {
		if t, ok := a.turns[id]; ok {
			kept[id] = t
			if _, stored := indexOf(queue, id); !stored && slices.ContainsFunc(a.queue, func(q store.Turn) bool { return q.PromptID == id }) {
				queue = append(queue, t)
			}
		}
	}
	a.turns, a.queue = kept, queue
	// Each repair is tried once: should the store still refuse it (a full
	// disk), reloading again must not loop on the same writes.
	repaired := false
	for _, t := range lost {
		repaired = a.recordLostOutcome(t) || repaired
	}
	switch {
	case a.running != nil || a.sess.State != store.SessionRunning:
		delete(a.repairs, repairState)
	case !a.repairs[repairState]:
		a.repairs[repairState] = true
		a.setState(store.SessionWaitingForInput)
		repaired = true
	}
	if repaired {
		a.pushRecovery()
	}
	a.startNext()
}

// repairState is the repairs key of a session state the store still shows
// RUNNING although no turn runs.
const repairState = "state"

// recordLostOutcome ends a turn whose outcome could not be stored as
// failed with store_write_failed: the agent is done with it, and clients
// waiting for it must see it end. It is tried once per turn (false: tried
// before); should that write fail too, the turn stays for start-up
// reconciliation.
func (a *actor) recordLostOutcome(t store.Turn) bool {
	if a.repairs["turn:"+t.PromptID] {
		return false
	}
	a.repairs["turn:"+t.PromptID] = true
	now := time.Now().UTC()
	t.State, t.EndedAt = store.TurnFailed, &now
	t.ErrorCode = string(errcode.StoreWriteFailed)
	t.ErrorMessage = "the turn's outcome could not be stored; see the daemon log"
	a.turns[t.PromptID] = t
	a.change(turnEnded{TaskID: a.sess.TaskID, Turn: t})
	return true
}

func indexOf(turns []store.Turn, promptID string) (int, bool) {
	i := slices.IndexFunc(turns, func(t store.Turn) bool { return t.PromptID == promptID })
	return i, i >= 0
}

// callWrites runs f on the actor like call, then waits until every write f
// submitted is durable, and fails with the first of them that failed: the
// request that caused a change is never told it succeeded when it was not
// stored.
func callWrites[T any](ctx context.Context, a *actor, f func() (T, error)) (T, error) {
	type out struct {
		v      T
		writes []*events.Pending
	}
	o, err := call(ctx, a.mb, func() (out, error) {
		var writes []*events.Pending
		a.tracking = &writes
		defer func() { a.tracking = nil }()
		v, err := f()
		return out{v, writes}, err
	})
	if err != nil {
		return o.v, err
	}
	for _, p := range o.writes {
		if _, err := p.Wait(ctx); err != nil {
			return o.v, err
		}
	}
	return o.v, nil
}
