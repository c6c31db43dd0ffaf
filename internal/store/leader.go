package store

import (
	"context"
	"database/sql"
)

// Leadership is a role one node of several holds at a time (delivering
// webhooks): a PostgreSQL session-level advisory lock on a connection
// kept for it, so it goes with the node's connection (a node that dies
// or loses the database lets it go at once). On SQLite the one daemon
// always holds it.
type Leadership struct {
	conn *sql.Conn
	key  int64
}

// TryLead takes the role named key if no other node holds it; nil, nil
// when one does.
func (s *Store) TryLead(ctx context.Context, key int64) (*Leadership, error) {
	if s.dialect != DialectPostgres {
		return &Leadership{}, nil
	}
	db, err := s.db.DB()
	if err != nil {
		return nil, internal(err, "lead")
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, wrapErr(err, "lead")
	}
	var held bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, $2)`, leaderLockClass, key).Scan(&held); err != nil {
		_ = conn.Close()
		return nil, wrapErr(err, "lead")
	}
	if !held {
		_ = conn.Close()
		return nil, nil
	}
	return &Leadership{conn: conn, key: key}, nil
}

// leaderLockClass is the first key of the leadership advisory locks.
const leaderLockClass = 0x7e7e0003

// Held reports whether the role is still this node's: its connection
// answers (a lost connection lost the lock with it).
func (l *Leadership) Held(ctx context.Context) bool {
	if l.conn == nil {
		return true
	}
	return l.conn.PingContext(ctx) == nil
}

// Release gives the role up.
func (l *Leadership) Release() {
	if l.conn == nil {
		return
	}
	// Closing a pooled conn returns it to the pool, lock and all: unlock
	// first.
	_, _ = l.conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1, $2)`, leaderLockClass, l.key)
	_ = l.conn.Close()
}
