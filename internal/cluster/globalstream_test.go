package cluster_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/cluster"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/testbin"
)

// racyWrites is a node's writer hooks with random pauses inside each
// transaction: after the fence (its rows written, its ids not taken yet)
// and after the ids were taken (the counter row locked, not committed).
// Transactions of the three nodes then overlap every way: one that began
// first commits last, one that wrote more commits first.
type racyWrites struct {
	*cluster.Writes
	mu  sync.Mutex
	rng *rand.Rand
}

func (r *racyWrites) pause(max time.Duration) {
	r.mu.Lock()
	d := time.Duration(r.rng.Int64N(int64(max)))
	r.mu.Unlock()
	time.Sleep(d)
}

func (r *racyWrites) Fence(ctx context.Context, tx *store.Store, sessions []string) (map[string]int64, error) {
	gens, err := r.Writes.Fence(ctx, tx, sessions)
	r.pause(3 * time.Millisecond)
	return gens, err
}

func (r *racyWrites) ReserveIDs(ctx context.Context, tx *store.Store, n int) (int64, error) {
	first, err := r.Writes.ReserveIDs(ctx, tx, n)
	r.pause(2 * time.Millisecond)
	return first, err
}

// testNode is one node of an in-process cluster: its store connection,
// leases, writer, feed and hub.
type testNode struct {
	st     *store.Store
	leases *cluster.Leases
	w      *events.Writer
	feed   *cluster.Feed
	hub    *events.Hub
}

func newTestNode(t *testing.T, ctx context.Context, db, id string, seed uint64) *testNode {
	t.Helper()
	st, err := store.OpenPostgres(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg, err := cluster.Config{NodeID: id, URL: "http://" + id + ":1", TTL: 30 * time.Second}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{st: st, leases: cluster.NewLeases(cfg, st, nil), hub: events.NewHub(events.HubConfig{Buffer: 1 << 16, MaxTotal: 16})}
	if err := st.RegisterNode(ctx, id, cfg.URL); err != nil {
		t.Fatal(err)
	}
	if n.feed, err = cluster.NewFeed(ctx, st, n.hub.Publish, cluster.FeedConfig{Poll: 50 * time.Millisecond, GapWait: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	hooks := &racyWrites{Writes: cluster.NewWrites(n.leases, n.feed), rng: rand.New(rand.NewPCG(seed, 7))}
	if n.w, err = events.NewWriter(ctx, st, n.hub, events.WriterConfig{Cluster: hooks, MaxBatch: 8}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.w.Close)
	return n
}

// TestGlobalStreamUnderConcurrentWriters: three nodes write at once, with
// transactions paused at random inside (so they commit in another order
// than they began and took their rows), while each node's feed follows the
// log, giving up on a missing id after a millisecond: were ids not given
// out in commit order, a later id seen before an earlier one committed
// would be skipped. Every node's global stream receives every committed event exactly
// once, in id order, and the ids are 1..N without a gap: nothing that
// committed late is skipped, nothing is delivered twice.
func TestGlobalStreamUnderConcurrentWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := testbin.FreshPostgres(t)
	const writersPerNode, eventsPerWriter = 4, 60
	var nodes []*testNode
	for i := range 3 {
		nodes = append(nodes, newTestNode(t, ctx, db, fmt.Sprintf("n%d", i+1), uint64(i+1)))
	}
	subs := make([]*events.Subscription, len(nodes))
	for i, n := range nodes {
		var err error
		if subs[i], err = n.hub.Subscribe(""); err != nil {
			t.Fatal(err)
		}
		go n.feed.Run(ctx)
	}
	// Every event is global; each writer writes its own events one change
	// at a time, so the nodes' transactions interleave.
	var wg sync.WaitGroup
	for ni, n := range nodes {
		for wi := range writersPerNode {
			wg.Go(func() {
				for k := range eventsPerWriter {
					_, err := n.w.Do(ctx, func(tx *store.Store, emit events.Emit) error {
						emit(events.Draft{Type: events.TaskStateChanged, Payload: map[string]any{"writer": fmt.Sprintf("%d/%d", ni, wi), "k": k}})
						return nil
					})
					if err != nil {
						t.Errorf("node %d writer %d event %d: %v", ni, wi, k, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	total := int64(len(nodes) * writersPerNode * eventsPerWriter)
	for i, sub := range subs {
		var got []int64
		for int64(len(got)) < total {
			select {
			case batch := <-sub.C:
				for _, e := range batch {
					got = append(got, e.ID)
				}
			case <-ctx.Done():
				t.Fatalf("node %d: got %d of %d events before the deadline", i+1, len(got), total)
			}
		}
		for k, id := range got {
			if id != int64(k)+1 {
				t.Fatalf("node %d: event %d has id %d, want %d (a gap, a repeat or out of order)", i+1, k, id, k+1)
			}
		}
		select {
		case extra := <-sub.C:
			t.Errorf("node %d: got %d events more than were committed", i+1, len(extra))
		case <-time.After(200 * time.Millisecond):
		}
		if st := nodes[i].feed.Stats(); st.GapsSkipped != 0 {
			t.Errorf("node %d: the feed skipped %d ids", i+1, st.GapsSkipped)
		}
	}
}
