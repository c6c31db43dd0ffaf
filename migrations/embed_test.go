package migrations_test

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
	"github.com/pressly/goose/v3"

	"github.com/tether/tether/migrations"
)

// TestFilesAreWellFormed guards the conventions goose and reviewers rely on:
// numbered names without gaps, and both directions present.
func TestFilesAreWellFormed(t *testing.T) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("got no embedded migrations, want at least one")
	}
	re := regexp.MustCompile(`^(\d{5})_[a-z0-9_]+\.sql$`)
	for i, name := range names { // fs.Glob returns names sorted
		m := re.FindStringSubmatch(name)
		if m == nil {
			t.Errorf("migration %q: got a name not matching %s", name, re)
			continue
		}
		if v, _ := strconv.Atoi(m[1]); v != i+1 {
			t.Errorf("migration %q: got version %d, want %d (no gaps)", name, v, i+1)
		}
		body, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, marker := range []string{"-- +goose Up", "-- +goose Down"} {
			if !strings.Contains(string(body), marker) {
				t.Errorf("migration %q: missing %q", name, marker)
			}
		}
	}
}

// TestUpDownUp checks that every Down undoes its Up completely, so a
// migration can be re-applied after a rollback.
func TestUpDownUp(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "m.db")+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("first up: %v", err)
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down: %v", err)
	}
	var n int
	if err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type IN ('table','index') AND name NOT LIKE 'goose_%' AND name NOT LIKE 'sqlite_%'`).
		Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("after down: got %d tables/indexes left, want 0", n)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("second up: %v", err)
	}
}
