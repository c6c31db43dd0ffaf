package store_test

import (
	"os"
	"testing"

	"github.com/tether/tether/internal/store"
)

// TestSync checks that a SQLite store says its commits need a sync and
// syncs its write-ahead log after a write (and with none yet), and that a
// PostgreSQL one needs none (its commits are on disk when they return).
func TestSync(t *testing.T) {
	s := openStore(t)
	sqlite := s.Dialect() != store.DialectPostgres
	if got := s.NeedsSync(); got != sqlite {
		t.Fatalf("NeedsSync: got %v, want %v", got, sqlite)
	}
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync before a write: %v", err)
	}
	mustTask(t, s)
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync after a write: %v", err)
	}
	if sqlite {
		st, p := openStoreAt(t, t.TempDir()+"/x.db")
		mustTask(t, st)
		if _, err := os.Stat(p + "-wal"); err != nil {
			t.Fatalf("the write-ahead log Sync syncs: %v", err)
		}
		if err := st.Sync(); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
}
