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

// TestCheckpointerBoundsTheWALUnderAWriterThatNeverPauses checks the
// checkpoint design (checkpoint.go) where it matters: commits back to
// back, as at full ingest, never leave SQLite a moment to start the WAL
// from the top by itself (nor does the backstop auto-checkpoint, which is
// PASSIVE too), so the writer must restart it when the checkpointer says
// so, and every event is still there afterwards. How long the WAL gets in between depends on how
// fast the loop writes in a round's 100 ms; the test only logs it.
func TestCheckpointerBoundsTheWALUnderAWriterThatNeverPauses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tether.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	// ~4 kB events, about one page each, 20 a commit, until the
	// checkpointer has restarted the WAL twice, or 60 s have passed: a
	// checkpointer that never restarts it fails the test. (A bound in
	// events instead made the test depend on the machine's speed: a fast
	// one wrote 100,000 events within the checkpointer's first rounds.)
	payload, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 4000)})
	var id, maxWAL int64
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && s.CheckpointStats().Restarts < 2; {
		evs := make([]store.Event, 20)
		for i := range evs {
			id++
			evs[i] = store.Event{ID: id, Type: "task.updated", Global: true, Payload: payload, Time: time.Now()}
		}
		if err := s.Tx(ctx, func(tx *store.Store) error { return tx.AppendEvents(ctx, evs) }); err != nil {
			t.Fatal(err)
		}
		if err := s.RestartWALIfDue(ctx); err != nil { // as the event writer does
			t.Fatal(err)
		}
		maxWAL = max(maxWAL, s.CheckpointStats().WALFrames)
	}
	st := s.CheckpointStats()
	if st.Restarts < 2 {
		t.Fatalf("after %d events of a page each (60 s) the checkpointer restarted the WAL %d times, want 2 (stats %+v)", id, st.Restarts, st)
	}
	if st.Failed != 0 {
		t.Errorf("%d checkpoints failed, want none", st.Failed)
	}
	t.Logf("%d events, longest WAL a round saw: %d frames", id, maxWAL)
	got, err := s.ListGlobalEvents(ctx, 0, int(id)+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != int(id) {
		t.Fatalf("read %d events after the checkpoints, want %d", len(got), id)
	}
}
