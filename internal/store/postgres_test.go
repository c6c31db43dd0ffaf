package store_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/testbin"
	"github.com/tether/tether/migrations"
)

// TestPostgresRefusesNewerDatabase: a PostgreSQL database a newer tetherd
// migrated is refused, as a SQLite file is, and names what to do.
func TestPostgresRefusesNewerDatabase(t *testing.T) {
	url := testbin.FreshPostgres(t)
	ctx := context.Background()
	s, err := store.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(migrations.Postgres, "postgres/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("embedded PostgreSQL migrations: got %v, %v", names, err)
	}
	future := len(names) + 3
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, future); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)
	s, err = store.OpenPostgres(ctx, url)
	if err == nil {
		_ = s.Close()
		t.Fatal("Open of a newer database: got nil error, want database_too_new")
	}
	if !errcode.Is(err, errcode.DatabaseTooNew) {
		t.Errorf("got %v, want database_too_new", err)
	}
}

// TestPostgresURLs: what --database accepts as PostgreSQL, and that a
// password never reaches an error message.
func TestPostgresURLs(t *testing.T) {
	cases := []struct {
		name, url string
		postgres  bool
	}{
		{"postgres scheme", "postgres://u:p@h:5432/db", true},
		{"postgresql scheme", "postgresql://u@h/db", true},
		{"a file", "/var/lib/tether/tether.db", false},
		{"another scheme", "mysql://u:p@h/db", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := store.IsPostgresURL(tc.url); got != tc.postgres {
				t.Errorf("got %v, want %v", got, tc.postgres)
			}
		})
	}
	_, err := store.OpenPostgres(context.Background(), "postgres://tether:s3cret@127.0.0.1:1/none?connect_timeout=1")
	if err == nil || !errcode.Is(err, errcode.Internal) {
		t.Fatalf("an unreachable server: got %v, want an internal error", err)
	}
	var de *errcode.Error
	if !errors.As(err, &de) || strings.Contains(de.Message, "s3cret") {
		t.Errorf("the message shows the password: %v", err)
	}
}

// TestPostgresNodesStartTogether: nodes starting at once on a fresh
// database take turns at its migrations; every one opens it (two applying
// the same migration together collided on the functions it creates).
func TestPostgresNodesStartTogether(t *testing.T) {
	url := testbin.FreshPostgres(t)
	const nodes = 4
	errs := make(chan error, nodes)
	for range nodes {
		go func() {
			s, err := store.OpenPostgres(context.Background(), url)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Errorf("open on a fresh database with %d nodes starting at once: %v", nodes, err)
		}
	}
}
