package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/tether/tether/internal/session"
)

// A session's title, its archive flag, and the search over titles and
// what ended turns said (migrations/00021_session_titles.sql and its
// PostgreSQL twin).

// SetSessionTitle projects session.title_changed.
func (s *Store) SetSessionTitle(ctx context.Context, id, title string, source session.TitleSource) error {
	return s.updateSession(ctx, id, map[string]any{"title": title, "title_source": string(source)})
}

// SetSessionForkedFrom records where a fork came from (session.forked).
func (s *Store) SetSessionForkedFrom(ctx context.Context, id string, o session.ForkOrigin) error {
	return s.updateSession(ctx, id, map[string]any{"forked_from_session": o.SessionID, "forked_from_prompt": o.PromptID, "fork_handoff": o.Handoff})
}

// SetSessionRewound records a rewind (session.rewound): the turns it
// marks and unmarks, and the session's latest rewind.
func (s *Store) SetSessionRewound(ctx context.Context, id string, r session.Rewind) error {
	db := s.db.WithContext(ctx)
	for _, set := range []struct {
		ids []string
		to  bool
	}{{r.Rewound, true}, {r.Restored, false}} {
		if len(set.ids) == 0 {
			continue
		}
		res := db.Model(&turnRow{}).Where("session_id = ? AND prompt_id IN ?", id, set.ids).Update("rewound", set.to)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != int64(len(set.ids)) {
			return fmt.Errorf("store: rewind of %s names %d turns, %d found", id, len(set.ids), res.RowsAffected)
		}
	}
	return s.updateSession(ctx, id, map[string]any{"last_rewind": rewindText(&r)})
}

// SetSessionArchived projects session.archived.
func (s *Store) SetSessionArchived(ctx context.Context, id string, archived bool) error {
	return s.updateSession(ctx, id, map[string]any{"archived": archived})
}

// IndexTurnText appends to the session's search document what turn
// promptID said (its messages, the prompt included), once it has ended:
// the projection of the turn's end. A turn's text is searchable from
// then on; its chunks are not indexed one by one, which would rewrite
// the document per chunk.
func (s *Store) IndexTurnText(ctx context.Context, sessionID, promptID string) error {
	db := s.db.WithContext(ctx)
	if s.dialect == DialectPostgres {
		err := db.Exec(`INSERT INTO session_search (session_id, body)
			SELECT ?, string_agg(text, ' ' ORDER BY id) FROM messages WHERE session_id = ? AND prompt_id = ? HAVING count(*) > 0
			ON CONFLICT (session_id) DO UPDATE SET body = session_search.body || ' ' || EXCLUDED.body`,
			sessionID, sessionID, promptID).Error
		return internalIf(err, "index the turn's text")
	}
	// FTS4 rewrites a document whole: read it, delete it, insert it longer.
	var docid int64
	var body string
	err := scanRow(db.Raw(`SELECT s.rowid, COALESCE((SELECT body FROM session_search WHERE docid = s.rowid), '')
		FROM sessions s WHERE s.id = ?`, sessionID), &docid, &body)
	if err != nil {
		return internal(err, "index the turn's text")
	}
	var turn string
	err = scanRow(db.Raw(`SELECT COALESCE(group_concat(text, ' '), '') FROM (SELECT text FROM messages
		WHERE session_id = ? AND prompt_id = ? ORDER BY id)`, sessionID, promptID), &turn)
	if err != nil || turn == "" {
		return internalIf(err, "index the turn's text")
	}
	if body != "" {
		turn = body + " " + turn
	}
	if err := db.Exec(`DELETE FROM session_search WHERE docid = ?`, docid).Error; err != nil {
		return internal(err, "index the turn's text")
	}
	return internalIf(db.Exec(`INSERT INTO session_search (docid, session_id, body) VALUES (?, ?, ?)`, docid, sessionID, turn).Error,
		"index the turn's text")
}

// IndexSessionText makes the session's search document anew from what
// its ended turns said, in one write: the projection of a fork's copy
// (session.forked), whose turns' ends leave the index alone.
func (s *Store) IndexSessionText(ctx context.Context, sessionID string) error {
	db := s.db.WithContext(ctx)
	ended := `m.session_id = ? AND t.state IN ('completed', 'failed', 'cancelled', 'interrupted')`
	if s.dialect == DialectPostgres {
		if err := db.Exec(`DELETE FROM session_search WHERE session_id = ?`, sessionID).Error; err != nil {
			return internal(err, "index the session's text")
		}
		err := db.Exec(`INSERT INTO session_search (session_id, body)
			SELECT m.session_id, string_agg(m.text, ' ' ORDER BY m.id) FROM messages m
			JOIN turns t ON t.session_id = m.session_id AND t.prompt_id = m.prompt_id
			WHERE `+ended+` GROUP BY m.session_id`, sessionID).Error
		return internalIf(err, "index the session's text")
	}
	var docid int64
	if err := scanRow(db.Raw(`SELECT rowid FROM sessions WHERE id = ?`, sessionID), &docid); err != nil {
		return internal(err, "index the session's text")
	}
	var body string
	err := scanRow(db.Raw(`SELECT COALESCE(group_concat(text, ' '), '') FROM (SELECT m.text FROM messages m
		JOIN turns t ON t.session_id = m.session_id AND t.prompt_id = m.prompt_id WHERE `+ended+` ORDER BY m.id)`, sessionID), &body)
	if err != nil {
		return internal(err, "index the session's text")
	}
	if err := db.Exec(`DELETE FROM session_search WHERE docid = ?`, docid).Error; err != nil {
		return internal(err, "index the session's text")
	}
	if body == "" {
		return nil
	}
	return internalIf(db.Exec(`INSERT INTO session_search (docid, session_id, body) VALUES (?, ?, ?)`, docid, sessionID, body).Error,
		"index the session's text")
}

// searchWords are q's words: runs of letters and digits, lower-cased (the
// tokenizers' view of a word), at most 16 of them.
func searchWords(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return words[:min(len(words), 16)]
}

// searchWhere is the condition on sessions that keeps those whose title
// holds every word of q, or whose search document does (the last word
// also as a prefix: search as you type). ok is false when q has no word.
func (s *Store) searchWhere(q string) (where string, args []any, ok bool) {
	words := searchWords(q)
	if len(words) == 0 {
		return "", nil, false
	}
	like := "LIKE"
	if s.dialect == DialectPostgres {
		like = "ILIKE"
	}
	title := make([]string, len(words))
	for i, w := range words {
		title[i] = "title " + like + " ?"
		args = append(args, "%"+w+"%")
	}
	if s.dialect == DialectPostgres {
		terms := make([]string, len(words))
		for i, w := range words {
			terms[i] = w
		}
		terms[len(terms)-1] += ":*"
		args = append(args, strings.Join(terms, " & "))
		return "((" + strings.Join(title, " AND ") + ") OR id IN (SELECT session_id FROM session_search WHERE tsv @@ to_tsquery('simple', ?)))", args, true
	}
	terms := make([]string, len(words))
	for i, w := range words {
		terms[i] = `"` + w + `"` // quoted: no word is read as an operator
	}
	terms[len(terms)-1] = words[len(words)-1] + "*"
	args = append(args, strings.Join(terms, " "))
	return "((" + strings.Join(title, " AND ") + ") OR rowid IN (SELECT docid FROM session_search WHERE body MATCH ?))", args, true
}

// LastActivity sets each session's LastActivityAt: when its latest event
// was recorded (one index seek per session). ListSessions sets it itself.
func (s *Store) LastActivity(ctx context.Context, list []session.Session) error {
	if len(list) == 0 {
		return nil
	}
	args := make([]any, len(list))
	at := make(map[string]int, len(list))
	for i, x := range list {
		args[i], at[x.ID] = x.ID, i
	}
	rows, err := s.db.WithContext(ctx).Raw(`SELECT s.id, (SELECT e.created_at FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1)
		FROM sessions s WHERE s.id IN (`+placeholders(len(args))+`)`, args...).Rows()
	if err != nil {
		return internal(err, "read the sessions' last activity")
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var when *dbTime
		if err := rows.Scan(&id, &when); err != nil {
			return internal(err, "read the sessions' last activity")
		}
		if when != nil {
			t := when.t
			list[at[id]].LastActivityAt = &t
		}
	}
	return internalIf(rows.Err(), "read the sessions' last activity")
}

// SetUsage records what a session's agent says it used, and, when turn
// is given, its turn promptID (the projection of usage.updated).
func (s *Store) SetUsage(ctx context.Context, sessionID string, u session.Usage, promptID string, turn *session.Usage) error {
	if err := s.updateSession(ctx, sessionID, map[string]any{"usage": usageText(u)}); err != nil {
		return err
	}
	if turn == nil || promptID == "" {
		return nil
	}
	r := s.db.WithContext(ctx).Model(&turnRow{}).Where("session_id = ? AND prompt_id = ?", sessionID, promptID).Update("usage", usageText(*turn))
	if r.Error != nil {
		return internal(r.Error, "set turn usage")
	}
	return nil
}

// UsageTotal is what the sessions of one agent profile used: tokens
// summed, and cost summed by currency.
type UsageTotal struct {
	Profile string
	Tokens  session.Usage // its token members
	Cost    map[string]float64
}

// UsageTotals sums every session's usage by agent profile, profiles in
// order (for /metrics). Each session's cost is its total so far, so the
// sum is the profile's.
func (s *Store) UsageTotals(ctx context.Context) ([]UsageTotal, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT agent_profile_id, usage FROM sessions WHERE usage IS NOT NULL ORDER BY agent_profile_id`).Rows()
	if err != nil {
		return nil, internal(err, "usage totals")
	}
	defer rows.Close()
	var out []UsageTotal
	for rows.Next() {
		var profile, text string
		if err := rows.Scan(&profile, &text); err != nil {
			return nil, internal(err, "usage totals")
		}
		u, err := usageOf(&text)
		if err != nil {
			continue // not ours: written from session.Usage only
		}
		if len(out) == 0 || out[len(out)-1].Profile != profile {
			out = append(out, UsageTotal{Profile: profile, Cost: map[string]float64{}})
		}
		t := &out[len(out)-1]
		t.Tokens = t.Tokens.Add(session.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CachedReadTokens: u.CachedReadTokens, CachedWriteTokens: u.CachedWriteTokens, TotalTokens: u.TotalTokens})
		if u.Cost != nil {
			t.Cost[u.Cost.Currency] += u.Cost.Amount
		}
	}
	return out, internalIf(rows.Err(), "usage totals")
}

// SetSessionBudget projects session.budget_changed.
func (s *Store) SetSessionBudget(ctx context.Context, id string, b session.Budget) error {
	return s.updateSession(ctx, id, map[string]any{"budget": budgetText(b)})
}

// SetTurnStalled projects turn.stalled (at, when it was found stalled)
// and turn.stall_ended (nil).
func (s *Store) SetTurnStalled(ctx context.Context, sessionID, promptID string, at *time.Time) error {
	r := s.db.WithContext(ctx).Model(&turnRow{}).Where("session_id = ? AND prompt_id = ?", sessionID, promptID).Update("stalled_at", toDBTimePtr(at))
	if r.Error != nil {
		return internal(r.Error, "set turn stalled")
	}
	return nil
}
