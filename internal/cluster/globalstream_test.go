package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether/tether/internal/cluster"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/testbin"
)

// racyWrites is a node's writer hooks with random pauses inside each
// transaction: after the fence (its rows written, its ids not taken yet)
// and after the ids were taken (not committed). Transactions of the
// three nodes then overlap every way: one that took lower ids commits
// after one that took higher ids. One in ten fails after taking its ids,
// so its transaction rolls back and they never appear in the log.
type racyWrites struct {
	*cluster.Writes
	mu  sync.Mutex
	rng *rand.Rand
	// roll makes one transaction in ten fail after taking its ids;
	// rolledBack counts those ids.
	roll       bool
	rolledBack atomic.Int64
}

// errRolledBack fails a transaction after it took its ids.
var errRolledBack = errors.New("rolled back on purpose, after taking ids")

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

func (r *racyWrites) ReserveIDs(ctx context.Context, tx *store.Store, n int) ([]int64, store.TxMark, error) {
	ids, mark, err := r.Writes.ReserveIDs(ctx, tx, n)
	r.pause(2 * time.Millisecond)
	r.mu.Lock()
	fail := r.roll && r.rng.IntN(10) == 0
	r.mu.Unlock()
	if err == nil && fail {
		r.rolledBack.Add(int64(len(ids)))
		return nil, store.TxMark{}, errRolledBack
	}
	return ids, mark, err
}

// testNode is one node of an in-process cluster: its store connection,
// leases, writer, feed and hub.
type testNode struct {
	st     *store.Store
	leases *cluster.Leases
	w      *events.Writer
	feed   *cluster.Feed
	hub    *events.Hub
	hooks  *racyWrites
}

func newTestNode(t *testing.T, ctx context.Context, db, id string, seed uint64, roll bool) *testNode {
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
	if n.feed, err = cluster.NewFeed(ctx, st, n.hub.Publish, cluster.FeedConfig{Poll: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	n.hooks = &racyWrites{Writes: cluster.NewWrites(n.leases, n.feed), rng: rand.New(rand.NewPCG(seed, 7)), roll: roll}
	if n.w, err = events.NewWriter(ctx, st, n.hub, events.WriterConfig{Cluster: n.hooks, MaxBatch: 8}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.w.Close)
	return n
}

// TestGlobalStreamUnderConcurrentWriters: three nodes write at once, with
// transactions paused at random inside (so they commit in another order
// than they took their ids) and some rolled back after taking theirs,
// while each node's feed follows the log. Every node's global stream
// receives every committed event exactly once, in id order: nothing that
// committed late behind a higher id is skipped, nothing is delivered
// twice, and every id rolled back is passed over (counted), none waited
// for.
func TestGlobalStreamUnderConcurrentWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := testbin.FreshPostgres(t)
	const writersPerNode, eventsPerWriter = 4, 60
	var nodes []*testNode
	for i := range 3 {
		nodes = append(nodes, newTestNode(t, ctx, db, fmt.Sprintf("n%d", i+1), uint64(i+1), true))
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
					for try := 1; ; try++ {
						_, err := n.w.Do(ctx, func(tx *store.Store, emit events.Emit) error {
							emit(events.Draft{Type: events.TaskStateChanged, Payload: map[string]any{"writer": fmt.Sprintf("%d/%d", ni, wi), "k": k}})
							return nil
						})
						if err == nil {
							break
						}
						if !errors.Is(err, errRolledBack) || try == 20 {
							t.Errorf("node %d writer %d event %d: %v", ni, wi, k, err)
							return
						}
					}
				}
			})
		}
	}
	wg.Wait()
	total := int64(len(nodes) * writersPerNode * eventsPerWriter)
	var rolledBack int64
	for _, n := range nodes {
		rolledBack += n.hooks.rolledBack.Load()
	}
	if rolledBack == 0 {
		t.Fatal("no transaction rolled back after taking ids: the test did not try the feed's gaps")
	}
	for i, sub := range subs {
		var got []int64
		for int64(len(got)) < total {
			select {
			case <-sub.Ready():
				for _, batch := range sub.Take(nil) {
					for _, e := range batch {
						got = append(got, e.ID)
					}
				}
			case <-ctx.Done():
				t.Fatalf("node %d: got %d of %d events before the deadline", i+1, len(got), total)
			}
		}
		for k := 1; k < len(got); k++ {
			if got[k] <= got[k-1] {
				t.Fatalf("node %d: event %d has id %d after %d (a repeat or out of order)", i+1, k, got[k], got[k-1])
			}
		}
		if top := got[len(got)-1]; top > total+rolledBack {
			t.Errorf("node %d: last id %d, want at most %d committed + %d rolled back", i+1, top, total, rolledBack)
		}
		select {
		case <-sub.Ready():
			t.Errorf("node %d: got %d batches of events more than were committed", i+1, len(sub.Take(nil)))
		case <-time.After(200 * time.Millisecond):
		}
		for nodes[i].feed.Stats().GapsSkipped != rolledBack && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		if st := nodes[i].feed.Stats(); st.GapsSkipped != rolledBack {
			t.Errorf("node %d: the feed passed over %d ids, want the %d rolled back", i+1, st.GapsSkipped, rolledBack)
		}
	}
}

// TestWritesCommitOnlyUnderTheirLease: a change decided under one lease
// generation of its session (an actor's, SubmitUnder) is refused once the
// node lost that lease, even when it holds the session again at a newer
// generation; a change of the new generation, or of none named, commits.
// An actor unloaded at a hand-over that drains its last work after its
// node took the session back would otherwise write beside the new actor
// (host records replayed to the new one, committed twice).
func TestWritesCommitOnlyUnderTheirLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := newTestNode(t, ctx, testbin.FreshPostgres(t), "n1", 1, false)
	const sid = "s1"
	first, err := n.leases.Acquire(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	n.leases.Release(ctx, sid)
	second, err := n.leases.Acquire(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if second <= first {
		t.Fatalf("got generation %d after %d, want a newer one", second, first)
	}
	noop := events.Func(sid, func(*store.Store, events.Emit) error { return nil })
	cases := []struct {
		name    string
		gen     int64
		refused bool
	}{
		{"the lease lost since", first, true},
		{"the lease held now", second, false},
		{"no generation named: the one held", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := n.w.SubmitUnder(tc.gen, noop).Wait(ctx)
			if got := errcode.Is(err, errcode.SessionLeaseLost); got != tc.refused {
				t.Errorf("got %v, want refused %v", err, tc.refused)
			}
		})
	}
}
