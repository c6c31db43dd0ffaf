package cluster

import (
	"context"
	"sync/atomic"
	"time"
)

// Rebalance hands sessions over from a node that holds more than its
// share of the cluster's live leases to the others: a node that joins, or
// comes back, gets its part without waiting for sessions to end. Only
// sessions that can move without interrupting their turn move: those whose
// agent runs on an executor host, which its next owner attaches to (the
// hand-over a clean shutdown makes, one session at a time). The others
// pick them up with their takeover scans; this node leaves them alone.
type Rebalance struct {
	leases *Leases
	// movable picks, of the sessions ids this node holds, those whose
	// agents run on a host, attached and settled; unload stops following
	// them (their agents stay on their hosts), writing nothing.
	movable func(ids []string) []string
	unload  func(ids []string)

	moved atomic.Int64
}

// NewRebalance returns the rebalancing of leases' node.
func NewRebalance(leases *Leases, movable func(ids []string) []string, unload func(ids []string)) *Rebalance {
	return &Rebalance{leases: leases, movable: movable, unload: unload}
}

// Run looks every TTL until ctx ends.
func (r *Rebalance) Run(ctx context.Context) {
	tick := time.NewTicker(r.leases.cfg.TTL)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			r.Once(ctx)
		}
	}
}

// Once hands over what this node holds past its share (rounded up) of
// the live leases among the live nodes: rounding up, a node at its share
// keeps it, so the cluster settles instead of swinging.
func (r *Rebalance) Once(ctx context.Context) {
	st := r.leases.st
	live, err := st.LiveNodes(ctx, r.leases.cfg.TTL)
	if err != nil || live <= 1 {
		return
	}
	total, err := st.LiveLeases(ctx)
	if err != nil {
		return
	}
	held := r.leases.Held()
	share := (total + live - 1) / live
	excess := len(held) - share
	if excess <= 0 {
		return
	}
	move := r.movable(held)
	if len(move) > excess {
		move = move[:excess]
	}
	if len(move) == 0 {
		return
	}
	r.unload(move)
	for _, id := range move {
		r.leases.HandOver(ctx, id)
	}
	r.moved.Add(int64(len(move)))
	r.leases.log.Info("cluster: handed sessions over to balance the nodes", "sessions", move, "held", len(held), "share", share)
}

// Moved counts the sessions handed over.
func (r *Rebalance) Moved() int64 { return r.moved.Load() }
