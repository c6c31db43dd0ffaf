package store

import (
	"context"
	"slices"
	"strings"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// MaxTranscriptPageSize is the most turns one transcript page holds.
const MaxTranscriptPageSize = 500

// TranscriptPage is one page of a session's transcript: a run of its turns
// (by seq) with their messages and tool calls, and the items outside any
// turn (system notices) of the page's time span.
type TranscriptPage struct {
	Turns     []session.Turn
	Messages  []session.Message
	ToolCalls []session.ToolCall
	// Next is the page token of the page of older turns; "" on the oldest.
	Next string
}

// transcriptToken is the decoded form of a transcript page token: the seq
// of the oldest turn of the page after the one it asks for. The page
// holds the turns before it, and the items outside any turn created
// before that turn was.
type transcriptToken struct {
	Seq int64 `json:"s"`
}

func (t transcriptToken) String() string { return encodeToken(t) }

// TranscriptPage reads the latest limit turns of the session before the
// page token (the latest of all when token is ""), in one snapshot when
// the caller holds none. Turns come by seq; a message or tool call of a
// turn is on its turn's page; one outside any turn is on the page whose
// span [its oldest turn's created_at, the next page's) holds its
// created_at, the oldest page's span open below and the latest's above,
// so the pages partition the transcript. Its cost is the page's, not the
// history's: every read is an index range of the page. A malformed token,
// or one of no turn of the session, gives errcode.InvalidRequest.
func (s *Store) TranscriptPage(ctx context.Context, sessionID string, limit int, token string) (TranscriptPage, error) {
	if !s.inTx && s.db != s.rdb {
		var out TranscriptPage
		err := s.Snapshot(ctx, func(r *Store) error {
			var err error
			out, err = r.TranscriptPage(ctx, sessionID, limit, token)
			return err
		})
		return out, err
	}
	limit = min(max(limit, 1), MaxTranscriptPageSize)
	if err := s.flushChunks(ctx); err != nil {
		return TranscriptPage{}, err
	}
	db := s.db.WithContext(ctx)
	turnsQ := db.Where("session_id = ?", sessionID)
	var hi *dbTime // the newer page's span starts here
	if token != "" {
		tok, err := decodeTranscriptToken(token)
		if err != nil {
			return TranscriptPage{}, err
		}
		var newer []turnRow
		if err := db.Where("session_id = ? AND seq = ?", sessionID, tok.Seq).Limit(1).Find(&newer).Error; err != nil {
			return TranscriptPage{}, internal(err, "read transcript page")
		}
		if len(newer) == 0 {
			return TranscriptPage{}, errcode.New(errcode.InvalidRequest, "invalid page token: no turn %d in session %q", tok.Seq, sessionID)
		}
		hi = &newer[0].CreatedAt
		turnsQ = turnsQ.Where("seq < ?", tok.Seq)
	}
	var turns []turnRow
	// One extra row tells whether an older page exists without a COUNT.
	if err := turnsQ.Order("seq DESC").Limit(limit + 1).Find(&turns).Error; err != nil {
		return TranscriptPage{}, internal(err, "read transcript page")
	}
	var out TranscriptPage
	var lo *dbTime // this page's span starts here (nil: the oldest page)
	if len(turns) > limit {
		turns = turns[:limit]
		oldest := turns[limit-1].CreatedAt // a copy: turns is reversed below
		lo = &oldest
		out.Next = transcriptToken{Seq: turns[limit-1].Seq}.String()
	}
	slices.Reverse(turns)
	ids := make([]string, 0, len(turns))
	out.Turns = make([]session.Turn, 0, len(turns))
	for _, t := range turns {
		ids = append(ids, t.PromptID)
		out.Turns = append(out.Turns, toTurn(t))
	}

	where, args := pageItemsWhere("", sessionID, ids, lo, hi)
	var rows []messageRow
	if err := db.Where(where, args...).Order("id").Find(&rows).Error; err != nil {
		return TranscriptPage{}, internal(err, "read transcript page")
	}
	mwhere, margs := pageItemsWhere("m.", sessionID, ids, lo, hi)
	chunks, err := scanChunks(db, `SELECT c.message_id, c.text, c.created_at FROM message_chunks c
		JOIN messages m ON m.id = c.message_id WHERE `+mwhere+` ORDER BY c.message_id, c.id`, margs...)
	if err != nil {
		return TranscriptPage{}, err
	}
	out.Messages = mergeChunks(rows, chunks)
	if out.ToolCalls, err = s.listToolCalls(db.Where(where, args...)); err != nil {
		return TranscriptPage{}, err
	}
	return out, nil
}

// pageItemsWhere is the condition (on columns prefixed by table) that
// picks a page's messages or tool calls of the session: those of its
// turns, and those of no turn created in [lo, hi) (a nil bound is open).
// Each branch names the session, so each is a range of the (session_id,
// prompt_id, …) index: with the session outside the OR, SQLite walks all
// of the session's rows instead (the first page of a 10,000-turn session
// took 4.6× that of a 50-turn one).
func pageItemsWhere(table, sessionID string, promptIDs []string, lo, hi *dbTime) (string, []any) {
	var b strings.Builder
	var args []any
	b.WriteString("(")
	if len(promptIDs) > 0 {
		b.WriteString("(" + table + "session_id = ? AND " + table + "prompt_id IN (" + strings.TrimSuffix(strings.Repeat("?,", len(promptIDs)), ",") + ")) OR ")
		args = append(args, sessionID)
		for _, id := range promptIDs {
			args = append(args, id)
		}
	}
	b.WriteString("(" + table + "session_id = ? AND " + table + "prompt_id = ''")
	args = append(args, sessionID)
	if lo != nil {
		b.WriteString(" AND " + table + "created_at >= ?")
		args = append(args, *lo)
	}
	if hi != nil {
		b.WriteString(" AND " + table + "created_at < ?")
		args = append(args, *hi)
	}
	b.WriteString("))")
	return b.String(), args
}

func decodeTranscriptToken(s string) (transcriptToken, error) {
	var t transcriptToken
	if err := decodeToken(s, &t); err != nil || t.Seq <= 0 {
		return transcriptToken{}, errcode.New(errcode.InvalidRequest, "invalid page token")
	}
	return t, nil
}
