package sessions

import (
	"context"
	"sync"

	"github.com/tether/tether/internal/errcode"
)

// mailbox is an unbounded FIFO of closures run by one goroutine. It is
// unbounded on purpose: agent updates are posted from the SDK's notification
// goroutine, which must never block (a full SDK queue kills the
// connection), and API commands are bounded by their callers anyway.
type mailbox struct {
	mu     sync.Mutex
	q      []func()
	signal chan struct{}
	closed bool
	// done closes with the mailbox: waiters for an outcome the actor can no
	// longer deliver (a start finishing after close) stop waiting.
	done chan struct{}
}

func newMailbox() *mailbox {
	return &mailbox{signal: make(chan struct{}, 1), done: make(chan struct{})}
}

// post enqueues f; it reports false once the mailbox is closed.
func (m *mailbox) post(f func()) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	m.q = append(m.q, f)
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
	return true
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
		for _, f := range batch {
			f()
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
func call[T any](ctx context.Context, m *mailbox, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	var zero T
	if !m.post(func() {
		v, err := f()
		ch <- result{v, err}
	}) {
		return zero, errcode.New(errcode.SessionTerminal, "session is closed")
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}
