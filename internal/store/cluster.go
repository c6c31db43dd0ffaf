package store

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// The cluster's tables (PostgreSQL only: several nodes share one database;
// internal/cluster holds the rules, these are its statements):
// cluster_nodes (each node's id, URL and heartbeat), session_leases (each
// live session's owner, generation and expiry) and event_id_seq (the
// sequence global event ids are taken from, with its horizon).

// Lease is a session's lease: the node that owns the session, at which
// generation (the fencing token, raised by every change of owner), and
// whether it is live (not expired) as the database's clock reads it.
// Every statement here reads that clock with clock_timestamp(), not
// now(), which is the transaction's start: a take that waited for another
// transaction's lock must count its TTL from when it is taken.
type Lease struct {
	SessionID  string
	NodeID     string
	NodeURL    string
	Generation int64
	Live       bool
}

// clusterOnly refuses the cluster's statements on SQLite, which has one
// writer by design.
func (s *Store) clusterOnly(op string) error {
	if s.Dialect() != DialectPostgres {
		return errcode.New(errcode.Internal, "store: %s needs PostgreSQL (several nodes share one database only there)", op)
	}
	return nil
}

// interval renders a duration for make_interval(secs => ?).
func interval(d time.Duration) float64 { return d.Seconds() }

// RegisterNode records this node and its URL, heartbeat now.
func (s *Store) RegisterNode(ctx context.Context, nodeID, url string) error {
	if err := s.clusterOnly("register node"); err != nil {
		return err
	}
	err := s.db.WithContext(ctx).Exec(`INSERT INTO cluster_nodes (id, url, started_at, heartbeat_at) VALUES (?, ?, clock_timestamp(), clock_timestamp())
		ON CONFLICT (id) DO UPDATE SET url = excluded.url, started_at = clock_timestamp(), heartbeat_at = clock_timestamp()`, nodeID, url).Error
	return wrapErr(err, "register node")
}

// UnregisterNode removes this node's row: a node that could not start
// (its listener refused, say) leaves no node behind that looks alive
// until its heartbeat ages. Leases it took stay, as a dead node's do, for
// the other nodes to take.
func (s *Store) UnregisterNode(ctx context.Context, nodeID string) error {
	if err := s.clusterOnly("unregister node"); err != nil {
		return err
	}
	return wrapErr(s.db.WithContext(ctx).Exec(`DELETE FROM cluster_nodes WHERE id = ?`, nodeID).Error, "unregister node")
}

// LiveNodes counts the nodes whose heartbeat is younger than ttl: those a
// dead node's sessions are shared among.
func (s *Store) LiveNodes(ctx context.Context, ttl time.Duration) (int, error) {
	if err := s.clusterOnly("count live nodes"); err != nil {
		return 0, err
	}
	var n int
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM cluster_nodes
		WHERE heartbeat_at > clock_timestamp() - make_interval(secs => ?)`, interval(ttl)).Scan(&n).Error
	return n, wrapErr(err, "count live nodes")
}

// LiveLeases counts the leases that have not expired, every node's: the
// sessions the live nodes share.
func (s *Store) LiveLeases(ctx context.Context) (int, error) {
	if err := s.clusterOnly("count live leases"); err != nil {
		return 0, err
	}
	var n int
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM session_leases WHERE expires_at > clock_timestamp()`).Scan(&n).Error
	return n, wrapErr(err, "count live leases")
}

// AcquireLease takes the session's lease for nodeID when nobody holds it,
// it expired, or nodeID holds it already (a node restarted under its id),
// raising the generation; it returns the lease as it stands afterwards,
// which is another node's when that node holds it live.
func (s *Store) AcquireLease(ctx context.Context, sessionID, nodeID string, ttl time.Duration) (Lease, error) {
	if err := s.clusterOnly("acquire lease"); err != nil {
		return Lease{}, err
	}
	var gen int64
	err := scanRow(s.db.WithContext(ctx).Raw(`INSERT INTO session_leases (session_id, node_id, generation, expires_at)
		VALUES (?, ?, 1, clock_timestamp() + make_interval(secs => ?))
		ON CONFLICT (session_id) DO UPDATE SET node_id = excluded.node_id,
			generation = session_leases.generation + 1,
			-- From when the row is taken: the take may have waited for a
			-- writer's share lock (excluded.expires_at is from before).
			expires_at = clock_timestamp() + make_interval(secs => ?)
		WHERE session_leases.expires_at <= clock_timestamp() OR session_leases.node_id = excluded.node_id
		RETURNING generation`, sessionID, nodeID, interval(ttl), interval(ttl)), &gen)
	switch {
	case err == nil:
		return Lease{SessionID: sessionID, NodeID: nodeID, Generation: gen, Live: true}, nil
	case err != sql.ErrNoRows:
		return Lease{}, wrapErr(err, "acquire lease")
	}
	l, _, err := s.SessionLease(ctx, sessionID)
	return l, err
}

// SessionLease reads the session's lease with its owner's URL; ok is
// false when the session never had one.
func (s *Store) SessionLease(ctx context.Context, sessionID string) (Lease, bool, error) {
	if err := s.clusterOnly("read lease"); err != nil {
		return Lease{}, false, err
	}
	l := Lease{SessionID: sessionID}
	var url sql.NullString
	err := scanRow(s.db.WithContext(ctx).Raw(`SELECT l.node_id, n.url, l.generation, l.expires_at > clock_timestamp()
		FROM session_leases l LEFT JOIN cluster_nodes n ON n.id = l.node_id WHERE l.session_id = ?`, sessionID),
		&l.NodeID, &url, &l.Generation, &l.Live)
	if err == sql.ErrNoRows {
		return Lease{SessionID: sessionID}, false, nil
	}
	if err != nil {
		return Lease{}, false, wrapErr(err, "read lease")
	}
	l.NodeURL = url.String
	return l, true, nil
}

// RenewLeases extends, in one transaction, the node's heartbeat and the
// live leases it holds at the given generations; it returns the sessions
// renewed. A lease that expired is not revived: the node has counted it
// lost, and another node may be taking it.
func (s *Store) RenewLeases(ctx context.Context, nodeID string, held map[string]int64, ttl time.Duration) ([]string, error) {
	if err := s.clusterOnly("renew leases"); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(held))
	gens := make([]int64, 0, len(held))
	for id, gen := range held {
		ids, gens = append(ids, id), append(gens, gen)
	}
	var renewed []string
	err := s.Tx(ctx, func(tx *Store) error {
		if err := tx.db.WithContext(ctx).Exec(`UPDATE cluster_nodes SET heartbeat_at = clock_timestamp() WHERE id = ?`, nodeID).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		rows, err := tx.db.WithContext(ctx).Raw(`UPDATE session_leases l SET expires_at = clock_timestamp() + make_interval(secs => ?)
			FROM unnest(?::text[], ?::bigint[]) AS h(sid, gen)
			WHERE l.session_id = h.sid AND l.generation = h.gen AND l.node_id = ? AND l.expires_at > clock_timestamp()
			RETURNING l.session_id`, interval(ttl), textArray(ids), int8Array(gens), nodeID).Rows()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			renewed = append(renewed, id)
		}
		return rows.Err()
	})
	return renewed, wrapErr(err, "renew leases")
}

// ReleaseLease ends nodeID's lease of the session at gen at once.
func (s *Store) ReleaseLease(ctx context.Context, sessionID, nodeID string, gen int64) error {
	if err := s.clusterOnly("release lease"); err != nil {
		return err
	}
	err := s.db.WithContext(ctx).Exec(`UPDATE session_leases SET expires_at = clock_timestamp()
		WHERE session_id = ? AND node_id = ? AND generation = ?`, sessionID, nodeID, gen).Error
	return wrapErr(err, "release lease")
}

// OrphanedSessions lists (at most 100) sessions with work in flight — a
// turn running or queued, or an agent that lives on an executor host —
// whose lease expired or was never taken.
func (s *Store) OrphanedSessions(ctx context.Context) ([]string, error) {
	if err := s.clusterOnly("list orphaned sessions"); err != nil {
		return nil, err
	}
	rows, err := s.db.WithContext(ctx).Raw(`SELECT s.id FROM sessions s
		LEFT JOIN session_leases l ON l.session_id = s.id
		WHERE (l.session_id IS NULL OR l.expires_at <= clock_timestamp())
		  AND s.state IN ('STARTING', 'RUNNING', 'WAITING_FOR_INPUT')
		  AND (EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id AND t.state IN ('running', 'queued'))
		       OR EXISTS (SELECT 1 FROM executors_running e WHERE e.session_id = s.id
		                  AND e.runtime <> 'standalone' AND e.status IN ('starting', 'ready', 'reconnecting')))
		ORDER BY s.id LIMIT 100`).Rows()
	if err != nil {
		return nil, wrapErr(err, "list orphaned sessions")
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, wrapErr(err, "list orphaned sessions")
		}
		ids = append(ids, id)
	}
	return ids, wrapErr(rows.Err(), "list orphaned sessions")
}

// LockLeases reads the leases of sessions under a share lock held until
// the transaction ends: a change of owner (AcquireLease) waits for this
// transaction, and this transaction sees any change of owner that
// committed before it. Sessions without a lease are left out.
func (s *Store) LockLeases(ctx context.Context, sessions []string) ([]Lease, error) {
	if err := s.clusterOnly("lock leases"); err != nil {
		return nil, err
	}
	rows, err := s.db.WithContext(ctx).Raw(`SELECT session_id, node_id, generation, expires_at > clock_timestamp() FROM session_leases
		WHERE session_id = ANY(?::text[]) ORDER BY session_id FOR SHARE`, textArray(sessions)).Rows()
	if err != nil {
		return nil, wrapErr(err, "lock leases")
	}
	defer rows.Close()
	var out []Lease
	for rows.Next() {
		var l Lease
		if err := rows.Scan(&l.SessionID, &l.NodeID, &l.Generation, &l.Live); err != nil {
			return nil, wrapErr(err, "lock leases")
		}
		out = append(out, l)
	}
	return out, wrapErr(rows.Err(), "lock leases")
}

// ReserveEventIDs takes n global event ids, ascending, from the sequence
// (no lock: the nodes' writers commit side by side, so ids are not in
// commit order; EventHorizon says up to where they are settled). It also
// NOTIFYs the other nodes (delivered at the commit) with the last id.
func (s *Store) ReserveEventIDs(ctx context.Context, n int) ([]int64, TxMark, error) {
	if err := s.clusterOnly("reserve event ids"); err != nil {
		return nil, TxMark{}, err
	}
	ids := make([]int64, 0, n)
	var mark TxMark
	rows, err := s.db.WithContext(ctx).Raw(`SELECT tether_reserve_event_ids(?), txid_current(), pg_backend_pid()`, n).Rows()
	if err != nil {
		return nil, TxMark{}, wrapErr(err, "reserve event ids")
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id, &mark.TxID, &mark.PID); err != nil {
			return nil, TxMark{}, wrapErr(err, "reserve event ids")
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, TxMark{}, wrapErr(err, "reserve event ids")
	}
	if len(ids) != n {
		return nil, TxMark{}, errcode.New(errcode.Internal, "store: reserve event ids: got %d ids, want %d", len(ids), n)
	}
	return ids, mark, nil
}

// writerLockClass is the first key of the advisory lock each writer
// holding event ids takes, the second being its backend's pid
// (tether_reserve_event_ids).
const writerLockClass = 0x7e7e0002

// EventHorizon returns the highest global id up to which the log is
// settled: every id at or below it is committed, or taken by a
// transaction that rolled back and never will be. It reads the last id
// given out and the nodes' writers holding ids at that moment (one of
// them may hold a lower one; migrations/postgres/00008), then waits for
// each to end: a shared take of its advisory lock, granted once its
// commit is visible and let go at once (one statement each, so nothing
// is held while waiting for the next, and a writer cut off mid-commit
// holds back only the readers, never the other writers). A reader that
// delivers the log by id up to the horizon never sees an id commit below
// what it delivered.
func (s *Store) EventHorizon(ctx context.Context) (int64, error) {
	if err := s.clusterOnly("event horizon"); err != nil {
		return 0, err
	}
	var last int64
	var list string
	if err := scanRow(s.rdb.WithContext(ctx).Raw(`SELECT last_id, array_to_string(writers, ',') FROM tether_event_horizon()`), &last, &list); err != nil {
		return 0, wrapErr(err, "event horizon")
	}
	if list == "" {
		return last, nil
	}
	for _, pid := range strings.Split(list, ",") {
		if err := s.rdb.WithContext(ctx).Exec(`SELECT pg_advisory_xact_lock_shared(?, ?::integer)`, writerLockClass, pid).Error; err != nil {
			return 0, wrapErr(err, "event horizon")
		}
	}
	return last, nil
}

// ListEventsBetween lists every event, session and global, with an id
// above after and at most upTo, in id order, at most limit.
func (s *Store) ListEventsBetween(ctx context.Context, after, upTo int64, limit int) ([]Event, error) {
	return s.scanEvents(ctx, "list events",
		`SELECT id, session_id, seq, type, prompt_id, is_global, payload, created_at FROM events
		 WHERE id > ? AND id <= ? ORDER BY id LIMIT ?`, after, upTo, limit)
}

// CountEventsBetween counts the events with an id above after and at
// most upTo, as this store's transaction sees them.
func (s *Store) CountEventsBetween(ctx context.Context, after, upTo int64) (int64, error) {
	var n int64
	if err := scanRow(s.rdb.WithContext(ctx).Raw(`SELECT count(*) FROM events WHERE id > ? AND id <= ?`, after, upTo), &n); err != nil {
		return 0, wrapErr(err, "count events")
	}
	return n, nil
}

// wrapErr is an internal error for op, nil for nil.
func wrapErr(err error, op string) error {
	if err == nil {
		return nil
	}
	return internal(err, op)
}
