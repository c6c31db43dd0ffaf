// Package atomicfile replaces small files so that a reader, or the next
// start after a crash, sees the old content or the new, never a mix (the
// outbox's acknowledged offset, an executor host's session meta and
// identity).
package atomicfile

import (
	"os"
	"path/filepath"
)

// TempSuffix ends the name of the temporary file Write renames into
// place; a crash can leave one behind, for whoever owns the directory to
// remove.
const TempSuffix = ".tmp"

// Write replaces path with data (mode 0600): a temporary file beside it,
// synced, renamed over it, then the directory synced, so that the rename
// itself survives a crash.
func Write(path string, data []byte) error {
	tmp := path + TempSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path), nil)
}

// SyncDir fsyncs a directory, making the entries created, renamed or
// removed in it durable. sync replaces (*os.File).Sync when not nil
// (tests that make the disk fail).
func SyncDir(dir string, sync func(*os.File) error) error {
	if sync == nil {
		sync = (*os.File).Sync
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = sync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
