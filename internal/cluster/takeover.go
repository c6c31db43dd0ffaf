package cluster

import (
	"context"
	"hash/fnv"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// Takeover takes the sessions with work in flight whose leases expired:
// a dead node's running turns go on here (their hosts are attached
// again) or take the interruption path (their agents died with it). Every
// node scans; the database gives each session to one of them.
type Takeover struct {
	leases *Leases
	// take brings a session this node just acquired to life (the session
	// core's start-up reconciliation, for one session).
	take func(ctx context.Context, sessionIDs []string) error

	taken, failed atomic.Int64
	// failing is set from a scan that failed until one succeeds: a
	// database outage is logged once, not at every scan.
	failing atomic.Bool
}

// NewTakeover returns the scan of leases' node; take is called with the
// sessions each scan acquired.
func NewTakeover(leases *Leases, take func(ctx context.Context, sessionIDs []string) error) *Takeover {
	return &Takeover{leases: leases, take: take}
}

// Run scans every ScanEvery until ctx ends.
func (t *Takeover) Run(ctx context.Context) {
	tick := time.NewTicker(t.leases.cfg.ScanEvery)
	defer tick.Stop()
	for {
		t.Scan(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Scan takes what is orphaned now.
func (t *Takeover) Scan(ctx context.Context) {
	ids, err := t.leases.st.OrphanedSessions(ctx)
	if err != nil {
		if ctx.Err() == nil && !t.failing.Swap(true) {
			t.leases.log.Warn("cluster: looking for orphaned sessions failed; scanning on, quietly until it works", "err", err)
		}
		return
	}
	if t.failing.Swap(false) {
		t.leases.log.Info("cluster: looking for orphaned sessions works again")
	}
	ids = slices.DeleteFunc(ids, t.leases.handedOverRecently)
	ids = t.share(ctx, ids)
	// Every lease first, then one restore for all of them: a dead node's
	// sessions are all orphaned at once, and restoring them one after the
	// other would hold the later ones' leases back.
	var taken []string
	for _, id := range ids {
		if _, err := t.leases.Acquire(ctx, id); err != nil {
			if !errcode.Is(err, errcode.SessionOwnedElsewhere) && ctx.Err() == nil {
				t.leases.log.Warn("cluster: taking an orphaned session failed", "session", id, "err", err)
			}
			continue // another node was faster
		}
		taken = append(taken, id)
	}
	if len(taken) == 0 {
		return
	}
	t.leases.log.Info("cluster: took over sessions", "sessions", taken)
	if err := t.take(ctx, taken); err != nil {
		t.failed.Add(int64(len(taken)))
		t.leases.log.Warn("cluster: sessions taken over could not be restored; the next request tries again", "sessions", taken, "err", err)
		return
	}
	t.taken.Add(int64(len(taken)))
}

// share is this node's part of the orphans ids: an even share among the
// live nodes (rounded up), beginning at a place of its own in the list, so
// that a dead node's sessions spread over the survivors instead of piling
// onto the first to scan (and its agent limit). What the others leave (a
// node that died too, or scans later) is this node's part of the next
// scan's rest. Alone, or when the nodes cannot be counted, it takes all.
func (t *Takeover) share(ctx context.Context, ids []string) []string {
	live, err := t.leases.st.LiveNodes(ctx, t.leases.cfg.TTL)
	if err != nil || live <= 1 || len(ids) <= 1 {
		return ids
	}
	n := (len(ids) + live - 1) / live
	h := fnv.New32a()
	_, _ = h.Write([]byte(t.leases.cfg.NodeID))
	start := int(h.Sum32() % uint32(len(ids)))
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, ids[(start+i)%len(ids)])
	}
	return out
}

// Taken counts the sessions taken over, and failed those whose restore
// failed after their lease was taken.
func (t *Takeover) Taken() (taken, failed int64) { return t.taken.Load(), t.failed.Load() }
