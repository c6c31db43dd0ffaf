package store

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"

	"github.com/tether/tether/internal/errcode"
)

// dbFileMode is the mode of the database and its -wal and -shm files: they
// hold transcripts, prompts and agent environments, readable by the owner only.
const dbFileMode fs.FileMode = 0o600

// sidecars are the files SQLite keeps next to a WAL-mode database.
var sidecars = []string{"-wal", "-shm", "-journal"}

// privateDBFiles makes sure the database at abs and the files SQLite keeps
// beside it are 0600 before SQLite opens them. SQLite creates -wal and -shm
// with the mode of the database file, so creating the (empty) database file
// 0600 first is enough for a new database; files an older tetherd created
// looser are tightened, with a log line naming them. The process umask is
// left alone: agents inherit it, and files they write in a workspace must
// keep the user's usual modes.
func privateDBFiles(abs string) error {
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, dbFileMode)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return errcode.Wrap(errcode.Internal, err, "store: create database file")
		}
	case !errors.Is(err, fs.ErrExist):
		return errcode.Wrap(errcode.Internal, err, "store: create database file")
	}
	for _, p := range append([]string{abs}, sidecarPaths(abs)...) {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "store: stat %s", p)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&^dbFileMode == 0 {
			continue
		}
		if err := os.Chmod(p, dbFileMode); err != nil {
			return errcode.Wrap(errcode.Internal, err, "store: make %s private", p)
		}
		slog.Warn("store: database file was readable by others; made it 0600", "path", p, "was", fi.Mode().Perm().String())
	}
	return nil
}

// sidecarPaths lists the -wal, -shm and -journal paths of the database abs.
func sidecarPaths(abs string) []string {
	out := make([]string, 0, len(sidecars))
	for _, s := range sidecars {
		out = append(out, abs+s)
	}
	return out
}
