package events_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// TestDurable checks Writer.Durable on SQLite, whose commits reach the
// disk only at a sync: after a commit, each call is answered by a sync
// round (counted in SyncStats), in the order of the calls, and the calls
// made while a round is pending share it; with SyncEvery < 0 (no rounds)
// and after Close, it answers at once.
func TestDurable(t *testing.T) {
	t.Run("many waiting do not wait for the pace", durableBatch)
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		every      time.Duration
		wantRounds bool
	}{
		{"sync rounds", 20 * time.Millisecond, true},
		{"no sync rounds", -1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "tether.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			w, err := events.NewWriter(ctx, st, events.NewHub(events.HubConfig{}), events.WriterConfig{SyncEvery: c.every})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Do(ctx, func(tx *store.Store, _ events.Emit) error {
				_, err := tx.CreateTask(ctx, session.Task{Title: "durable", Workspace: "/tmp"})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var order []int
			var roundsSeen []int64
			all := make(chan struct{})
			const n = 5
			for i := range n {
				w.Durable(func() {
					rounds, _ := w.SyncStats()
					mu.Lock()
					defer mu.Unlock()
					order = append(order, i)
					roundsSeen = append(roundsSeen, rounds)
					if len(order) == n {
						close(all)
					}
				})
			}
			select {
			case <-all:
			case <-time.After(10 * time.Second):
				t.Fatal("Durable never answered")
			}
			if !slices.Equal(order, []int{0, 1, 2, 3, 4}) {
				t.Errorf("got answers in order %v, want the calls' order", order)
			}
			rounds, failed := w.SyncStats()
			if got := rounds > 0; got != c.wantRounds || failed != 0 {
				t.Errorf("got %d sync rounds (%d failed), want rounds %v and no failure", rounds, failed, c.wantRounds)
			}
			if c.wantRounds && (roundsSeen[0] == 0 || rounds > 2) {
				t.Errorf("answers saw rounds %v of %d: want each after a round, five calls in one or two rounds", roundsSeen, rounds)
			}
			w.Close()
			called := false
			w.Durable(func() { called = true })
			if !called {
				t.Error("after Close: Durable did not answer at once")
			}
		})
	}
}

// durableBatch checks that, however long the pace between sync rounds,
// enough acknowledgements waiting start a round at once: a stream at full
// speed must not wait for the pace (its host's window is full by then).
func durableBatch(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "tether.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := events.NewWriter(ctx, st, events.NewHub(events.HubConfig{}), events.WriterConfig{SyncEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	first := make(chan struct{})
	w.Durable(func() { close(first) }) // after a quiet spell: a round at once
	<-first
	var mu sync.Mutex
	answered := 0
	all := make(chan struct{})
	const n = 300 // more than a batch
	for range n {
		w.Durable(func() {
			mu.Lock()
			defer mu.Unlock()
			if answered++; answered == n-44 { // the batch's round, not the hour's
				close(all)
			}
		})
	}
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d acknowledgements answered within 10 s of a one-hour pace, want a batch's worth at once", answered, n)
	}
}
