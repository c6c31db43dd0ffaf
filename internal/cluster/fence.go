package cluster

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
)

// Writes is the event writer's side of the cluster (events.Cluster): it
// fences each transaction by this node's leases, takes global ids from
// the sequence and hands commits to the feed.
type Writes struct {
	leases *Leases
	feed   *Feed

	fenced atomic.Int64
}

// NewWrites returns the writer hooks of the node whose leases these are;
// commits wake feed.
func NewWrites(leases *Leases, feed *Feed) *Writes { return &Writes{leases: leases, feed: feed} }

// Fence implements events.Cluster: every session must be leased to this
// node, live, at the generation it holds. A session that is not is
// forgotten here (its actor hears it through the leases' lost callback)
// and its ops fail with errcode.SessionLeaseLost.
func (w *Writes) Fence(ctx context.Context, tx *store.Store, sessions []string) (map[string]int64, error) {
	rows, err := tx.LockLeases(ctx, sessions)
	if err != nil {
		return nil, err
	}
	held := make(map[string]int64, len(sessions))
	w.leases.mu.Lock()
	for _, id := range sessions {
		if gen, ok := w.leases.held[id]; ok {
			held[id] = gen
		}
	}
	w.leases.mu.Unlock()
	lost := fenceCheck(w.leases.cfg.NodeID, held, sessions, rows)
	if len(lost) > 0 {
		w.fenced.Add(int64(len(lost)))
		for _, id := range lost {
			w.leases.Forget(id)
		}
		return nil, errcode.New(errcode.SessionLeaseLost, "this node no longer owns session %s; nothing was written", strings.Join(lost, ", ")).
			With("sessions", lost)
	}
	return held, nil
}

// fenceCheck lists, sorted, the sessions a transaction of node may not
// write: not held by it, or whose lease row (read under a share lock)
// names another node, another generation, or has expired.
func fenceCheck(node string, held map[string]int64, sessions []string, rows []store.Lease) []string {
	byID := make(map[string]store.Lease, len(rows))
	for _, r := range rows {
		byID[r.SessionID] = r
	}
	var lost []string
	for _, id := range sessions {
		gen, ok := held[id]
		r, found := byID[id]
		if !ok || !found || r.NodeID != node || r.Generation != gen || !r.Live {
			lost = append(lost, id)
		}
	}
	slices.Sort(lost)
	return slices.Compact(lost)
}

// Generation implements events.Cluster: the generation of the session's
// lease this node holds, 0 when it holds none.
func (w *Writes) Generation(sessionID string) int64 {
	w.leases.mu.Lock()
	defer w.leases.mu.Unlock()
	return w.leases.held[sessionID]
}

// ReserveIDs implements events.Cluster.
func (w *Writes) ReserveIDs(ctx context.Context, tx *store.Store, n int) ([]int64, store.TxMark, error) {
	return tx.ReserveEventIDs(ctx, n)
}

// Committed implements events.Cluster: the feed reads the commit from
// the log and publishes it in global id order with everyone else's.
func (w *Writes) Committed([]store.Event) { w.feed.Wake() }

// Fenced counts the sessions whose writes were refused.
func (w *Writes) Fenced() int64 { return w.fenced.Load() }
