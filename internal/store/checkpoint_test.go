package store_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/store"
)

// TestCheckpointerCopiesTheWALBesideTheWriter checks the two halves of the
// checkpoint design (checkpoint.go): commits no longer checkpoint at
// SQLite's default 1,000 pages (that ran on the writer), and a round of
// the checkpointer copies everything committed into the database, after
// which the next commit starts the WAL again from the top, so the file
// stays the size of what was written between two rounds.
func TestCheckpointerCopiesTheWALBesideTheWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tether.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	// ~4 kB events: about one page each. append commits n of them in
	// transactions of 100, and is fast enough that the checkpointer's
	// 100 ms rounds see only part of it; the assertions below do not
	// depend on when its rounds fall.
	payload, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 4000)})
	var id int64
	appendEvents := func(n int) {
		t.Helper()
		for range n / 100 {
			evs := make([]store.Event, 100)
			for i := range evs {
				id++
				evs[i] = store.Event{ID: id, Type: "task.updated", Global: true, Payload: payload, Time: time.Now()}
			}
			if err := s.Tx(ctx, func(tx *store.Store) error { return tx.AppendEvents(ctx, evs) }); err != nil {
				t.Fatal(err)
			}
		}
	}

	appendEvents(3000)
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	st := s.CheckpointStats()
	if st.Frames < 3000 {
		t.Fatalf("checkpointer copied %d frames of ~3,000 pages committed, want at least 3,000 (stats %+v)", st.Frames, st)
	}
	// Everything is in the database now: the next commit restarts the WAL.
	appendEvents(100)
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.CheckpointStats().WALFrames; got > 1000 {
		t.Fatalf("WAL holds %d frames after a round and 100 more events, want it restarted (≤ 1,000)", got)
	}
	got, err := s.ListGlobalEvents(ctx, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != int(id) {
		t.Fatalf("read %d events after the checkpoints, want %d", len(got), id)
	}
}
