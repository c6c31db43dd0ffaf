// Package storetest opens stores for tests on the database the run asks
// for: TETHER_TEST_DATABASE=postgres runs a package's store-backed tests on
// PostgreSQL (a fresh database each, on the server
// TETHER_TEST_POSTGRES_URL names), anything else on SQLite in a temp dir.
// `make test` runs the store, events, sessions, server and crash suites
// both ways.
package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "github.com/mattn/go-sqlite3"    // the "sqlite3" driver

	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/testbin"
)

// BackendEnv names the variable that picks the backend.
const BackendEnv = "TETHER_TEST_DATABASE"

// Postgres reports whether this run's stores are PostgreSQL's.
func Postgres() bool { return os.Getenv(BackendEnv) == "postgres" }

// URL is a database for one test: a fresh PostgreSQL database's URL, or
// "" on SQLite (the daemon then keeps its file in its data dir).
func URL(tb testing.TB) string {
	tb.Helper()
	if !Postgres() {
		return ""
	}
	return testbin.FreshPostgres(tb)
}

// databases maps a data dir to its PostgreSQL database, so that a test
// that reopens a dir (a daemon restarted on it) finds its data again.
var databases sync.Map

// Open opens the store of dir on this run's backend and closes it when tb
// ends: the SQLite file in dir ("" for a temp dir), or on PostgreSQL the
// database that stands for dir, made fresh the first time dir is opened.
func Open(tb testing.TB, dir string) *store.Store {
	tb.Helper()
	ctx := context.Background()
	var s *store.Store
	var err error
	if Postgres() {
		url, ok := "", false
		if dir != "" {
			var v any
			if v, ok = databases.Load(dir); ok {
				url = v.(string)
			}
		}
		if !ok {
			url = testbin.FreshPostgres(tb)
			if dir != "" {
				databases.Store(dir, url)
				tb.Cleanup(func() { databases.Delete(dir) })
			}
		}
		s, err = store.OpenPostgres(ctx, url)
	} else {
		if dir == "" {
			dir = tb.TempDir()
		}
		s, err = store.Open(ctx, filepath.Join(dir, "tether.db"))
	}
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// Exec runs SQL on dir's database behind its store's back (as an edit
// while tetherd is stopped would): on SQLite the file in dir, on
// PostgreSQL the database Open made for dir. Placeholders are ?.
func Exec(tb testing.TB, dir, query string, args ...any) {
	tb.Helper()
	db := raw(tb, dir)
	defer db.Close()
	if Postgres() {
		query = dollars(query)
	}
	if _, err := db.Exec(query, args...); err != nil {
		tb.Fatalf("exec %q: %v", query, err)
	}
}

// Fault makes dir's database refuse the writes that match event on table
// (e.g. "UPDATE OF state", "INSERT") and when (an SQL condition on NEW),
// with an error, as a full disk or a violated constraint would, on either
// backend; remove takes the fault away.
func Fault(tb testing.TB, dir, name, event, table, when string) (remove func()) {
	tb.Helper()
	db := raw(tb, dir)
	tb.Cleanup(func() { _ = db.Close() })
	create := []string{fmt.Sprintf(`CREATE TRIGGER %s BEFORE %s ON %s WHEN %s BEGIN SELECT RAISE(ABORT, 'injected fault'); END`,
		name, event, table, when)}
	drop := []string{"DROP TRIGGER " + name}
	if Postgres() {
		create = []string{
			fmt.Sprintf(`CREATE FUNCTION %s_fn() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$ LANGUAGE plpgsql`, name),
			fmt.Sprintf(`CREATE TRIGGER %s BEFORE %s ON %s FOR EACH ROW WHEN (%s) EXECUTE FUNCTION %s_fn()`, name, event, table, when, name),
		}
		drop = []string{fmt.Sprintf("DROP TRIGGER %s ON %s", name, table), fmt.Sprintf("DROP FUNCTION %s_fn()", name)}
	}
	for _, q := range create {
		if _, err := db.Exec(q); err != nil {
			tb.Fatalf("inject a write failure: %v", err)
		}
	}
	return func() {
		for _, q := range drop {
			if _, err := db.Exec(q); err != nil {
				tb.Fatalf("remove the write failure: %v", err)
			}
		}
	}
}

// DB opens dir's database behind its store's back (a benchmark's
// baseline: a query the store no longer makes), on either backend; it
// closes with tb. Placeholders are the backend's (Rebind makes them).
func DB(tb testing.TB, dir string) *sql.DB {
	tb.Helper()
	db := raw(tb, dir)
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// Rebind is query, written with ? placeholders, for this run's backend.
func Rebind(query string) string {
	if Postgres() {
		return dollars(query)
	}
	return query
}

// raw opens dir's database directly.
func raw(tb testing.TB, dir string) *sql.DB {
	tb.Helper()
	driver, dsn := "sqlite3", "file:"+filepath.Join(dir, "tether.db")+"?_busy_timeout=5000"
	if Postgres() {
		v, ok := databases.Load(dir)
		if !ok {
			tb.Fatalf("no PostgreSQL database was opened for %s", dir)
		}
		driver, dsn = "pgx", v.(string)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// dollars rewrites ? placeholders as PostgreSQL's $1, $2, ...
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
