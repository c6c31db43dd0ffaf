package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tether/tether/internal/session"
)

// InboxKind says why an inbox item waits for a person.
type InboxKind string

// The kinds of inbox items.
const (
	// InboxPermission: an agent asks for permission (pending).
	InboxPermission InboxKind = "permission"
	// InboxInterruptedTurn: the session's latest turn was interrupted
	// and can be continued (POST /session/{id}/continue).
	InboxInterruptedTurn InboxKind = "interrupted_turn"
	// InboxFailedTurn: the session's latest turn failed.
	InboxFailedTurn InboxKind = "failed_turn"
	// InboxNeedsCredentials: the session's agent refused to start
	// without credentials (agent_auth_required).
	InboxNeedsCredentials InboxKind = "needs_credentials"
	// InboxBudgetExceeded: a budget stopped the session's latest turn;
	// raise it to continue.
	InboxBudgetExceeded InboxKind = "budget_exceeded"
	// InboxStalledTurn: the session's running turn has had no output from
	// its agent for the session's stall limit (turn.stalled).
	InboxStalledTurn InboxKind = "stalled_turn"
)

// Inbox page sizes.
const (
	DefaultInboxPageSize = 50
	MaxInboxPageSize     = 200
)

// InboxItem is one thing that waits for a person, with the session it
// is in and, by kind, the permission request or the turn.
type InboxItem struct {
	// ID is stable for as long as the item waits: kind, session and the
	// request's or turn's id.
	ID   string
	Kind InboxKind
	// At is when it began to wait: the request made, the turn ended, the
	// agent refused.
	At         time.Time
	Session    session.Session
	Executor   session.Executor
	Permission *session.Permission
	Turn       *session.Turn
}

// InboxFilter pages the inbox.
type InboxFilter struct {
	Limit int
	// After is the page token of the page before ("" for the first).
	After string
}

// inboxSources list what waits, each as (kind, session_id, ref, at, id),
// from the projections: not a table of its own, so nothing can tell
// another story than the rows. A session closed or archived waits for no
// one; a turn waits while it is its session's latest that is not queued
// (a queued prompt after an interrupted turn waits behind it). Each
// source is read newest first by its own partial index, a page at most
// (inboxSQL), so a page costs the same however much waits. (The
// executors' status is compared as an expression: as a column, SQLite,
// which has no statistics here, would walk every erred executor by its
// status index and sort them, 8 ms at 10,000 sessions, instead.)
var inboxSources = []struct{ at, id, sql string }{
	{"p.created_at", "'permission:' || p.session_id || ':' || p.id",
		`SELECT 'permission' AS kind, p.session_id AS session_id, p.id AS ref, %[1]s AS at, %[2]s AS id
	FROM permission_requests p JOIN sessions s ON s.id = p.session_id
	WHERE p.state = 'pending' AND s.closed_at IS NULL AND s.archived = 0`},
	{"t.ended_at", "CASE t.state WHEN 'failed' THEN 'failed_turn:' ELSE 'interrupted_turn:' END || t.session_id || ':' || t.prompt_id",
		`SELECT CASE t.state WHEN 'failed' THEN 'failed_turn' ELSE 'interrupted_turn' END AS kind, t.session_id AS session_id,
		t.prompt_id AS ref, %[1]s AS at, %[2]s AS id
	FROM turns t JOIN sessions s ON s.id = t.session_id
	WHERE t.state IN ('failed', 'interrupted') AND t.rewound = 0 AND t.ended_at IS NOT NULL
		AND s.closed_at IS NULL AND s.archived = 0
		AND NOT EXISTS (SELECT 1 FROM turns u WHERE u.session_id = t.session_id AND u.seq > t.seq AND u.state <> 'queued')`},
	{"t.ended_at", "'budget_exceeded:' || t.session_id || ':' || t.prompt_id",
		`SELECT 'budget_exceeded' AS kind, t.session_id AS session_id, t.prompt_id AS ref, %[1]s AS at, %[2]s AS id
	FROM turns t JOIN sessions s ON s.id = t.session_id
	WHERE t.state = 'cancelled' AND t.error_code = 'budget_exceeded' AND t.rewound = 0 AND t.ended_at IS NOT NULL
		AND s.closed_at IS NULL AND s.archived = 0
		AND NOT EXISTS (SELECT 1 FROM turns u WHERE u.session_id = t.session_id AND u.seq > t.seq AND u.state <> 'queued')`},
	{"t.stalled_at", "'stalled_turn:' || t.session_id || ':' || t.prompt_id",
		`SELECT 'stalled_turn' AS kind, t.session_id AS session_id, t.prompt_id AS ref, %[1]s AS at, %[2]s AS id
	FROM turns t JOIN sessions s ON s.id = t.session_id
	WHERE t.stalled_at IS NOT NULL AND s.closed_at IS NULL AND s.archived = 0`},
	{"e.updated_at", "'needs_credentials:' || e.session_id",
		`SELECT 'needs_credentials' AS kind, e.session_id AS session_id, '' AS ref, %[1]s AS at, %[2]s AS id
	FROM executors_running e JOIN sessions s ON s.id = e.session_id
	WHERE e.error_code = 'agent_auth_required' AND e.status || '' = 'error' AND s.closed_at IS NULL AND s.archived = 0`},
}

// inboxSQL is a page of the inbox: each source's newest n after the
// token (when after), merged newest first.
func inboxSQL(after bool) string {
	var b strings.Builder
	b.WriteString("SELECT kind, session_id, ref, at, id FROM (")
	for i, src := range inboxSources {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		b.WriteString("SELECT * FROM (")
		fmt.Fprintf(&b, src.sql, src.at, src.id)
		if after {
			// at <= ? first, so the index's range applies.
			fmt.Fprintf(&b, " AND %[1]s <= @at AND (%[1]s < @at OR %[2]s < @id)", src.at, src.id)
		}
		fmt.Fprintf(&b, " ORDER BY %s DESC, %s DESC LIMIT @n) s%d", src.at, src.id, i)
	}
	b.WriteString(") items ORDER BY at DESC, id DESC LIMIT @n")
	return b.String()
}

// inboxKey is one row of inboxSQL.
type inboxKey struct {
	Kind      string `gorm:"column:kind"`
	SessionID string `gorm:"column:session_id"`
	Ref       string `gorm:"column:ref"`
	At        string `gorm:"column:at"`
	ID        string `gorm:"column:id"`
}

// Inbox returns one page of what waits for a person across all sessions,
// newest first (at desc, id desc), and the next page's token ("" on the
// last page). A malformed After gives errcode.InvalidRequest.
func (s *Store) Inbox(ctx context.Context, f InboxFilter) ([]InboxItem, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultInboxPageSize
	}
	limit = min(limit, MaxInboxPageSize)
	args := map[string]any{"n": limit + 1} // one extra row tells whether another page exists
	if f.After != "" {
		tok, err := decodePageToken(f.After)
		if err != nil {
			return nil, "", err
		}
		args["at"], args["id"] = tok.At, tok.ID
	}
	q := inboxSQL(f.After != "")
	if err := s.flushOffsets(ctx); err != nil {
		return nil, "", err
	}
	var keys []inboxKey
	if err := s.db.WithContext(ctx).Raw(q, args).Scan(&keys).Error; err != nil {
		return nil, "", internal(err, "inbox")
	}
	next := ""
	if len(keys) > limit {
		keys = keys[:limit]
		next = pageToken{At: keys[limit-1].At, ID: keys[limit-1].ID}.String()
	}
	items, err := s.inboxItems(ctx, keys)
	return items, next, err
}

// inboxItems reads what the keys name: their sessions, executors,
// permission requests and turns, a query each for the whole page.
func (s *Store) inboxItems(ctx context.Context, keys []inboxKey) ([]InboxItem, error) {
	if len(keys) == 0 {
		return []InboxItem{}, nil
	}
	var ids []string
	seen := map[string]bool{}
	var perms, turns [][]any
	for _, k := range keys {
		if !seen[k.SessionID] {
			seen[k.SessionID] = true
			ids = append(ids, k.SessionID)
		}
		switch InboxKind(k.Kind) {
		case InboxPermission:
			perms = append(perms, []any{k.SessionID, k.Ref})
		case InboxInterruptedTurn, InboxFailedTurn, InboxBudgetExceeded, InboxStalledTurn:
			turns = append(turns, []any{k.SessionID, k.Ref})
		}
	}
	var srows []sessionRow
	if err := s.db.WithContext(ctx).Where("id IN ?", ids).Find(&srows).Error; err != nil {
		return nil, internal(err, "inbox sessions")
	}
	list, err := toSessions(srows)
	if err != nil {
		return nil, internal(err, "inbox sessions")
	}
	sessions := make(map[string]session.Session, len(list))
	for _, x := range list {
		sessions[x.ID] = x
	}
	execs, err := s.ExecutorsOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	permOf := map[[2]string]session.Permission{}
	if len(perms) > 0 {
		var rows []permissionRow
		if err := s.db.WithContext(ctx).Where("(session_id, id) IN ?", perms).Find(&rows).Error; err != nil {
			return nil, internal(err, "inbox permissions")
		}
		for _, r := range rows {
			permOf[[2]string{r.SessionID, r.ID}] = toPermission(r)
		}
	}
	turnOf := map[[2]string]session.Turn{}
	if len(turns) > 0 {
		var rows []turnRow
		if err := s.db.WithContext(ctx).Where("(session_id, prompt_id) IN ?", turns).Find(&rows).Error; err != nil {
			return nil, internal(err, "inbox turns")
		}
		for _, r := range rows {
			turnOf[[2]string{r.SessionID, r.PromptID}] = toTurn(r)
		}
	}
	out := make([]InboxItem, 0, len(keys))
	for _, k := range keys {
		var at dbTime
		if err := at.Scan(k.At); err != nil {
			return nil, internal(err, "inbox")
		}
		it := InboxItem{ID: k.ID, Kind: InboxKind(k.Kind), At: at.t, Session: sessions[k.SessionID], Executor: execs[k.SessionID]}
		key := [2]string{k.SessionID, k.Ref}
		switch it.Kind {
		case InboxPermission:
			p, ok := permOf[key]
			if !ok {
				continue // resolved between the two reads (outside a snapshot)
			}
			it.Permission = &p
		case InboxInterruptedTurn, InboxFailedTurn, InboxBudgetExceeded, InboxStalledTurn:
			t, ok := turnOf[key]
			if !ok {
				continue
			}
			it.Turn = &t
		}
		out = append(out, it)
	}
	return out, nil
}
