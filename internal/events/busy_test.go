package events_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// openWriter opens a fresh store with its writer, closed with the test,
// and returns them with the database's path.
func openWriter(t *testing.T) (*store.Store, *events.Writer, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tether.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := events.NewWriter(ctx, st, events.NewHub(events.HubConfig{}), events.WriterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); _ = st.Close() })
	return st, w, path
}

// TestWriterCountsBusy locks the database from another connection, as a
// second process would, and checks that the writer's failed transaction is
// counted as busy by the writer and the store (the /metrics counters), and
// that the writer commits again once the lock is gone.
func TestWriterCountsBusy(t *testing.T) {
	ctx := context.Background()
	_, w, path := openWriter(t)
	createTask := func(tx *store.Store, _ events.Emit) error {
		_, err := tx.CreateTask(ctx, session.Task{Title: "t", Workspace: "/"})
		return err
	}

	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	lock, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatalf("take the lock: %v", err)
	}
	storeBusy := store.BusyErrors()
	_, busyBefore := w.RetryStats()
	failedBefore := w.FailureStats()[string(errcode.StoreWriteFailed)]
	// Fails once the store's busy timeout (5 s) has waited for the lock.
	if _, err := w.Do(ctx, createTask); !errcode.Is(err, errcode.StoreWriteFailed) {
		t.Fatalf("write under an exclusive lock: got %v, want %s", err, errcode.StoreWriteFailed)
	}
	if got := w.FailureStats()[string(errcode.StoreWriteFailed)]; got != failedBefore+1 {
		t.Errorf("writer failures counted as %s: got %d, want %d", errcode.StoreWriteFailed, got, failedBefore+1)
	}
	if _, busy := w.RetryStats(); busy != busyBefore+1 {
		t.Errorf("writer busy count: got %d, want %d", busy, busyBefore+1)
	}
	if got := store.BusyErrors(); got < storeBusy+1 {
		t.Errorf("store busy count: got %d, want at least %d", got, storeBusy+1)
	}

	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	_ = lock.Close()
	if _, err := w.Do(ctx, createTask); err != nil {
		t.Fatalf("write after the lock is released: %v", err)
	}
}
