package sessions

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// mailbox is the FIFO of closures one actor goroutine runs. It has two
// ways in, and both keep it bounded:
//   - post never blocks. It is for the daemon's own producers, each of
//     which bounds itself: an agent's updates hold one of the agent's
//     update-window credits until their writes commit, the writer's
//     Pending.Then callbacks post at most one closure per write (and the
//     writer's queue is bounded), and the rest (a turn ending, an agent
//     exiting, a timer) post once per thing they own. Those producers must
//     not block: the writer's publisher goroutine would stall every
//     session behind a busy actor (which may itself be waiting for room in
//     the writer's queue: a deadlock), and the ACP reader would kill the
//     connection.
//   - postWait (and call) is for producers that can wait: API requests and
//     an agent's permission requests. At most limit of them are queued;
//     the next one waits, with its context, for one of them to start.
type mailbox struct {
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

// Mailbox defaults: commands queued per session, and how long one waits to
// start before the session counts as overloaded.
const (
	DefaultMailboxLimit = 256
	DefaultBusyTimeout  = 10 * time.Second
)

func newMailbox(limit int, busy time.Duration) *mailbox {
	if limit <= 0 {
		limit = DefaultMailboxLimit
	}
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	return &mailbox{signal: make(chan struct{}, 1), done: make(chan struct{}),
		slots: make(chan struct{}, limit), busy: busy}
}

// post enqueues f without blocking; it reports false once the mailbox is
// closed. Only producers that bound themselves may use it (see mailbox).
func (m *mailbox) post(f func()) bool {
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

// errMailboxClosed is what a command posted to a closed mailbox gets.
var errMailboxClosed = errcode.New(errcode.SessionTerminal, "session is closed")

// postWait enqueues f once fewer than the mailbox's limit of commands wait
// in it, waiting for room until ctx ends or the mailbox closes.
func (m *mailbox) postWait(ctx context.Context, f func()) error {
	select {
	case m.slots <- struct{}{}:
	case <-m.done:
		return errMailboxClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	if !m.post(func() { <-m.slots; f() }) {
		<-m.slots
		return errMailboxClosed
	}
	return nil
}

// close stops accepting work; already queued closures still run.
func (m *mailbox) close() {
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

// run executes closures in order until the mailbox is closed and drained.
func (m *mailbox) run() {
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

// call runs f on the actor goroutine and waits for its result, so that f
// sees and changes the session's state atomically with every other command.
// A session too busy to start f within the mailbox's busy timeout (its
// actor waits for a slow disk, a flood of commands is ahead of it) answers
// session_overloaded, and f then never runs: the caller can tell its
// client that nothing was done. Once f has started, call waits for it with
// ctx alone.
func call[T any](ctx context.Context, m *mailbox, f func() (T, error)) (T, error) {
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
	if err := m.postWait(wait, func() {
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
func overloaded(ctx context.Context, m *mailbox, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errcode.New(errcode.SessionOverloaded,
			"the session is too busy to take the request (it did not start within %s); nothing was done, retry later", m.busy)
	}
	return err
}

// MailboxStats reports, over the live sessions, the most closures one
// actor has queued now and the most one has ever had queued (for /metrics
// and tests). It reads counters only, so an overloaded session cannot slow
// it down.
func (m *Manager) MailboxStats() (longest, peak int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.actors {
		longest = max(longest, int(a.mb.queued.Load()))
		peak = max(peak, int(a.mb.peak.Load()))
	}
	return longest, peak
}
