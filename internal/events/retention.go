package events

import (
	"context"
	"log/slog"
	"time"

	"github.com/tether/tether/internal/store"
)

// Retention says how long the log of a closed session is kept. Open
// sessions are never pruned: their clients may still resume from any cursor.
type Retention struct {
	// Age: events of sessions closed longer ago than this are pruned.
	Age time.Duration
	// Keep: the newest Keep events of such a session survive (0 = none).
	Keep int
	// Every is how often pruning runs.
	Every time.Duration
}

// RunRetention prunes periodically until ctx ends, through the writer (a
// prune beside it would compete for SQLite's lock). A client resuming from
// a pruned cursor gets resync_required{reason: cursor_expired}.
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
		var n int64
		err := w.Exec(ctx, func(tx *store.Store) error {
			var err error
			n, err = tx.PruneEvents(ctx, time.Now().Add(-r.Age), r.Keep)
			return err
		})
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("event retention failed", "err", err)
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
