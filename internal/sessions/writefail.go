package sessions

import (
	"context"
	"reflect"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// A write that fails is never silent. The writer logs and counts it (under
// its session and code) and answers its Pending with the error; the actor
// hears of every failed write of its session (write.go), not only of the
// latest, and then believes the store again: once its writes in flight
// have reported, it reloads the session, executor and turns, and records
// what the live session lived through that the store lacks: a turn the
// store still shows running without a live run (its outcome was lost)
// fails with store_write_failed, so clients see the turn end and status
// and transcript agree; a permission request no agent waits on any more
// is closed as the actor closed it; an executor status whose write was
// refused (an exit, a stop) is recorded again from the actor's own record
// of the executor (decideWriteFailed and decideReloaded decide, in
// decide_lifecycle.go; this file reads the store and performs). Should
// the store refuse those writes too, the next reload waits a backoff, which doubles up to a cap and is reset once a reload's
// writes are stored: the repairs are tried again until the store takes
// them, one reload pending at a time, never faster than the backoff. The
// request that caused a failed write gets it as a 5xx problem
// (callWrites).

// writeFailed is told, on the actor, of one of its writes that failed
// (decideWriteFailed). A permission outcome it carried is kept for the
// reload to record again.
func (a *actor) writeFailed(c events.Change, err error) {
	if o, ok := c.(offsetChange); ok {
		c = o.Change
	}
	if r, ok := c.(permissionResolved); ok {
		a.unresolved[r.RequestID] = r.End
	}
	a.failed(writeFailedInput{Change: changeKind(c), Err: err, ShuttingDown: errcode.Is(err, errcode.ServiceShuttingDown)})
}

// failed counts a failure that a reload must follow (a write's, or a
// reload's own read), logs it (a failed write is never silent) and
// performs what decideWriteFailed decides.
func (a *actor) failed(in writeFailedInput) {
	a.failures++
	switch {
	case in.ShuttingDown:
	case in.Change != "":
		a.log.Error("a change of this session was not stored; reloading the session from the store",
			"change", in.Change, "code", errcode.CodeOf(in.Err), "err", in.Err)
	default:
		a.log.Error("reloading the session from the store failed; trying again", "err", in.Err)
	}
	_ = a.perform(decide(a.view(), in), nil)
}

// reloadWhenQuiet reloads once every write submitted so far has reported:
// a reload must not read the store while the actor's own changes are still
// on their way to it.
func (a *actor) reloadWhenQuiet() {
	a.reloading = true
	last := a.last
	last.Then(func() {
		a.mb.Post(func() {
			if a.last != last {
				a.reloadWhenQuiet() // written since: wait for that too
				return
			}
			a.reloading = false
			a.reload()
		})
	})
}

// reload reads the session, executor and turns back from the store and
// believes them, as decideReloaded decides: live facts (the agent
// connection, the turn it runs, turns whose admission has not reported,
// the permission requests an agent waits on) stay, and what the store
// lacks of them is recorded.
func (a *actor) reload() {
	select {
	case <-a.mb.Done():
		// Retired (closed, dropped, or shut down) and draining: whatever
		// takes the session up next repairs it (takeUp, reconcile.go),
		// and two repairing at once would record a turn's end twice.
		return
	default:
	}
	ctx := a.ctx()
	var sess session.Session
	var exec session.Executor
	var turns []session.Turn
	var state *session.State
	var gap string
	err := a.m.store.Snapshot(ctx, func(r *store.Store) error {
		var err error
		if sess, err = r.GetSession(ctx, a.id); err != nil {
			return err
		}
		if exec, err = r.GetExecutor(ctx, a.id); err != nil {
			return err
		}
		if turns, err = r.ListTurns(ctx, a.id); err != nil {
			return err
		}
		// The log's state again, from the rows the failed write left.
		state, gap, err = seedState(ctx, r, a.m.history, sess, turns)
		return err
	})
	if err != nil {
		a.failed(writeFailedInput{Err: err})
		return
	}
	in := reloadedInput{State: sess.State, Turns: make([]storedTurn, len(turns)), ExecutorLacks: executorLacks(a.exec, exec)}
	for i, t := range turns {
		in.Turns[i] = storedTurn{PromptID: t.PromptID, State: t.State}
	}
	unresolved := a.unresolved
	a.unresolved = map[string]permissionEnd{} // what the store no longer holds pending is forgotten
	for _, p := range state.PendingPermissions() {
		_, live := a.perms[p.ID]
		_, held := a.hostPending[p.ID]
		sp := storedPermission{ID: p.ID, Live: live || held}
		if end, ok := unresolved[p.ID]; ok {
			sp.End = &end
		}
		in.Pending = append(in.Pending, sp)
	}
	// Decided on what is live; performed on what the store holds, which
	// the actor believes first: the repairs fold on top of it.
	v := a.view()
	d := decide(v, in)
	running, admitting := "", []string(nil)
	if v.Running != nil {
		running = v.Running.PromptID
	}
	for _, q := range v.Queue {
		if q.Admitting {
			admitting = append(admitting, q.PromptID)
		}
	}
	a.believe(sess, exec, turns, storedQueue(v.State.Terminal() || sess.State.Terminal(), running, in.Turns, admitting))
	if a.state != nil {
		// Seeded already: the writes in flight fold on top of the rows
		// this reload read. Not seeded yet: it stays so, and the first
		// read seeds it.
		a.foldCommitted()
		a.state, a.gap = state, gap
	}
	_ = a.perform(d, nil)
	a.watchRepairs()
}

// executorLacks reports whether the executor row stored differs from the
// actor's own record of it (live) in what session.executor_status records
// (session.ExecutorStatusOf), the row's projection: the actor alone
// writes them, so one of its writes was refused. When the agent was last
// seen is kept in memory between writes, and a reconnecting executor's
// latest reason is not recorded (HostUnreachable): neither counts.
func executorLacks(live, stored session.Executor) bool {
	norm := func(e session.Executor) session.Executor {
		e = session.ExecutorStatusOf(e).Executor()
		e.SessionID, e.LastSeenAt = "", nil
		if e.Status == session.ExecutorReconnecting {
			e.ErrorMessage, e.ErrorCode = "", ""
		}
		return e
	}
	return !reflect.DeepEqual(norm(live), norm(stored))
}

// watchRepairs resets the backoff once every write the session has
// submitted (the reload's repairs last) is stored with no write failing
// meanwhile: the store takes the session's writes again. A failure is
// told (writeFailed) before this check runs: writes report in order, and
// each write's own callback comes first.
func (a *actor) watchRepairs() {
	last, failures := a.last, a.failures
	if last == nil {
		a.backoff = 0
		return
	}
	last.Then(func() {
		a.mb.Post(func() {
			if a.failures == failures && !a.reloading {
				a.backoff = 0
			}
		})
	})
}

// believe replaces what the actor believes about the session with what
// the store holds (reload), but for the live facts: the running turn
// and turns being admitted stay as the actor has them.
func (a *actor) believe(sess session.Session, exec session.Executor, turns []session.Turn, queue []string) {
	// Field by field: TaskID and the ids never change, and write closures
	// still read them on the writer goroutine.
	a.sess.TakeLogged(sess)
	a.exec = exec
	a.hostTop = max(a.hostTop, exec.HostOffset)
	running := ""
	if a.running != nil {
		running = a.running.turn.PromptID
		// The open message may be the one whose insert failed: the next
		// chunk starts a new message rather than naming a missing one.
		a.running.openMsg = 0
	}
	kept := make(map[string]session.Turn, len(turns))
	storedQueued := map[string]session.Turn{}
	for _, t := range turns {
		kept[t.PromptID] = t
		if t.State == session.TurnQueued && t.PromptID != running {
			storedQueued[t.PromptID] = t
		}
		if len(a.admitting) == 0 {
			a.lastPromptID = t.PromptID // turns come in seq order
		}
	}
	if running != "" {
		if _, ok := kept[running]; ok {
			kept[running] = a.turns[running] // the live run knows best
		}
	}
	for id := range a.admitting {
		if t, ok := a.turns[id]; ok {
			kept[id] = t
		}
	}
	a.queue = make([]session.Turn, 0, len(queue))
	for _, id := range queue {
		if t, ok := storedQueued[id]; ok {
			a.queue = append(a.queue, t) // as stored
		} else {
			a.queue = append(a.queue, kept[id]) // still being admitted: as the actor has it
		}
	}
	a.turns = kept
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
	o, err := mailbox.Call(ctx, a.mb, func() (out, error) {
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
