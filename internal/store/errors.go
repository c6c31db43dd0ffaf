package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
	"gorm.io/gorm"

	"github.com/tether/tether/internal/errcode"
)

// internal translates any error into an *errcode.Error. Domain errors pass
// through unchanged; everything else becomes errcode.Internal with the cause
// kept as the hidden Err (for logs, and so errors.Is still sees
// context.Canceled) and out of the client-visible message.
func internal(err error, op string) error {
	var e *errcode.Error
	if errors.As(err, &e) {
		return err
	}
	if IsBusy(err) {
		busyErrors.Add(1)
	}
	if IsUnavailable(err) {
		return errcode.Wrap(errcode.DatabaseUnavailable, err, "the database cannot be reached (store: %s); try again", op).With("retryAfter", 2)
	}
	return errcode.Wrap(errcode.Internal, err, "store: %s", op)
}

// IsUnavailable reports whether err says the database could not be
// reached, or the connection to it broke (PostgreSQL down, restarting or
// cut off: refused, reset, closed, a connection exception), as opposed
// to a statement it refused: the same statement may succeed once it is
// back. A context's end is not unavailability, though it also looks like
// a network timeout.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	switch code := pgCode(err); {
	case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03":
		return true // connection exception, admin/crash shutdown, cannot connect now
	case code != "":
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, driver.ErrBadConn) || pgconn.SafeToRetry(err) ||
		strings.Contains(err.Error(), "conn closed")
}

// internalIf is internal(err, op), and nil for a nil err.
func internalIf(err error, op string) error {
	if err == nil {
		return nil
	}
	return internal(err, op)
}

// busyErrors counts SQLITE_BUSY and SQLITE_LOCKED errors the store has
// seen, process-wide (every Store of this binary), for /metrics. Each one
// is a statement that still found the database locked after the
// connection's busy timeout had waited.
var busyErrors atomic.Int64

// BusyErrors returns how many "database is locked" (SQLITE_BUSY or
// SQLITE_LOCKED) errors the store has returned since start.
func BusyErrors() int64 { return busyErrors.Load() }

// IsBusy reports whether err is, or wraps, SQLITE_BUSY or SQLITE_LOCKED,
// or PostgreSQL's equivalents (a serialization failure, a deadlock, a lock
// not available): the database was contended, and a retry may succeed.
func IsBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	switch pgCode(err) {
	case pgSerialization, pgDeadlock, pgLockNotAvailable:
		return true
	}
	return false
}

// isNotFound reports gorm's "no row" outcome of First/Take.
func isNotFound(err error) bool { return errors.Is(err, gorm.ErrRecordNotFound) }

// isUniqueViolation reports a PRIMARY KEY or UNIQUE constraint failure.
func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return pgCode(err) == pgUniqueViolation
	}
	return se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey ||
		se.ExtendedCode == sqlite3.ErrConstraintUnique
}

// isForeignKeyViolation reports a FOREIGN KEY constraint failure, which on
// insert means the parent row (task or session) does not exist.
func isForeignKeyViolation(err error) bool {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return pgCode(err) == pgForeignKeyViolation
	}
	return se.ExtendedCode == sqlite3.ErrConstraintForeignKey
}

// notFound builds the not-found error of one kind of record; the id is also
// a detail so clients need not parse the message.
func notFound(code errcode.Code, what, id string) error {
	return errcode.New(code, "%s %q not found", what, id).With("id", id)
}

// sessionNotFound is the most common notFound; a helper keeps call sites short.
func sessionNotFound(id string) error {
	return notFound(errcode.SessionNotFound, "session", id)
}
