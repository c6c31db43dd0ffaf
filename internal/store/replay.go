package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"strconv"
	"sync"

	"github.com/mattn/go-sqlite3"
)

// The replay read: what a reconnecting stream reads of a session's log,
// hundreds of thousands of rows a second. go-sqlite3 costs a few cgo calls
// per row and column (measured: 1.7 of the 2.6 µs a row cost), so a page is
// read as one value: SQLite concatenates the page's rows into one blob
// (pageSQL), which comes back in one call and is cut into rows here,
// their payloads pointing into it. The blob is bounded: the page
// connections refuse a value past replayPageBytes (SQLITE_LIMIT_LENGTH),
// and a page that large — a few huge payloads — is read row by row
// instead (rowsSQL), as is one that does not cut into its rows. Either
// way the caller gets the same rows.

// rowsSQL reads a session's events after a seq, in seq order: seq, type
// and payload only, what a frame needs.
const rowsSQL = `SELECT seq, type, payload FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`

// pageSQL is rowsSQL as one blob: the rows in seq order (the subquery's;
// group_concat keeps it), each its seq, unit separator (0x1F), type, unit
// separator and payload, separated by record separators (0x1E), with the
// row count and the last seq beside it. Neither separator can occur in a
// type or in valid JSON (the payload column's CHECK), outside a string or
// in one, where control characters are escaped.
const pageSQL = `SELECT count(*), coalesce(max(seq), 0), CAST(group_concat(seq || char(31) || type || char(31) || payload, char(30)) AS BLOB)
FROM (` + rowsSQL + `)`

// replayPageBytes bounds a page's blob (and so the memory one replay page
// takes): past it SQLite fails the page with SQLITE_TOOBIG.
const replayPageBytes = 8 << 20

// replayConns is how many page reads run at once; more replays wait for
// a connection (a page of 4,000 rows reads in a few milliseconds).
const replayConns = 2

// replayDriver is go-sqlite3 with the page connections' length limit.
const replayDriver = "sqlite3-tether-replay"

var registerReplayDriver = sync.OnceFunc(func() {
	sql.Register(replayDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		c.SetLimit(sqlite3.SQLITE_LIMIT_LENGTH, replayPageBytes)
		return nil
	}})
})

// replayer holds the replay's statements: rows on the read pool, pages on
// a small pool of its own (the length limit would refuse a large value to
// any other read).
type replayer struct {
	rows, pages *sql.Stmt
	pagesDB     *sql.DB
}

// openReplayer prepares the replay statements; abs is the database path.
func openReplayer(ctx context.Context, abs string, readDB *sql.DB) (*replayer, error) {
	rows, err := readDB.PrepareContext(ctx, rowsSQL)
	if err != nil {
		return nil, internal(err, "prepare replay")
	}
	registerReplayDriver()
	db, err := sql.Open(replayDriver, readDSN(abs))
	if err != nil {
		_ = rows.Close()
		return nil, internal(err, "open replay pool")
	}
	db.SetMaxOpenConns(replayConns)
	db.SetMaxIdleConns(replayConns)
	pages, err := db.PrepareContext(ctx, pageSQL)
	if err != nil {
		_ = rows.Close()
		_ = db.Close()
		return nil, internal(err, "prepare replay page")
	}
	return &replayer{rows: rows, pages: pages, pagesDB: db}, nil
}

func (r *replayer) close() {
	_ = r.rows.Close()
	_ = r.pages.Close()
	_ = r.pagesDB.Close()
}

// ReplaySessionEvents reads up to limit events of a session with seq >
// after, in seq order: the page a reconnecting stream replays. Only
// SessionID, Seq, Type and Payload are set (what a frame needs); the
// payloads share one buffer that belongs to the caller.
func (s *Store) ReplaySessionEvents(ctx context.Context, sessionID string, after int64, limit int) ([]Event, error) {
	const op = "replay session events"
	if err := ctx.Err(); err != nil {
		return nil, internal(err, op)
	}
	// WithoutCancel: with a cancellable context the driver starts a
	// goroutine per row; a page is bounded by limit and callers check ctx
	// between pages.
	qctx := context.WithoutCancel(ctx)
	if s.replay == nil { // a Store bound to a transaction
		rows, err := s.rdb.WithContext(qctx).Raw(rowsSQL, sessionID, after, limit).Rows()
		if err != nil {
			return nil, internal(err, op)
		}
		return s.replayRows(rows, sessionID)
	}
	evs, err := s.replayPage(qctx, sessionID, after, limit)
	var serr sqlite3.Error
	if errors.Is(err, errPageUnreadable) || errors.As(err, &serr) && serr.Code == sqlite3.ErrTooBig {
		rows, err := s.replay.rows.QueryContext(qctx, sessionID, after, limit)
		if err != nil {
			return nil, internal(err, op)
		}
		return s.replayRows(rows, sessionID)
	}
	if err != nil {
		return nil, internal(err, op)
	}
	return evs, nil
}

// errPageUnreadable is a page blob that does not cut into the rows it
// counts (a payload holding a separator, which valid JSON cannot): the
// page is read row by row instead.
var errPageUnreadable = errors.New("replay page does not cut into its rows")

// replayPage is ReplaySessionEvents reading the page as one blob.
func (s *Store) replayPage(ctx context.Context, sessionID string, after int64, limit int) ([]Event, error) {
	var (
		count int
		last  int64
		blob  []byte // a copy: the driver's buffer is not ours to keep
	)
	if err := s.replay.pages.QueryRowContext(ctx, sessionID, after, limit).Scan(&count, &last, &blob); err != nil {
		return nil, err
	}
	s.stmts.Add(1)
	evs := make([]Event, 0, count)
	types := map[string]string{}
	for len(blob) > 0 {
		e, rest, ok := cutPageRow(blob, types)
		if !ok {
			return nil, errPageUnreadable
		}
		e.SessionID = sessionID
		evs = append(evs, e)
		blob = rest
	}
	if len(evs) != count || (count > 0 && evs[count-1].Seq != last) {
		return nil, errPageUnreadable
	}
	return evs, nil
}

// cutPageRow cuts the first row off a page blob (see pageSQL), interning
// its type in types.
func cutPageRow(b []byte, types map[string]string) (Event, []byte, bool) {
	var e Event
	row, rest := b, []byte(nil)
	if i := bytes.IndexByte(b, pageRowEnd); i >= 0 {
		row, rest = b[:i], b[i+1:]
	}
	seq, row, ok := bytes.Cut(row, []byte{pageFieldEnd})
	if !ok {
		return e, nil, false
	}
	typ, payload, ok := bytes.Cut(row, []byte{pageFieldEnd})
	if !ok {
		return e, nil, false
	}
	var err error
	if e.Seq, err = strconv.ParseInt(string(seq), 10, 64); err != nil {
		return e, nil, false
	}
	t, known := types[string(typ)]
	if !known {
		t = string(typ)
		types[t] = t
	}
	e.Type, e.Payload = t, payload[:len(payload):len(payload)]
	return e, rest, true
}

// The page blob's separators (pageSQL).
const (
	pageRowEnd   = 0x1e
	pageFieldEnd = 0x1f
)

// replayRows is ReplaySessionEvents reading row by row.
func (s *Store) replayRows(rows *sql.Rows, sessionID string) ([]Event, error) {
	const op = "replay session events"
	defer rows.Close()
	s.stmts.Add(1)
	var (
		evs      []Event
		typ, pay sql.RawBytes
		types    = map[string]string{}
	)
	for rows.Next() {
		e := Event{SessionID: sessionID}
		if err := rows.Scan(&e.Seq, &typ, &pay); err != nil {
			return nil, internal(err, op)
		}
		e.Payload = bytes.Clone(pay)
		t, ok := types[string(typ)]
		if !ok {
			t = string(typ)
			types[t] = t
		}
		e.Type = t
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return nil, internal(err, op)
	}
	return evs, nil
}
