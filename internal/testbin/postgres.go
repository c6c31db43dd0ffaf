package testbin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PostgresEnv names the variable that gives tests a PostgreSQL server: a
// URL whose role may create databases (.ci/run sets it). Each test gets a
// database of its own on it.
const PostgresEnv = "TETHER_TEST_POSTGRES_URL"

// KeepFailedEnv, when set, keeps the database of a test that failed (its
// name is logged) for a look at what it held.
const KeepFailedEnv = "TETHER_TEST_KEEP_FAILED_DB"

// PostgresURL is the server's admin URL, or "" when none is configured.
// Under CI a missing server fails the test instead: the PostgreSQL half of
// the suite must never be skipped silently there.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(PostgresEnv)
	if u == "" && os.Getenv("CI") == "true" {
		tb.Fatalf("%s is not set: CI runs every store test on PostgreSQL too (.ci/run starts it)", PostgresEnv)
	}
	return u
}

// FreshPostgres creates an empty database on the server PostgresURL names
// and returns its URL; it is dropped when tb ends. It skips tb when no
// server is configured (outside CI).
func FreshPostgres(tb testing.TB) string {
	tb.Helper()
	admin := PostgresURL(tb)
	if admin == "" {
		tb.Skipf("no PostgreSQL server: set %s (e.g. postgres://tether:tether@127.0.0.1:5432/tether_test?sslmode=disable)", PostgresEnv)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "tether_t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("connect to %s: %v", PostgresEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if tb.Failed() && os.Getenv(KeepFailedEnv) != "" {
			tb.Logf("%s: kept database %s of the failed test", KeepFailedEnv, name)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		// FORCE may meet an autovacuum worker on the database, which a
		// role without pg_signal_backend may not terminate (42501); the
		// worker ends within moments, so the drop is tried again.
		for attempt := 0; ; attempt++ {
			_, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			if err == nil {
				return
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" || attempt >= 50 {
				tb.Errorf("drop database %s: %v", name, err)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("%s: %v", PostgresEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}
