package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
)

// TestIsUnavailable: a database that cannot be reached is told apart from
// a statement it refused, and from a caller that gave up.
func TestIsUnavailable(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"reset, wrapped", fmt.Errorf("query: %w", syscall.ECONNRESET), true},
		{"unexpected EOF", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), true},
		{"connection exception 08006", &pgconn.PgError{Code: "08006"}, true},
		{"admin shutdown 57P01", &pgconn.PgError{Code: "57P01"}, true},
		{"cannot connect now 57P03", &pgconn.PgError{Code: "57P03"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"context deadline", context.DeadlineExceeded, false},
		{"context cancelled, wrapped", fmt.Errorf("query: %w", context.Canceled), false},
		{"a plain error", errors.New("no such table: x"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := store.IsUnavailable(tc.err); got != tc.want {
				t.Errorf("IsUnavailable(%v): got %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestUnreachableDatabaseIsDatabaseUnavailable: a read of a PostgreSQL
// store whose server went away fails with database_unavailable and a
// retry hint, not an internal error.
func TestUnreachableDatabaseIsDatabaseUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = store.OpenPostgres(context.Background(), "postgres://tether:tether@"+addr+"/nothing?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("open: got nil error, want the database unavailable")
	}
	if !store.IsUnavailable(err) && !errcode.Is(err, errcode.DatabaseUnavailable) {
		t.Errorf("open of an unreachable server: got %v (code %s), want it told as unavailable", err, errcode.CodeOf(err))
	}
}
