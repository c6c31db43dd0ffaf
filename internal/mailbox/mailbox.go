// Package mailbox runs closures one at a time on one goroutine, in the
// order they came: the actor of a live session (internal/sessions) owns
// its state by running every command and every report about it here.
package mailbox

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// Mailbox is the FIFO of closures one actor goroutine runs. It has two
// ways in, and both keep it bounded:
//   - Post never blocks. It is for the daemon's own producers, each of
//     which bounds itself: an agent's updates hold one of the agent's
//     update-window credits until their writes commit, the writer's
//     Pending.Then callbacks post at most one closure per write (and the
//     writer's queue is bounded), and the rest (a turn ending, an agent
//     exiting, a timer) post once per thing they own. Those producers must
//     not block: the writer's publisher goroutine would stall every
//     session behind a busy actor (which may itself be waiting for room in
//     the writer's queue: a deadlock), and the ACP reader would kill the
//     connection.
//   - PostWait (and Call) is for producers that can wait: API requests and
//     an agent's permission requests. At most limit of them are queued;
//     the next one waits, with its context, for one of them to start.
type Mailbox struct {
	mu     sync.Mutex
	q      []func()
	signal chan struct{}
	closed bool
	// done closes with the mailbox: waiters for an outcome the actor can no
	// longer deliver (a start finishing after close) stop waiting.
	done chan struct{}
	// slots holds one token per closure queued by postWait and not yet
	// started; its capacity is the mailbox's limit.
	slots chan struct{}
	// busy bounds how long call waits for its closure to start before it
	// answers session_overloaded.
	busy time.Duration
	// queued counts closures posted and not yet run, and peak is the most
	// there have been (for /metrics and tests).
	queued, peak atomic.Int64
}

// Done closes with the mailbox: waiters for an outcome its actor can no
// longer deliver stop waiting.
func (m *Mailbox) Done() <-chan struct{} { return m.done }

// Queued is how many closures are posted and not yet run.
func (m *Mailbox) Queued() int64 { return m.queued.Load() }

// Peak is the most closures ever queued at once.
func (m *Mailbox) Peak() int64 { return m.peak.Load() }

// Mailbox defaults: commands queued per session, and how long one waits to
// start before the session counts as overloaded.
const (
	DefaultLimit       = 256
	DefaultBusyTimeout = 10 * time.Second
)

// New returns an open mailbox: at most limit closures wait in PostWait
// (DefaultLimit when 0), and Call waits busy for its closure to start
// (DefaultBusyTimeout when 0).
func New(limit int, busy time.Duration) *Mailbox {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	return &Mailbox{signal: make(chan struct{}, 1), done: make(chan struct{}),
		slots: make(chan struct{}, limit), busy: busy}
}

// Post enqueues f without blocking; it reports false once the mailbox is
// closed. Only producers that bound themselves may use it (see Mailbox).
func (m *Mailbox) Post(f func()) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	m.q = append(m.q, f)
	if n := m.queued.Add(1); n > m.peak.Load() {
		m.peak.Store(n) // under mu: no lost update
	}
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
	return true
}

// ErrClosed is what a command posted to a closed mailbox gets.
var ErrClosed = errcode.New(errcode.SessionTerminal, "session is closed")

// PostWait enqueues f once fewer than the mailbox's limit of commands wait
// in it, waiting for room until ctx ends or the mailbox closes.
func (m *Mailbox) PostWait(ctx context.Context, f func()) error {
	select {
	case m.slots <- struct{}{}:
	case <-m.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	if !m.Post(func() { <-m.slots; f() }) {
		<-m.slots
		return ErrClosed
	}
	return nil
}

// Close stops accepting work; already queued closures still run.
func (m *Mailbox) Close() {
	m.mu.Lock()
	if !m.closed {
		close(m.done)
	}
	m.closed = true
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// Run executes closures in order until the mailbox is closed and drained.
func (m *Mailbox) Run() {
	for {
		m.mu.Lock()
		batch := m.q
		m.q = nil
		closed := m.closed
		m.mu.Unlock()
		for i, f := range batch {
			batch[i] = nil // what ran is garbage now, not after the batch
			f()
			m.queued.Add(-1)
		}
		if len(batch) == 0 {
			if closed {
				return
			}
			<-m.signal
		}
	}
}

// Call runs f on the actor goroutine and waits for its result, so that f
// sees and changes the session's state atomically with every other command.
// A session too busy to start f within the mailbox's busy timeout (its
// actor waits for a slow disk, a flood of commands is ahead of it) answers
// session_overloaded, and f then never runs: the caller can tell its
// client that nothing was done. Once f has started, call waits for it with
// ctx alone.
func Call[T any](ctx context.Context, m *Mailbox, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	var zero T
	wait, cancel := context.WithTimeout(ctx, m.busy)
	defer cancel()
	// claim decides, once, whether f runs (the actor got to it first) or
	// not (the caller gave up first).
	var claim atomic.Bool
	started := make(chan struct{})
	ch := make(chan result, 1)
	if err := m.PostWait(wait, func() {
		if !claim.CompareAndSwap(false, true) {
			return
		}
		close(started)
		v, err := f()
		ch <- result{v, err}
	}); err != nil {
		return zero, overloaded(ctx, m, err)
	}
	select {
	case <-started:
	case <-wait.Done():
		if claim.CompareAndSwap(false, true) {
			return zero, overloaded(ctx, m, wait.Err())
		}
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// overloaded names why a command did not start: the caller's own context
// ended, the session closed, or the session stayed busy past its timeout.
func overloaded(ctx context.Context, m *Mailbox, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errcode.New(errcode.SessionOverloaded,
			"the session is too busy to take the request (it did not start within %s); nothing was done, retry later", m.busy)
	}
	return err
}
