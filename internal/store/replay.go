package store

import (
	"context"
	"database/sql"
)

// The replay read: what a reconnecting stream reads of a session's log,
// hundreds of thousands of rows a second. It selects only what a frame
// needs (seq, type, payload: every column costs the driver a few cgo calls
// a row), runs a statement prepared once on the read pool, and hands rows
// to a callback in reused buffers instead of building an Event slice, so
// a row costs no allocation of its own beyond the driver's.

// replaySQL reads a session's events after a seq, in seq order.
const replaySQL = `SELECT seq, type, payload FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`

// ReplayRow is one event as ScanSessionEvents hands it over. Payload is
// the stored JSON, aliasing a buffer the next row overwrites: it is valid
// only during the callback.
type ReplayRow struct {
	Seq     int64
	Type    string
	Payload []byte
}

// ScanSessionEvents calls fn with up to limit events of a session with
// seq > after, in seq order, until fn returns false, and reports how many
// rows it read. The read is one statement, so fn should only buffer: the
// statement's snapshot stays open until it returns.
func (s *Store) ScanSessionEvents(ctx context.Context, sessionID string, after int64, limit int, fn func(ReplayRow) bool) (int, error) {
	const op = "scan session events"
	if err := ctx.Err(); err != nil {
		return 0, internal(err, op)
	}
	// WithoutCancel: with a cancellable context the driver starts a
	// goroutine per row; a page is bounded by limit and callers check ctx
	// between pages.
	qctx := context.WithoutCancel(ctx)
	var (
		rows *sql.Rows
		err  error
	)
	if s.replay != nil {
		rows, err = s.replay.QueryContext(qctx, sessionID, after, limit)
	} else {
		rows, err = s.rdb.WithContext(qctx).Raw(replaySQL, sessionID, after, limit).Rows()
	}
	if err != nil {
		return 0, internal(err, op)
	}
	defer rows.Close()
	s.stmts.Add(1)
	var (
		row      ReplayRow
		typ, pay sql.RawBytes
		// types interns the few event type names: no string per row.
		types = map[string]string{}
		n     int
	)
	for rows.Next() {
		if err := rows.Scan(&row.Seq, &typ, &pay); err != nil {
			return n, internal(err, op)
		}
		n++
		t, ok := types[string(typ)]
		if !ok {
			t = string(typ)
			types[t] = t
		}
		row.Type, row.Payload = t, pay
		if !fn(row) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return n, internal(err, op)
	}
	return n, nil
}
