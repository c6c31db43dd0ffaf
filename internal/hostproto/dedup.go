package hostproto

import (
	"container/list"
	"context"
	"sync"

	"github.com/tether/tether/internal/errcode"
)

// Dedup applies each command id once. The daemon resends a command whose
// result it did not receive (the connection broke, it restarted); the host
// runs each through Do, so the resent copy gets the first one's result
// instead of creating a second session or sending a prompt twice.
//
// It remembers the results of the last N commands that finished (least
// recently used evicted first) plus every command still running, which is
// never evicted: a retry arriving while the first copy runs waits for its
// result. A retry of an id evicted long ago is applied again, so N must
// cover the commands a daemon can send between a break and its retry.
// Safe for concurrent use.
type Dedup struct {
	mu      sync.Mutex
	cap     int
	done    *list.List // of *dedupEntry, finished, most recent first
	entries map[string]*dedupEntry
}

type dedupEntry struct {
	id       string
	finished chan struct{} // closed once res is set
	res      CommandResult
	elem     *list.Element // in done; nil while running
}

// NewDedup returns a Dedup remembering the last n finished commands (n ≥ 1).
func NewDedup(n int) *Dedup {
	return &Dedup{cap: max(n, 1), done: list.New(), entries: make(map[string]*dedupEntry)}
}

// Do returns the result of the command id: apply's, called now, if id is
// new (applied is then true), else the result of its first application,
// waiting for it if that is still running. The returned result's ID is id.
// An error is only ctx's, while waiting. If apply panics the waiters get an
// internal error, the id is forgotten (its effect is unknown), and the
// panic goes on.
func (d *Dedup) Do(ctx context.Context, id string, apply func() CommandResult) (res CommandResult, applied bool, err error) {
	d.mu.Lock()
	if e, ok := d.entries[id]; ok {
		if e.elem != nil {
			d.done.MoveToFront(e.elem)
			res := e.res
			d.mu.Unlock()
			return res, false, nil
		}
		d.mu.Unlock()
		select {
		case <-e.finished:
			return e.res, false, nil
		case <-ctx.Done():
			return CommandResult{}, false, ctx.Err()
		}
	}
	e := &dedupEntry{id: id, finished: make(chan struct{})}
	d.entries[id] = e
	d.mu.Unlock()

	ok := false
	defer func() {
		if ok {
			return
		}
		d.mu.Lock()
		delete(d.entries, id)
		d.mu.Unlock()
		e.res = CommandResult{ID: id, Error: &ErrorBody{Code: errcode.Internal, Message: "the command failed on the host"}}
		close(e.finished)
	}()
	r := apply()
	ok = true
	r.ID = id

	d.mu.Lock()
	e.res = r
	e.elem = d.done.PushFront(e)
	for d.done.Len() > d.cap {
		old := d.done.Remove(d.done.Back()).(*dedupEntry)
		delete(d.entries, old.id)
	}
	d.mu.Unlock()
	close(e.finished)
	return r, true, nil
}

// Len is the number of ids remembered, running ones included.
func (d *Dedup) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}
