package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
)

// The codes `tetherd backup` answers a user's mistake with (printed as
// "tetherd: CODE: message", exit 1), so that a script can tell a mistake
// from a backup that failed (internal_error); they never change meaning.
// A wrong command line (a flag, the number of arguments, no data directory
// to find) is a usageError, as for every command (usage_error, exit 2). They
// are the command's own; the API's codes are in internal/errcode.
const (
	// backupNoDatabase: the data directory holds no tether.db (a wrong
	// --data-dir or TETHER_DATA_DIR, or a daemon on PostgreSQL).
	backupNoDatabase errcode.Code = "database_not_found"
	// backupNotADatabase: tether.db is there but is no SQLite database.
	backupNotADatabase errcode.Code = "not_a_database"
	// backupOutputExists: OUTPUT exists and --force was not given.
	backupOutputExists errcode.Code = "backup_output_exists"
	// backupOutputInvalid: OUTPUT cannot be the backup: it is a directory,
	// its directory does not exist, or it is the database (or its -wal or
	// -shm file) itself, which --force would have deleted.
	backupOutputInvalid errcode.Code = "backup_output_invalid"
)

const backupUsage = `usage: tetherd backup [--data-dir DIR] [--force] OUTPUT

Write a consistent copy of the daemon's SQLite database (<data-dir>/tether.db)
to OUTPUT, mode 0600, safe while the daemon runs; the copy is checked before
it is reported (docs/operations.md, Backup and restore). A variable in
[brackets] sets its flag's default.

A mistake is refused with a stable code (exit 1), and nothing is written:
  backup_output_exists   OUTPUT exists (--force replaces it)
  backup_output_invalid  OUTPUT is a directory, its directory is missing, or
                         it is the database (or its -wal, -shm) itself
  database_not_found     the data directory holds no tether.db
  not_a_database         tether.db is not an SQLite database

Flags:
`

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// backup is `tetherd backup [--data-dir DIR] [--force] OUTPUT`: a
// consistent copy of the data dir's database, taken with SQLite's online
// backup API, safe while the daemon runs.
func backup(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("tetherd backup", flag.ContinueOnError)
	dataDir := flags.String("data-dir", env("TETHER_DATA_DIR", defaultDataDir()), "data directory of the daemon to back up [TETHER_DATA_DIR]")
	force := flags.Bool("force", false, "replace OUTPUT if it exists")
	flags.Usage = flagUsage(flags, backupUsage, nil, nil)
	if err := parseFlags(flags, args); err != nil {
		return err // the help asked for, or a usageError
	}
	if flags.NArg() != 1 {
		return usageError{err: fmt.Errorf("want exactly one OUTPUT file, got %d arguments", flags.NArg())}
	}
	if *dataDir == "" {
		return usageError{err: errors.New("no data directory: set --data-dir, TETHER_DATA_DIR or HOME")}
	}
	out := flags.Arg(0)
	if err := absPaths(dataDir, &out); err != nil {
		return usageError{err: err}
	}
	db := filepath.Join(*dataDir, "tether.db")
	if err := checkBackupSource(db); err != nil {
		return err
	}
	if err := checkBackupOutput(db, out, *force); err != nil {
		return err
	}
	info, err := store.Backup(ctx, db, out, *force)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup of %s written to %s: %d bytes, %d sessions, %d events, integrity ok, took %s\n",
		db, info.Path, info.Bytes, info.Sessions, info.Events, info.Took.Round(1e6))
	return nil
}

// checkBackupSource refuses, with the user's mistake named, a data dir
// without a database and a tether.db that is no SQLite database: store.Backup
// would report either only as a failure of its own (internal_error).
func checkBackupSource(db string) error {
	const hint = "is --data-dir (or TETHER_DATA_DIR) the daemon's data directory? (A daemon on PostgreSQL is backed up with PostgreSQL's tools.)"
	fi, err := os.Stat(db)
	if err != nil {
		return errcode.New(backupNoDatabase, "no database at %s (%s): %s", db, reason(err), hint)
	}
	if !fi.Mode().IsRegular() {
		return errcode.New(backupNoDatabase, "no database at %s (it is not a file): %s", db, hint)
	}
	f, err := os.Open(db)
	if err != nil {
		return errcode.New(backupNoDatabase, "cannot read the database %s (%s)", db, reason(err))
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	// An empty file is what SQLite itself makes of a database nothing was
	// written to yet; anything else must start as SQLite files do.
	if n > 0 && (err != nil || !bytes.Equal(head, sqliteMagic)) {
		return errcode.New(backupNotADatabase, "%s is not an SQLite database: is --data-dir (or TETHER_DATA_DIR) the daemon's data directory?", db)
	}
	return nil
}

// checkBackupOutput refuses an OUTPUT that cannot become the backup, before
// anything is written: an existing file without force, a directory, a path
// whose directory is missing, and the database or its -wal/-shm file under
// any name (a symlinked directory, a hard link), which force would delete.
func checkBackupOutput(db, out string, force bool) error {
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		if filepath.Clean(f) == filepath.Clean(out) {
			return errcode.New(backupOutputInvalid, "%s is the database's own file: name a file outside the data directory", out)
		}
		if same(f, out) {
			return errcode.New(backupOutputInvalid, "%s is the database's own file %s under another name: name a file outside the data directory", out, f)
		}
	}
	fi, err := os.Lstat(out)
	switch {
	case err == nil && fi.IsDir():
		return errcode.New(backupOutputInvalid, "%s is a directory: name the backup file, e.g. %s", out, filepath.Join(out, "tether-backup.db"))
	case err == nil && !force:
		return errcode.New(backupOutputExists, "%s already exists (pass --force to replace it)", out)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return errcode.New(backupOutputInvalid, "cannot write %s (%s)", out, reason(err))
	}
	dir := filepath.Dir(out)
	if di, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return errcode.New(backupOutputInvalid, "cannot create %s: its directory %s does not exist", out, dir)
	} else if err != nil {
		return errcode.New(backupOutputInvalid, "cannot create %s (%s)", out, reason(err))
	} else if !di.IsDir() {
		return errcode.New(backupOutputInvalid, "cannot create %s: %s is not a directory", out, dir)
	}
	return nil
}

// same reports whether paths a and b both exist and are one file.
func same(a, b string) bool {
	ai, err := os.Stat(a)
	if err != nil {
		return false
	}
	bi, err := os.Stat(b)
	return err == nil && os.SameFile(ai, bi)
}

// reason is an OS error without the operation and path its message
// repeats ("no such file or directory", not "stat /x/y: no such file ...").
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return strings.TrimSpace(err.Error())
}
