package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unsafe"

	"gorm.io/gorm"
)

// Event is one row of the durable event log.
type Event struct {
	// ID is the global id (commit order across the database).
	ID int64
	// SessionID and Seq are empty/zero for task-level events.
	SessionID string
	Seq       int64
	Type      string
	PromptID  string
	// Global marks events carried by the global stream as well.
	Global  bool
	Payload json.RawMessage
	Time    time.Time
	// HostOffset, for an event of a hosted session's host record, is the
	// record's absolute offset (Executor.HostOffset): the event commits
	// it. 0 for any other event. Written, never read back into Event.
	HostOffset uint64
}

// AppendEvents inserts events whose ID and Seq the caller (the single event
// writer) has already assigned. Multi-row statements keep group commits of
// thousands of events cheap. It is the writer's hot path: the statements
// are prepared on the pool at Open (prepareOnPool, so each connection
// compiles them once, not every transaction) and run through the
// connection directly, without gorm's callbacks and reflection.
func (s *Store) AppendEvents(ctx context.Context, evs []Event) error {
	bufp := eventArgs.Get().(*[]any)
	defer eventArgs.Put(bufp)
	conn := s.db.Statement.ConnPool
	for len(evs) > 0 {
		// Only a few statement shapes, so every batch hits a prepared one.
		// A statement's rows share one created_at (the writer gives a
		// transaction's events one time), bound once.
		n := statementRows(sameTime(evs), eventInsertSizes)
		batch := evs[:n]
		evs = evs[n:]
		// Text goes in as byte views the statement casts back to TEXT:
		// go-sqlite3 copies a string argument into a new []byte before
		// SQLite copies it again, a []byte it passes as it is.
		args := append((*bufp)[:0], batch[0].Time.UTC().AppendFormat(make([]byte, 0, len(timeLayout)), timeLayout))
		for _, e := range batch {
			var sid, seq, pid, off any
			if e.SessionID != "" {
				sid, seq = textBytes(e.SessionID), e.Seq
			}
			if e.PromptID != "" {
				pid = textBytes(e.PromptID)
			}
			if e.HostOffset != 0 {
				off = int64(e.HostOffset)
			}
			args = append(args, e.ID, sid, seq, textBytes(e.Type), pid, boolInt(e.Global), []byte(e.Payload), off)
		}
		start := time.Now()
		_, err := conn.ExecContext(context.WithoutCancel(ctx), bindFor(s.db, appendEventsSQL[n]), args...)
		if d := time.Since(start); d > slowQueryThreshold {
			// gorm's slow-query logger does not see statements run on the
			// connection directly.
			slog.Default().WarnContext(ctx, "store: slow query", "elapsed", d, "rows", n, "sql", "INSERT INTO events")
		}
		clear(args) // let the pooled buffer drop the payloads
		*bufp = args[:0]
		if err != nil {
			return internal(err, "append events")
		}
		s.stmts.Add(1)
	}
	return nil
}

// sameTime is how many of evs, from the first, have the first one's time.
func sameTime(evs []Event) int {
	for i := 1; i < len(evs); i++ {
		if !evs[i].Time.Equal(evs[0].Time) {
			return i
		}
	}
	return len(evs)
}

// eventInsertSizes are the row counts of the INSERT statements
// AppendEvents uses, largest first (a batch is cut into these).
var eventInsertSizes = []int{256, 64, 16, 4, 1}

// statementRows is how many of left rows the next multi-row INSERT takes:
// the largest of sizes (largest first, ending in 1) that fits.
func statementRows(left int, sizes []int) int {
	for _, size := range sizes {
		if left >= size {
			return size
		}
	}
	return 1
}

// appendEventsSQL maps a row count of eventInsertSizes to its statement.
var appendEventsSQL = func() map[int]string {
	m := map[int]string{}
	for _, n := range eventInsertSizes {
		m[n] = EventInsertSQL(n)
	}
	return m
}()

// EventInsertSQL is the n-row INSERT AppendEvents runs: ?1 is the
// statement's one created_at, then 8 arguments a row (id, session_id,
// seq, type, prompt_id, is_global, payload, host_offset), the text ones cast to TEXT
// from the bytes AppendEvents binds. Exported for the raw-SQLite baseline
// of the ingest benchmark, which must run the same statements.
func EventInsertSQL(n int) string {
	var sb strings.Builder
	sb.WriteString("INSERT INTO events (id, session_id, seq, type, prompt_id, is_global, payload, host_offset, created_at) VALUES ")
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		p := 2 + 8*i
		fmt.Fprintf(&sb, "(?%d,CAST(?%d AS TEXT),?%d,CAST(?%d AS TEXT),CAST(?%d AS TEXT),?%d,CAST(?%d AS TEXT),?%d,CAST(?1 AS TEXT))",
			p, p+1, p+2, p+3, p+4, p+5, p+6, p+7)
	}
	return sb.String()
}

// eventStatements are the statements prepareOnPool prepares at Open.
var eventStatements = func() []string {
	out := make([]string, 0, len(eventInsertSizes))
	for _, n := range eventInsertSizes {
		out = append(out, appendEventsSQL[n])
	}
	return out
}()

// eventArgs recycles AppendEvents' argument slices (7 per row and one).
var eventArgs = sync.Pool{New: func() any {
	b := make([]any, 0, 1+eventInsertSizes[0]*7)
	return &b
}}

// textBytes views a string's bytes without copying them, for a statement
// argument that SQL casts to TEXT. SQLite copies what it binds, and
// nothing writes through the view.
func textBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ListSessionEvents returns up to limit events of a session with seq > after.
// It is the replay path of every reconnecting stream, so it reads only what
// a stream sends: Global and Time are left zero.
func (s *Store) ListSessionEvents(ctx context.Context, sessionID string, after int64, limit int) ([]Event, error) {
	const op = "list session events"
	if err := ctx.Err(); err != nil {
		return nil, internal(err, op)
	}
	// WithoutCancel: see scanEvents.
	rows, err := s.rdb.WithContext(context.WithoutCancel(ctx)).Raw(
		`SELECT id, seq, type, prompt_id, payload FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		sessionID, after, limit).Rows()
	if err != nil {
		return nil, internal(err, op)
	}
	defer rows.Close()
	out := make([]Event, 0, min(limit, 1024))
	for rows.Next() {
		e := Event{SessionID: sessionID}
		var pid sql.NullString
		var payload []byte
		if err := rows.Scan(&e.ID, &e.Seq, &e.Type, &pid, &payload); err != nil {
			return nil, internal(err, op)
		}
		e.PromptID, e.Payload = pid.String, payload
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, internal(err, op)
	}
	return out, nil
}

// ListGlobalEvents returns up to limit global events with id > after.
func (s *Store) ListGlobalEvents(ctx context.Context, after int64, limit int) ([]Event, error) {
	return s.scanEvents(ctx, "list global events",
		`SELECT id, session_id, seq, type, prompt_id, is_global, payload, created_at FROM events
		 WHERE is_global = 1 AND id > ? ORDER BY id LIMIT ?`, after, limit)
}

func (s *Store) scanEvents(ctx context.Context, op, q string, args ...any) ([]Event, error) {
	// A page is bounded by LIMIT; callers check ctx between pages. With a
	// cancellable context the sqlite driver starts a goroutine per row,
	// which halves replay speed.
	if err := ctx.Err(); err != nil {
		return nil, internal(err, op)
	}
	rows, err := s.rdb.WithContext(context.WithoutCancel(ctx)).Raw(q, args...).Rows()
	if err != nil {
		return nil, internal(err, op)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var (
			e        Event
			sid, pid sql.NullString
			seq      sql.NullInt64
			global   int
			payload  string
			created  string
		)
		if err := rows.Scan(&e.ID, &sid, &seq, &e.Type, &pid, &global, &payload, &created); err != nil {
			return nil, internal(err, op)
		}
		e.SessionID, e.Seq, e.PromptID, e.Global = sid.String, seq.Int64, pid.String, global == 1
		e.Payload = json.RawMessage(payload)
		e.Time, _ = time.Parse(timeLayout, created)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, internal(err, op)
	}
	return out, nil
}

// EventBounds are the retained range of a session's log.
type EventBounds struct {
	// First is the lowest retained seq (0 when nothing is retained).
	First int64
	// Head is the highest seq ever written (retention never lowers it).
	Head int64
}

// sessionBoundsSQL asks a session's lowest and highest seq as two
// subqueries, each one seek of the (session_id, seq) index: asked in one
// statement, MIN and MAX together made SQLite walk every event of the
// session (104 ms at 10,000 turns, issue 36; BenchmarkSessionEventBounds).
const sessionBoundsSQL = `SELECT COALESCE((SELECT MIN(seq) FROM events WHERE session_id = ?), 0),
	COALESCE((SELECT MAX(seq) FROM events WHERE session_id = ?), 0)`

// SessionEventBounds reports what a session's log holds.
func (s *Store) SessionEventBounds(ctx context.Context, sessionID string) (EventBounds, error) {
	var b EventBounds
	q := s.rdb.WithContext(ctx).Raw(sessionBoundsSQL, sessionID, sessionID)
	if err := scanRow(q, &b.First, &b.Head); err != nil {
		return b, internal(err, "event bounds")
	}
	if head, err := s.metaInt(ctx, "head:"+sessionID); err == nil && head > b.Head {
		b.Head = head
	}
	return b, nil
}

// GlobalEventBounds reports the retained range of the global stream
// (First is the lowest retained global id, Head the highest id written).
func (s *Store) GlobalEventBounds(ctx context.Context) (EventBounds, error) {
	var b EventBounds
	q := s.rdb.WithContext(ctx).Raw(`SELECT COALESCE((SELECT MIN(id) FROM events WHERE is_global = 1), 0),
		COALESCE((SELECT MAX(id) FROM events WHERE is_global = 1), 0)`) // one seek each (sessionBoundsSQL)
	if err := scanRow(q, &b.First, &b.Head); err != nil {
		return b, internal(err, "global event bounds")
	}
	if head, err := s.metaInt(ctx, "head:"); err == nil && head > b.Head {
		b.Head = head
	}
	return b, nil
}

// MaxEventID is the highest global id ever assigned (the writer resumes
// numbering after it).
func (s *Store) MaxEventID(ctx context.Context) (int64, error) {
	var id int64
	if err := scanRow(s.db.WithContext(ctx).Raw(`SELECT COALESCE(MAX(id), 0) FROM events`), &id); err != nil {
		return 0, internal(err, "max event id")
	}
	if m, err := s.metaInt(ctx, "maxid"); err == nil && m > id {
		id = m
	}
	return id, nil
}

// MaxSessionSeq is the highest seq ever assigned in a session.
func (s *Store) MaxSessionSeq(ctx context.Context, sessionID string) (int64, error) {
	b, err := s.SessionEventBounds(ctx, sessionID)
	return b.Head, err
}

// GlobalEpoch returns the epoch of the global stream, creating it once per
// database. It changes only if the database is replaced.
func (s *Store) GlobalEpoch(ctx context.Context) (string, error) {
	var v string
	err := scanRow(s.db.WithContext(ctx).Raw(`SELECT value FROM meta WHERE key = 'global_epoch'`), &v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", internal(err, "global epoch")
	}
	v = NewEpoch()
	if err := s.db.WithContext(ctx).Exec(`INSERT INTO meta (key, value) VALUES ('global_epoch', ?) ON CONFLICT (key) DO NOTHING`, v).Error; err != nil {
		return "", internal(err, "global epoch")
	}
	return s.GlobalEpoch(ctx)
}

// NewEpoch returns a fresh random epoch token.
func NewEpoch() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// closedBeforeSQL selects the sessions whose log retention may prune.
const closedBeforeSQL = `SELECT id FROM sessions WHERE closed_at IS NOT NULL AND closed_at < ?`

// MarkPruneHeads records, for every session closed before cutoff, the head
// of its log (and the log's highest id), so that cursors keep their meaning
// once PruneEventBatch has deleted the rows. Call it before pruning.
func (s *Store) MarkPruneHeads(ctx context.Context, closedBefore time.Time) error {
	return s.Tx(ctx, func(tx *Store) error {
		db := tx.db.WithContext(ctx)
		if err := db.Exec(`INSERT INTO meta (key, value)
			SELECT 'head:' || session_id, MAX(seq) FROM events
			WHERE session_id IN (`+closedBeforeSQL+`)
			GROUP BY session_id
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, formatTime(closedBefore)).Error; err != nil {
			return err
		}
		return db.Exec(`INSERT INTO meta (key, value) SELECT 'maxid', COALESCE(MAX(id), 0) FROM events WHERE true
			ON CONFLICT (key) DO UPDATE SET value = MAX(CAST(meta.value AS BIGINT), CAST(excluded.value AS BIGINT))`).Error
	})
}

// PruneEventBatch deletes at most limit log entries of sessions closed
// before cutoff, keeping the newest keep events of each (keep < 0 keeps
// none), and returns how many it deleted: fewer than limit means nothing
// is left to prune. Bounded batches keep each statement (and the writer
// transaction it runs in) short however large the backlog.
func (s *Store) PruneEventBatch(ctx context.Context, closedBefore time.Time, keep, limit int) (int64, error) {
	if keep < 0 {
		keep = 0
	}
	res := s.db.WithContext(ctx).Exec(`DELETE FROM events WHERE id IN (
			SELECT e.id FROM events e
			WHERE e.session_id IN (`+closedBeforeSQL+`)
			AND e.seq <= (SELECT MAX(e2.seq) FROM events e2 WHERE e2.session_id = e.session_id) - ?
			LIMIT ?)`,
		formatTime(closedBefore), keep, limit)
	return res.RowsAffected, res.Error
}

func (s *Store) metaInt(ctx context.Context, key string) (int64, error) {
	var v int64
	err := scanRow(s.rdb.WithContext(ctx).Raw(`SELECT CAST(value AS BIGINT) FROM meta WHERE key = ?`, key), &v)
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, nil
	}
	return v, err
}

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// LastSessionEvent returns the payload of a session's latest event of the
// given type, or nil when there is none.
func (s *Store) LastSessionEvent(ctx context.Context, sessionID, typ string) (json.RawMessage, error) {
	var payload string
	err := scanRow(s.rdb.WithContext(ctx).Raw(`SELECT payload FROM events WHERE session_id = ? AND type = ? ORDER BY seq DESC LIMIT 1`,
		sessionID, typ), &payload)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, internal(err, "last session event")
	}
	return json.RawMessage(payload), nil
}

// LastTurnEvent returns the type and payload of the latest event of a
// session's turn among types ("" and nil when there is none): what the
// turn last did of a kind, read from the log's end.
func (s *Store) LastTurnEvent(ctx context.Context, sessionID, promptID string, types []string) (string, json.RawMessage, error) {
	if len(types) == 0 {
		return "", nil, nil
	}
	var typ, payload string
	err := scanRow(s.rdb.WithContext(ctx).Raw(`SELECT type, payload FROM events WHERE session_id = ? AND prompt_id = ? AND type IN ? ORDER BY seq DESC LIMIT 1`,
		sessionID, promptID, types), &typ, &payload)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, internal(err, "last turn event")
	}
	return typ, json.RawMessage(payload), nil
}
