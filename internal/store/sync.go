package store

import (
	"errors"
	"io/fs"
	"os"
)

// A commit returns once it is in SQLite's write-ahead log, which with
// synchronous=NORMAL is synced to disk only when a checkpoint copies it
// (every 250 ms at most, and not at all while it has nothing to copy): a
// power cut can take the last commits with it. That is fine for what
// tetherd alone saw, but not for what an executor host lets go once it is
// acknowledged (events.Writer.Durable). Sync closes the gap on demand, for
// the commits that need it, rather than syncing every commit
// (synchronous=FULL).

// NeedsSync reports whether a returned commit may still be lost by a power
// cut until Sync: SQLite's are (see above); PostgreSQL's are on disk when
// they return (synchronous_commit, its default).
func (s *Store) NeedsSync() bool { return s.walPath != "" }

// Sync makes every commit that returned before it durable: it fsyncs the
// write-ahead log. (A frame no longer in the log was copied into the
// database by a checkpoint, which syncs the log before and the database
// after; the log restarts only after such a checkpoint copied all of it.)
// On PostgreSQL it does nothing.
func (s *Store) Sync() error {
	if s.walPath == "" {
		return nil
	}
	f, err := os.Open(s.walPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no log: every commit is in the synced database
	}
	if err != nil {
		return internal(err, "sync the write-ahead log")
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return internal(err, "sync the write-ahead log")
	}
	return nil
}
