package events

import (
	"context"
	"log/slog"
	"time"

	"github.com/tether/tether/internal/store"
)

// DefaultRetentionBatch is how many events one retention statement deletes
// at most when Retention.Batch is not set.
const DefaultRetentionBatch = 1000

// Retention says how long the log of a closed session is kept. Open
// sessions are never pruned: their clients may still resume from any cursor.
type Retention struct {
	// Age: events of sessions closed longer ago than this are pruned.
	Age time.Duration
	// Keep: the newest Keep events of such a session survive (0 = none).
	Keep int
	// Every is how often pruning runs.
	Every time.Duration
	// Batch bounds the events one delete removes (one writer op each), so
	// pruning a large backlog never holds the writer for long.
	Batch int
}

// RunRetention prunes periodically until ctx ends, through the writer (a
// prune beside it would compete for SQLite's lock). A client resuming from
// a pruned cursor gets resync_required{reason: cursor_expired}. The caller
// owns the goroutine and waits for it before closing the writer.
func RunRetention(ctx context.Context, w *Writer, r Retention, log *slog.Logger) {
	if r.Age <= 0 {
		return
	}
	if r.Every <= 0 {
		r.Every = time.Hour
	}
	t := time.NewTicker(r.Every)
	defer t.Stop()
	for {
		n, err := Prune(ctx, w, time.Now().Add(-r.Age), r.Keep, r.Batch)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("event retention failed", "err", err, "pruned", n)
		case n > 0:
			log.Info("pruned events of closed sessions", "events", n, "olderThan", r.Age)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Prune deletes the events of sessions closed before closedBefore, all but
// the newest keep of each, in writer ops of at most batch deletions (0:
// DefaultRetentionBatch). Other sessions' writes run between the batches.
// It returns how many events it deleted, and stops early when ctx ends.
func Prune(ctx context.Context, w *Writer, closedBefore time.Time, keep, batch int) (int64, error) {
	if batch <= 0 {
		batch = DefaultRetentionBatch
	}
	// Inside the writer's transaction the ops run to their end: a shutdown
	// must not fail the batch they share with other sessions' writes. It
	// stops the loop between batches instead.
	opCtx := context.WithoutCancel(ctx)
	if err := w.Exec(ctx, func(tx *store.Store) error { return tx.MarkPruneHeads(opCtx, closedBefore) }); err != nil {
		return 0, err
	}
	var total int64
	for ctx.Err() == nil {
		var n int64
		if err := w.Exec(ctx, func(tx *store.Store) error {
			var err error
			n, err = tx.PruneEventBatch(opCtx, closedBefore, keep, batch)
			return err
		}); err != nil {
			// n is not read: after a cancelled wait the op may still run.
			return total, err
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
	return total, ctx.Err()
}
