package events_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// emitN appends n events to session sid through the writer.
func emitN(t *testing.T, l *benchLog, sid string, n int) {
	t.Helper()
	if _, err := l.w.Do(context.Background(), func(tx *store.Store, emit events.Emit) error {
		for range n {
			emit(events.Draft{SessionID: sid, Type: events.MessageChunk, Payload: map[string]any{"text": "x"}})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Retention deletes a large backlog in writer ops of at most Batch rows
// each, so that every other session's writes run between them instead of
// waiting behind one huge DELETE; open sessions and the newest Keep events
// of closed ones stay.
func TestPruneInBoundedBatches(t *testing.T) {
	ctx := context.Background()
	l := openBenchLog(t, 3)
	closed, open := l.sessions[:2], l.sessions[2]
	emitN(t, l, closed[0], 2500)
	emitN(t, l, closed[1], 300)
	emitN(t, l, open, 50)
	for _, sid := range closed {
		if err := l.w.Exec(ctx, func(tx *store.Store) error {
			return tx.UpdateSessionState(ctx, sid, session.SessionCompleted)
		}); err != nil {
			t.Fatal(err)
		}
	}
	const batch, keep = 1000, 3
	_, before := l.w.Stats()
	n, err := events.Prune(ctx, l.w, time.Now().Add(time.Hour), keep, batch)
	if err != nil {
		t.Fatalf("prune: %v", err)
	}
	_, after := l.w.Stats()
	if want := int64(2500 - keep + 300 - keep); n != want {
		t.Errorf("got %d events pruned, want %d", n, want)
	}
	// One op records the heads, then 1000 + 1000 + 794 deletions.
	if got, want := after-before, int64(1+3); got != want {
		t.Errorf("got %d writer transactions for the prune, want %d (heads, then batches of at most %d)", got, want, batch)
	}
	for _, c := range []struct {
		name string
		sid  string
		want int
	}{{"closed, large", closed[0], keep}, {"closed, small", closed[1], keep}, {"open", open, 50}} {
		got, err := l.st.ListSessionEvents(ctx, c.sid, 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != c.want {
			t.Errorf("%s session: got %d events left, want %d", c.name, len(got), c.want)
		}
	}
}

// Each delete statement removes at most its limit, and says when it has
// removed the last row (fewer than the limit).
func TestPruneEventBatchDeletesAtMostLimit(t *testing.T) {
	ctx := context.Background()
	l := openBenchLog(t, 1)
	emitN(t, l, l.sessions[0], 250)
	if err := l.w.Exec(ctx, func(tx *store.Store) error {
		return tx.UpdateSessionState(ctx, l.sessions[0], session.SessionCompleted)
	}); err != nil {
		t.Fatal(err)
	}
	cutoff := time.Now().Add(time.Hour)
	var got []int64
	for i := 0; i < 10; i++ {
		var n int64
		if err := l.w.Exec(ctx, func(tx *store.Store) error {
			var err error
			n, err = tx.PruneEventBatch(ctx, cutoff, 0, 100)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
		if n < 100 {
			break
		}
	}
	if want := []int64{100, 100, 50}; !slices.Equal(got, want) {
		t.Errorf("got rows per statement %v, want %v", got, want)
	}
}

// BenchmarkRetentionWriterHold measures how long one retention write holds
// the writer while pruning a closed session of 20,000 events: in batches
// (the daemon's default) against one unbounded delete (the old shape).
// The metrics are the median and the longest single write.
func BenchmarkRetentionWriterHold(b *testing.B) {
	for _, c := range []struct {
		name  string
		batch int
	}{{"batch=1000", events.DefaultRetentionBatch}, {"unbounded", -1}} {
		b.Run(c.name, func(b *testing.B) {
			var holds []time.Duration
			for range b.N {
				b.StopTimer()
				l := openBenchLog(b, 1)
				sid := l.sessions[0]
				for range 20 {
					if _, err := l.w.Do(context.Background(), func(tx *store.Store, emit events.Emit) error {
						for range 1000 {
							emit(events.Draft{SessionID: sid, Type: events.MessageChunk, Payload: map[string]any{"text": chunkText}})
						}
						return tx.UpdateSessionState(context.Background(), sid, session.SessionCompleted)
					}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				cutoff := time.Now().Add(time.Hour)
				for {
					var n int64
					start := time.Now()
					if err := l.w.Exec(context.Background(), func(tx *store.Store) error {
						var err error
						n, err = tx.PruneEventBatch(context.Background(), cutoff, 0, c.batch)
						return err
					}); err != nil {
						b.Fatal(err)
					}
					holds = append(holds, time.Since(start))
					if c.batch < 0 || n < int64(c.batch) {
						break
					}
				}
			}
			slices.Sort(holds)
			b.ReportMetric(ms(percentile(holds, 0.5)), "p50-hold-ms")
			b.ReportMetric(ms(holds[len(holds)-1]), "max-hold-ms")
		})
	}
}
