package store_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/store"
)

// TestCommitsLeaveCheckpointsToTheCheckpointer checks that no commit
// checkpoints the WAL by itself (SQLite's auto-checkpoint would, on the
// writer, past 1,000 pages): with the checkpointer's rounds far apart the
// WAL grows past that, and one idle round of the checkpointer empties it.
func TestCommitsLeaveCheckpointsToTheCheckpointer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tether.db")
	s, err := store.OpenWith(ctx, path, store.Config{Checkpoint: store.CheckpointConfig{Every: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	// 3,000 events of ~4 kB: about 3,000 pages, in 30 commits.
	payload, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 4000)})
	var id int64
	for range 30 {
		evs := make([]store.Event, 100)
		for i := range evs {
			id++
			evs[i] = store.Event{ID: id, Type: "task.updated", Global: true, Payload: payload, Time: time.Now()}
		}
		if err := s.Tx(ctx, func(tx *store.Store) error { return tx.AppendEvents(ctx, evs) }); err != nil {
			t.Fatal(err)
		}
	}
	const autoCheckpointBytes = 1000 * (4096 + 24)
	if got := walSize(t, path); got < 2*autoCheckpointBytes {
		t.Fatalf("WAL is %d bytes after ~12 MB of commits, want more than %d: a commit checkpointed it", got, 2*autoCheckpointBytes)
	}

	// The first round copies the WAL into the database; the second finds
	// it idle and truncates it.
	for range 2 {
		if err := s.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := walSize(t, path); got != 0 {
		t.Fatalf("WAL is %d bytes after an idle checkpoint round, want 0", got)
	}
	if got := s.CheckpointStats(); got.Passive != 2 || got.Truncate != 1 {
		t.Fatalf("checkpoint stats %+v, want 2 passive and 1 truncate", got)
	}
	got, err := s.ListGlobalEvents(ctx, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != int(id) {
		t.Fatalf("read %d events after the checkpoints, want %d", len(got), id)
	}
}

func walSize(t *testing.T, db string) int64 {
	t.Helper()
	fi, err := os.Stat(db + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
