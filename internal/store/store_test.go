package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
	"github.com/tether/tether/migrations"
)

// openStore opens a fresh store on this run's backend (storetest: SQLite
// in a temp dir, or a fresh PostgreSQL database) and closes it with the
// test.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	return storetest.Open(t, "")
}

// openStoreAt opens the store at path and closes it with the test.
func openStoreAt(t *testing.T, path string) (*store.Store, string) {
	t.Helper()
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

// rawDB opens the database file directly, bypassing the store, to inspect or
// corrupt it the way an operator (or another binary) could.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// wantCode fails unless err is an *errcode.Error with code want.
func wantCode(t *testing.T, err error, want errcode.Code) {
	t.Helper()
	var e *errcode.Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T), want *errcode.Error with code %s", err, err, want)
	}
	if e.Code != want {
		t.Fatalf("got code %s (%v), want %s", e.Code, err, want)
	}
}

// mustTask creates a task.
func mustTask(t *testing.T, s *store.Store) session.Task {
	t.Helper()
	task, err := s.CreateTask(context.Background(), session.Task{Title: "task", Workspace: "/tmp/ws"})
	if err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	return task
}

// mustSession creates a session (and its executor row) under taskID.
func mustSession(t *testing.T, s *store.Store, taskID string) session.Session {
	t.Helper()
	sess, err := s.CreateSession(context.Background(),
		session.Session{TaskID: taskID, AgentProfileID: "demo", Cwd: "/tmp/ws"}, session.Executor{})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return sess
}

// maxEmbeddedVersion counts the embedded migrations (versions are 1..n, see
// migrations.TestFilesAreWellFormed).
func maxEmbeddedVersion(t *testing.T) int64 {
	t.Helper()
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(names))
}

func TestOpenMigratesAndReopenIsIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "dir", "tether.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	task, err := s.CreateTask(ctx, session.Task{Title: "survives reopen"})
	if err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	info, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o700 {
		t.Errorf("data dir mode: got %o, want 700", got)
	}

	for i := range 2 { // reopening must neither fail nor re-apply anything
		s2, _ := openStoreAt(t, path)
		got, err := s2.GetTask(ctx, task.ID)
		if err != nil {
			t.Fatalf("reopen %d: GetTask: %v", i, err)
		}
		if got.Title != task.Title {
			t.Errorf("reopen %d: got title %q, want %q", i, got.Title, task.Title)
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
	}

	db := rawDB(t, path)
	var version, rows int64
	if err := db.QueryRow(`SELECT MAX(version_id), COUNT(*) FROM goose_db_version`).Scan(&version, &rows); err != nil {
		t.Fatal(err)
	}
	want := maxEmbeddedVersion(t)
	if version != want {
		t.Errorf("schema version: got %d, want %d", version, want)
	}
	if rows != want+1 { // goose's version-0 row plus one per migration
		t.Errorf("goose_db_version rows: got %d, want %d", rows, want+1)
	}
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode: got %q, want wal", mode)
	}
}

func TestOpenRefusesNewerDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tether.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	maxVersion := maxEmbeddedVersion(t)
	future := maxVersion + 6
	if _, err := rawDB(t, path).Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, future); err != nil {
		t.Fatal(err)
	}

	s, err = store.Open(context.Background(), path)
	if err == nil {
		_ = s.Close()
		t.Fatal("Open of a newer database: got nil error, want database_too_new")
	}
	wantCode(t, err, errcode.DatabaseTooNew)
	for _, want := range []string{
		fmt.Sprintf("schema version %d is newer", future),
		fmt.Sprintf("(max %d)", maxVersion),
		"--data-dir",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got message %q, want it to contain %q", err.Error(), want)
		}
	}
}

func TestOpenFailsOnUnusablePath(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := store.Open(context.Background(), filepath.Join(blocker, "tether.db"))
	wantCode(t, err, errcode.Internal)
}
