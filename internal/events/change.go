package events

import (
	"context"
	"sync"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Draft is an event before the writer numbers it.
type Draft struct {
	SessionID string
	// TaskID names the task the event is about ("" for none).
	TaskID   string
	Type     string
	PromptID string
	// Payload is a session.EventPayload (a pointer to one of the domain
	// events of internal/session, events.go) or a
	// map; the writer adds sessionId, taskId and promptId to either where
	// it leaves them out.
	Payload any
	// Latest marks an event that states the current value of something
	// (the recovery summary): it is dropped when its payload equals the
	// session's last event of the same type. The writer decides it inside
	// the transaction, so a batch redone after a failure decides the same.
	Latest bool
	// Copied marks an event that copies another session's (a fork's
	// transcript, sessions.forkCopy): a turn's end then leaves the
	// session's search index alone, and the fork's session.forked, after
	// the copy, indexes it once (a copy of n turns would rewrite the
	// index n times).
	Copied bool
	// HostOffset, when not 0, commits a hosted session's host record with
	// the event (store.Event.HostOffset). Never on a Latest draft, which
	// may be dropped.
	HostOffset uint64
}

// Emit records a draft inside an Apply function.
type Emit func(Draft)

// Apply changes transcript rows inside the batch transaction and emits the
// events that describe those changes. It runs on the writer goroutine, after
// every Apply submitted before it, so it sees their writes. Like a Change
// it may run twice (see Change); prefer a Change for new writes.
type Apply func(tx *store.Store, emit Emit) error

// Change is a typed write: a value the writer applies inside its batch
// transaction, after every change submitted before it (so it sees their
// writes). The rules that keep group commit safe:
//   - Apply may run more than once: when another change of its batch fails,
//     the batch is rolled back and each change is redone in a transaction of
//     its own. Apply must therefore read only its own fields and the
//     transaction, and change nothing outside the transaction (no captured
//     variables, no actor state): its effects on the owner come back through
//     the Pending once it has committed.
//   - Ids are generated before submission, so a redo writes the same rows.
//   - ctx is the writer's own: a request that goes away stops waiting for
//     the Pending but cannot fail the batch its change is in.
type Change interface {
	// SessionID names the session the change belongs to ("" for none):
	// a failure is logged and counted under it.
	SessionID() string
	// Apply writes the change's rows and emits the events describing them.
	Apply(ctx context.Context, tx *store.Store, emit Emit) error
}

// Func adapts an Apply closure of a session to a Change. The closure must
// follow Change's rules itself; new writes should be typed changes.
func Func(sessionID string, apply Apply) Change { return funcChange{sessionID, apply} }

type funcChange struct {
	session string
	apply   Apply
}

func (f funcChange) SessionID() string { return f.session }
func (f funcChange) Apply(_ context.Context, tx *store.Store, emit Emit) error {
	return f.apply(tx, emit)
}

// Emitted is a change that only emits events: the rows they change are
// their projections (project.go), written with them.
func Emitted(sessionID string, ds ...Draft) Change { return emitted{sessionID, ds} }

type emitted struct {
	session string
	drafts  []Draft
}

func (e emitted) SessionID() string { return e.session }
func (e emitted) Apply(_ context.Context, _ *store.Store, emit Emit) error {
	for _, d := range e.drafts {
		emit(d)
	}
	return nil
}

type op struct {
	change Change
	p      *Pending
	// gen is the session's lease generation it was submitted under
	// (Cluster only; 0: none known).
	gen int64
}

// Pending is a submitted op; it completes once the op is committed and its
// events published (or it failed).
type Pending struct {
	done   chan struct{}
	err    error
	events []store.Event
	// doms are events' domain payloads, index for index (nil for a map
	// payload): what a session actor folds (Committed) without decoding.
	doms []session.EventPayload

	mu       sync.Mutex
	finished bool
	then     []func()
}

func newPending() *Pending { return &Pending{done: make(chan struct{})} }

// finishWith completes a committed op with its events and their domain
// payloads.
func (p *Pending) finishWith(evs []store.Event, doms []session.EventPayload) {
	p.doms = doms
	p.finish(evs, nil)
}

func (p *Pending) finish(evs []store.Event, err error) {
	p.events, p.err = evs, err
	p.mu.Lock()
	p.finished = true
	then := p.then
	p.then = nil
	p.mu.Unlock()
	close(p.done)
	for _, f := range then {
		f()
	}
}

// Then calls f once the op has completed, committed or failed: at once if
// it has, else on the writer's publisher goroutine right after it is
// published. f must not block (it would stall every session's writes); it
// is meant for releasing a credit or signalling a channel with room.
func (p *Pending) Then(f func()) {
	p.mu.Lock()
	if !p.finished {
		p.then = append(p.then, f)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	f()
}

// Committed calls f, once Done has closed, with each of the op's committed
// events of session sessionID as a domain event, in log order (none if it
// failed). The payloads are the ones the writer encoded: read them, never
// change them. It allocates nothing: an actor folds every write's events.
func (p *Pending) Committed(sessionID string, f func(session.Event)) {
	for i, e := range p.events {
		if e.SessionID == sessionID && e.Seq > 0 && p.doms[i] != nil {
			f(session.Event{Seq: e.Seq, At: e.Time, Payload: p.doms[i]})
		}
	}
}

// Done closes when the op has completed.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Err is the op's error once Done has closed (nil before, and on success).
// A Then callback may read it: it runs after the outcome is set.
func (p *Pending) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Wait blocks until the op completes and returns its events (numbered, in
// order) or its error. Any number of goroutines may wait.
func (p *Pending) Wait(ctx context.Context) ([]store.Event, error) {
	if p == nil {
		return nil, nil // nothing was submitted
	}
	select {
	case <-p.done:
		return p.events, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
