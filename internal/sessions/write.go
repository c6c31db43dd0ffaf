package sessions

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// emit hands events whose rows are their projections (events/project.go)
// to the event writer. It never blocks the actor: they commit in the
// writer's next batch, in submission order. The actor keeps its own copy
// of what it needs, so it never has to read back what it has just written.
func (a *actor) emit(ds ...events.Draft) *events.Pending {
	return a.change(events.Emitted(a.id, ds...))
}

// noID is a change the store cannot take: what it would record needs
// an id the store could not give (NewMessageID failed). It fails like a
// refused write, and the actor recovers as from one (writefail.go).
type noID struct {
	session string
	err     error
}

func (r noID) SessionID() string { return r.session }
func (r noID) Apply(context.Context, *store.Store, events.Emit) error {
	return r.err
}

// queueHeldDraft is session.queue_held.
func (a *actor) queueHeldDraft(held bool) events.Draft {
	return a.draft("", &session.SessionQueueHeldData{Held: held})
}

// deliveredDraft is turn.delivered of turn t as it stands.
func (a *actor) deliveredDraft(t session.Turn) events.Draft {
	return a.draft(t.PromptID, &session.TurnDeliveredData{DeliveredAt: t.DeliveredAt})
}

// change hands a typed change (see changes.go) to the event writer, like
// emit. Should it fail, the actor is told (writeFailed, writefail.go),
// whichever write it is; a request running on the actor (callWrites) also
// waits for it. An actor collecting a batch (a.batch) keeps it there
// instead, and returns nil: whoever set the batch submits it.
func (a *actor) change(c events.Change) *events.Pending {
	if a.recordOffset > 0 {
		c = offsetChange{Change: c, offset: a.recordOffset}
	}
	if a.batch != nil {
		*a.batch = append(*a.batch, c)
		return nil
	}
	p := a.m.w.SubmitUnder(a.lease, c)
	a.noteWrite(p)
	a.last = p
	a.version++
	if a.tracking != nil {
		*a.tracking = append(*a.tracking, p)
	}
	p.Then(func() {
		if err := p.Err(); err != nil {
			a.mb.Post(func() { a.writeFailed(c, err) })
		}
	})
	return p
}

// changeKind names a change for the log.
func changeKind(c events.Change) string { return fmt.Sprintf("%T", c) }

// synced returns the latest submitted write; waiting for it means every
// earlier change of this session is durable and published too.
func (a *actor) synced() *events.Pending { return a.last }

// query answers a read on a's actor once every write the session submitted
// has completed, so what f reads from the store is the log as the actor's
// state stands: one moment for both. The wait is one commit, and the actor
// takes nothing else meanwhile. ok is false when the actor was retired
// before f ran: the caller answers from the store alone. An overloaded
// session answers session_overloaded (ok): the store alone would tell a
// stale story.
func query[T any](ctx context.Context, a *actor, f func() (T, error)) (_ T, ok bool, _ error) {
	var ran atomic.Bool
	v, err := mailbox.Call(ctx, a.mb, func() (T, error) {
		ran.Store(true)
		a.atCommit(ctx)
		return f()
	})
	if ran.Load() || errcode.Is(err, errcode.SessionOverloaded) {
		return v, true, err
	}
	return v, false, nil
}

// atCommit waits, on the actor, until every write the session submitted
// has completed. A failed write leaves the rows as they are, and a read
// after it reads those (the reload after a failure is writefail.go's).
func (a *actor) atCommit(ctx context.Context) {
	if a.last != nil {
		_, _ = a.last.Wait(ctx)
	}
}

// afterRecorded gives back the done of the host record at offset (0: a
// local agent's update) once the write it caused has completed, unless
// that write was refused because this node may no longer write the
// session: its lease lost (or taken again since the actor loaded), the
// daemon stopping, or the database gone past the writer's hold. Done then would acknowledge the record to the host,
// which would drop a record the store does not have, past the offset the
// next owner's attach starts from: lost. Withheld, it stays on the host
// for that attach (as untaken's). Any other failure is the actor's to
// recover from (writefail.go), and its records are acknowledged as
// before: withheld, they would stop the host's stream for good.
func (a *actor) afterRecorded(offset uint64, done func()) {
	p := a.last
	if p == nil || offset == 0 {
		a.afterWrites(done)
		return
	}
	p.Then(func() {
		if err := p.Err(); errcode.Is(err, errcode.SessionLeaseLost) || errcode.Is(err, errcode.ServiceShuttingDown) ||
			errcode.Is(err, errcode.DatabaseUnavailable) {
			return
		}
		done()
	})
}

// afterWrites calls f once every write submitted so far has completed
// (writes complete in submission order, so the latest one stands for all),
// without blocking the actor.
func (a *actor) afterWrites(f func()) {
	if a.last == nil {
		f()
		return
	}
	a.last.Then(f)
}

// draft is an event of this session (promptID "" when no turn is
// involved): the writer puts the session's, its task's and the prompt's ids
// into the payload, and its type is its payload's (EventType).
func (a *actor) draft(promptID string, p session.EventPayload) events.Draft {
	return sessionDraft(a.id, a.sess.TaskID, promptID, p)
}

// sessionDraft is an event of session sessionID of task taskID.
func sessionDraft(sessionID, taskID, promptID string, p session.EventPayload) events.Draft {
	return events.Draft{SessionID: sessionID, TaskID: taskID, Type: p.EventType(), PromptID: promptID, Payload: p}
}
