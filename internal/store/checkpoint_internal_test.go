package store

import (
	"context"
	"path/filepath"
	"testing"
)

// TestWritePoolCheckpointsOnlyAsABackstop checks the pragmas the write
// pool's connections run with (checkpoint.go): SQLite's auto-checkpoint
// at the backstop mark, not its default of 1,000 pages, and a WAL size
// limit; the read pool keeps the defaults (it never commits).
func TestWritePoolCheckpointsOnlyAsABackstop(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "tether.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for _, tc := range []struct {
		name, pragma string
		want         int64
	}{
		{"auto-checkpoint mark", "wal_autocheckpoint", walBackstopPages},
		{"WAL size limit", "journal_size_limit", walSizeLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got int64
			if err := s.db.WithContext(ctx).Raw("PRAGMA " + tc.pragma).Scan(&got).Error; err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("write pool PRAGMA %s: got %d, want %d", tc.pragma, got, tc.want)
			}
		})
	}
}
