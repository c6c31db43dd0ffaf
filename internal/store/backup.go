package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/mattn/go-sqlite3"
	"gorm.io/gorm"

	"github.com/tether/tether/internal/errcode"
)

// backupMarker is the meta key a backup copy carries: the time it was
// taken. A daemon that opens a database with it knows the database was
// restored from a backup and is older than what clients may have seen.
const backupMarker = "backup_taken_at"

// BackupInfo describes a finished backup.
type BackupInfo struct {
	Path     string
	Bytes    int64
	Sessions int64
	Events   int64
	TakenAt  time.Time
	Took     time.Duration
}

// Backup writes a consistent copy of the database at src to dst with
// SQLite's online backup API. It is safe while a daemon runs on src and
// keeps writing: the copy is made in one step, inside one read
// transaction, so it is the database as of one commit, and in WAL mode
// that read never blocks the daemon's writer. dst is created 0600; an
// existing dst is an error unless overwrite is set. The copy is checked
// with PRAGMA integrity_check and carries a marker (see Open) so that a
// daemon started on it after a restore changes every event epoch.
func Backup(ctx context.Context, src, dst string, overwrite bool) (BackupInfo, error) {
	begin := time.Now()
	srcAbs, err := filepath.Abs(src)
	if err != nil {
		return BackupInfo{}, errcode.Wrap(errcode.Internal, err, "backup: resolve %q", src)
	}
	dstAbs, err := filepath.Abs(dst)
	if err != nil {
		return BackupInfo{}, errcode.Wrap(errcode.Internal, err, "backup: resolve %q", dst)
	}
	if fi, err := os.Stat(srcAbs); err != nil || !fi.Mode().IsRegular() {
		return BackupInfo{}, errcode.New(errcode.Internal, "backup: no database at %s", srcAbs)
	}
	if srcAbs == dstAbs {
		return BackupInfo{}, errcode.New(errcode.Internal, "backup: the output is the database itself")
	}
	if err := createBackupFile(dstAbs, overwrite); err != nil {
		return BackupInfo{}, err
	}
	ok := false
	defer func() {
		if !ok { // leave no half-written copy that looks like a backup
			for _, p := range append([]string{dstAbs}, sidecarPaths(dstAbs)...) {
				_ = os.Remove(p)
			}
		}
	}()
	srcDB, err := sql.Open("sqlite3", backupDSN(srcAbs))
	if err != nil {
		return BackupInfo{}, errcode.Wrap(errcode.Internal, err, "backup: open %s", srcAbs)
	}
	defer srcDB.Close()
	dstDB, err := sql.Open("sqlite3", backupDSN(dstAbs))
	if err != nil {
		return BackupInfo{}, errcode.Wrap(errcode.Internal, err, "backup: open %s", dstAbs)
	}
	defer dstDB.Close()
	if err := copyDatabase(ctx, srcDB, dstDB); err != nil {
		return BackupInfo{}, err
	}
	info := BackupInfo{Path: dstAbs, TakenAt: time.Now().UTC()}
	if err := finishBackup(ctx, dstDB, &info); err != nil {
		return BackupInfo{}, err
	}
	if err := dstDB.Close(); err != nil {
		return BackupInfo{}, errcode.Wrap(errcode.Internal, err, "backup: close %s", dstAbs)
	}
	fi, err := os.Stat(dstAbs)
	if err != nil {
		return BackupInfo{}, errcode.Wrap(errcode.Internal, err, "backup: stat %s", dstAbs)
	}
	info.Bytes, info.Took, ok = fi.Size(), time.Since(begin), true
	return info, nil
}

// createBackupFile creates dst empty with mode 0600 (SQLite then gives its
// journal the same mode), refusing an existing file unless overwrite.
func createBackupFile(dst string, overwrite bool) error {
	if overwrite {
		for _, p := range append([]string{dst}, sidecarPaths(dst)...) {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return errcode.Wrap(errcode.Internal, err, "backup: replace %s", p)
			}
		}
	}
	f, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL, dbFileMode)
	if errors.Is(err, fs.ErrExist) {
		return errcode.New(errcode.Internal, "backup: %s already exists (pass --force to replace it)", dst)
	}
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "backup: create %s", dst)
	}
	return f.Close()
}

// copyDatabase runs the backup in one step (-1: all pages), so the copy is
// one consistent snapshot; a step that finds the source busy (a
// checkpoint, a WAL recovery) is retried until ctx ends.
func copyDatabase(ctx context.Context, srcDB, dstDB *sql.DB) error {
	srcConn, err := srcDB.Conn(ctx)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "backup: connect to the database")
	}
	defer srcConn.Close()
	dstConn, err := dstDB.Conn(ctx)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "backup: connect to the copy")
	}
	defer dstConn.Close()
	err = dstConn.Raw(func(d any) error {
		return srcConn.Raw(func(s any) error {
			dc, ok1 := d.(*sqlite3.SQLiteConn)
			sc, ok2 := s.(*sqlite3.SQLiteConn)
			if !ok1 || !ok2 {
				return fmt.Errorf("driver connections are %T and %T, want *sqlite3.SQLiteConn", d, s)
			}
			b, err := dc.Backup("main", sc, "main")
			if err != nil {
				return err
			}
			for {
				done, err := b.Step(-1)
				if err != nil || done {
					return errors.Join(err, b.Finish())
				}
				select {
				case <-ctx.Done():
					return errors.Join(ctx.Err(), b.Finish())
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	})
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "backup: copy pages")
	}
	return nil
}

// finishBackup marks the copy as a backup, checks its integrity and counts
// what it holds.
func finishBackup(ctx context.Context, db *sql.DB, info *BackupInfo) error {
	if _, err := db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, backupMarker, info.TakenAt.Format(time.RFC3339Nano)); err != nil {
		return errcode.Wrap(errcode.Internal, err, "backup: mark the copy (is the source a tetherd database?)")
	}
	var check string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil {
		return errcode.Wrap(errcode.Internal, err, "backup: integrity check")
	}
	if check != "ok" {
		return errcode.New(errcode.Internal, "backup: integrity check of the copy failed: %s", check)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sessions`).Scan(&info.Sessions); err != nil {
		return errcode.Wrap(errcode.Internal, err, "backup: count sessions")
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&info.Events); err != nil {
		return errcode.Wrap(errcode.Internal, err, "backup: count events")
	}
	return nil
}

// backupDSN opens an existing database file (mode rw never creates one).
func backupDSN(abs string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	q := url.Values{}
	q.Set("mode", "rw")
	q.Set("_busy_timeout", "5000")
	u.RawQuery = q.Encode()
	return u.String()
}

// adoptRestoredBackup runs at Open. A database carrying the backup marker
// was restored from a backup: clients may hold cursors past its end, or
// cursors of events that the restored history numbers differently, and
// with unchanged epochs they would resume as if nothing happened, missing
// or mis-reading events. So every session's epoch and the global epoch
// change (clients get resync_required and reload their snapshot), once:
// the marker goes in the same transaction.
func adoptRestoredBackup(ctx context.Context, gdb *gorm.DB) error {
	var takenAt string
	err := scanRow(gdb.WithContext(ctx).Raw(`SELECT value FROM meta WHERE key = ?`, backupMarker), &takenAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: read backup marker")
	}
	var sessions int64
	err = gdb.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE sessions SET event_epoch = lower(hex(randomblob(16)))`)
		if res.Error != nil {
			return res.Error
		}
		sessions = res.RowsAffected
		if err := tx.Exec(`UPDATE meta SET value = lower(hex(randomblob(8))) WHERE key = 'global_epoch'`).Error; err != nil {
			return err
		}
		return tx.Exec(`DELETE FROM meta WHERE key = ?`, backupMarker).Error
	})
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: new epochs for a restored backup")
	}
	slog.Warn("store: database restored from a backup; every event epoch changed, clients resync from a snapshot",
		"backupTakenAt", takenAt, "sessions", sessions)
	return nil
}
