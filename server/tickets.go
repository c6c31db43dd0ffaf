package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/terminal"
	"github.com/tether/tether/internal/workspace"
)

// Stream tickets let a client that cannot set the Authorization header (a
// browser's native EventSource) open one event stream without putting the
// long-lived bearer token in a URL. A ticket is bound to one stream (the
// session's or the global one, with its filters), lives a short TTL, and
// holds at most one open connection at a time; within its TTL it may
// reopen its own stream, which is what EventSource's automatic reconnect
// (same URL, Last-Event-ID header) needs. Tickets are signed with a key
// derived from the daemon token (tickets_signed.go), so a ticket outlives
// the daemon that issued it: the same daemon restarted, or another node of
// a cluster, accepts it until it expires.

const (
	// DefaultStreamTicketTTL is how long a ticket opens its stream.
	DefaultStreamTicketTTL = 60 * time.Second
	// DefaultStreamTicketsMax bounds the tickets outstanding at once.
	DefaultStreamTicketsMax = 1000
	// ticketQuery is the query parameter that carries a ticket.
	ticketQuery = "ticket"
)

// streamTickets is the daemon's table of outstanding tickets. Only a hash
// of each ticket is kept, so the table never holds a usable credential.
type streamTickets struct {
	ttl time.Duration
	max int
	now func() time.Time
	// key signs tickets so that every daemon holding the same token (this
	// one after a restart, the other nodes of a cluster) redeems them.
	key []byte

	mu     sync.Mutex
	byHash map[[32]byte]*ticketEntry
}

type ticketEntry struct {
	stream  string // streamKey of the one stream it opens
	cursor  string // start of a connection without Last-Event-ID ("": the log's start)
	expires time.Time
	open    bool // a stream opened with it is being served
}

func newStreamTickets(ttl time.Duration, max int, now func() time.Time, key []byte) *streamTickets {
	if ttl <= 0 {
		ttl = DefaultStreamTicketTTL
	}
	if max <= 0 {
		max = DefaultStreamTicketsMax
	}
	if now == nil {
		now = time.Now
	}
	return &streamTickets{ttl: ttl, max: max, now: now, key: key, byHash: map[[32]byte]*ticketEntry{}}
}

// issue makes a ticket for stream. Expired tickets are dropped only when
// the table is full, so until then an expired ticket is reported as
// expired rather than unknown.
func (t *streamTickets) issue(stream, cursor string) (string, time.Time, error) {
	var nonce [ticketNonce]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", time.Time{}, errcode.Wrap(errcode.Internal, err, "could not make a stream ticket")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	tok := signTicket(t.key, nonce[:], stream, cursor, now.Add(t.ttl))
	if len(t.byHash) >= t.max {
		soonest := t.pruneLocked(now)
		if len(t.byHash) >= t.max {
			wait := int(soonest.Sub(now)/time.Second) + 1
			return "", time.Time{}, errcode.New(errcode.TooManyStreamTickets,
				"%d stream tickets are outstanding, the most --stream-tickets-max allows; one expires within %d s", t.max, wait).
				With("limit", t.max).With("retryAfter", wait)
		}
	}
	exp := now.Add(t.ttl)
	t.byHash[sha256.Sum256([]byte(tok))] = &ticketEntry{stream: stream, cursor: cursor, expires: exp}
	return tok, exp, nil
}

// pruneLocked drops the expired tickets and returns the soonest expiry of
// those left (zero when none is left).
func (t *streamTickets) pruneLocked(now time.Time) (soonest time.Time) {
	for h, e := range t.byHash {
		if !now.Before(e.expires) {
			delete(t.byHash, h)
		} else if soonest.IsZero() || e.expires.Before(soonest) {
			soonest = e.expires
		}
	}
	return soonest
}

// redeem opens stream with ticket tok. The returned release must be
// called when the stream ends; until then the ticket opens nothing else.
// cursor is where the ticket's holder asked a first connection to start.
func (t *streamTickets) redeem(tok, stream string) (cursor string, release func(), err error) {
	h := sha256.Sum256([]byte(tok))
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byHash[h]
	if e == nil {
		// A ticket this daemon has not seen: issued before a restart, or
		// by another node. It verifies for this stream or not at all.
		if exp, cursor, ok := verifyTicket(t.key, tok, stream); ok {
			e = &ticketEntry{stream: stream, cursor: cursor, expires: exp}
			if now := t.now(); now.Before(exp) {
				if len(t.byHash) >= t.max {
					t.pruneLocked(now)
				}
				t.byHash[h] = e
			}
		}
	}
	switch {
	case e == nil:
		return "", nil, errcode.New(errcode.StreamTicketInvalid, "unknown stream ticket; get one from POST /events/tickets")
	case !t.now().Before(e.expires):
		delete(t.byHash, h)
		return "", nil, errcode.New(errcode.StreamTicketExpired, "the stream ticket expired; get a new one and resume with ?cursor= set to the last event id")
	case e.stream != stream:
		return "", nil, errcode.New(errcode.StreamTicketWrongStream, "the stream ticket was issued for another stream or other filters")
	case e.open:
		return "", nil, errcode.New(errcode.StreamTicketInUse, "the stream ticket's stream is already open; a ticket holds one connection at a time")
	}
	e.open = true
	return e.cursor, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		e.open = false
	}, nil
}

// streamKey names one stream with its filters. Filters are normalized so
// "a,b" and "b, a" are the same stream.
func streamKey(sessionID, taskID, types string) string {
	kind, scope := "global", taskID
	if sessionID != "" {
		kind, scope = "session", sessionID
	}
	return kind + "\x00" + scope + "\x00" + normalizeTypes(types)
}

func normalizeTypes(types string) string {
	var out []string
	for _, t := range strings.Split(types, ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// terminalKey names one terminal's WebSocket, which a ticket may open
// like a stream (a browser's WebSocket cannot send headers either).
func terminalKey(sessionID, terminalID string) string {
	return "terminal\x00" + sessionID + "\x00" + terminalID
}

// requestStreamKey is the stream a request opens, or false when the
// request is not one of the routes a ticket opens (the two event streams
// and a terminal's WebSocket).
func requestStreamKey(c echo.Context) (string, bool) {
	if c.Request().Method != "GET" {
		return "", false
	}
	q := c.Request().URL.Query()
	switch c.Path() {
	case "/session/:id/events":
		id, err := url.PathUnescape(c.Param("id"))
		if err != nil || id == "" {
			return "", false
		}
		return streamKey(id, "", q.Get("types")), true
	case "/events":
		return streamKey("", q.Get("taskId"), q.Get("types")), true
	case "/session/:id/terminals/:terminalId/ws":
		id, err1 := url.PathUnescape(c.Param("id"))
		tid, err2 := url.PathUnescape(c.Param("terminalId"))
		if err1 != nil || err2 != nil || id == "" || tid == "" {
			return "", false
		}
		return terminalKey(id, tid), true
	}
	return "", false
}

// CreateStreamTicket serves POST /events/tickets.
func (h *handlers) CreateStreamTicket(ctx context.Context, req CreateStreamTicketRequestObject) (CreateStreamTicketResponseObject, error) {
	b := req.Body
	sid, task, types, cursor := deref(b.SessionId), deref(b.TaskId), deref(b.Types), deref(b.Cursor)
	if tid := deref(b.TerminalId); tid != "" {
		return h.terminalTicket(ctx, sid, tid, task != "" || types != "" || cursor != "")
	}
	if cursor != "" {
		if _, err := events.ParseCursor(cursor); err != nil {
			return nil, err
		}
	}
	path := "/events"
	q := url.Values{}
	if sid != "" {
		if task != "" {
			return nil, errcode.New(errcode.ValidationFailed, "taskId filters the global stream; a session's stream takes no taskId")
		}
		if _, err := h.cfg.Store.GetSession(ctx, sid); err != nil {
			return nil, err
		}
		path = "/session/" + url.PathEscape(sid) + "/events"
	} else if task != "" {
		q.Set("taskId", task)
	}
	if n := normalizeTypes(types); n != "" {
		q.Set("types", n)
	}
	tok, exp, err := h.tickets.issue(streamKey(sid, task, types), cursor)
	if err != nil {
		return nil, err
	}
	q.Set(ticketQuery, tok)
	return CreateStreamTicket201JSONResponse{Ticket: tok, Url: path + "?" + q.Encode(), ExpiresAt: exp.UTC()}, nil
}

// terminalTicket makes a ticket for the WebSocket of the session's
// terminal tid, once the executor has confirmed the terminal exists.
func (h *handlers) terminalTicket(ctx context.Context, sid, tid string, filtered bool) (CreateStreamTicketResponseObject, error) {
	switch {
	case sid == "":
		return nil, errcode.New(errcode.ValidationFailed, "a terminal ticket needs the terminal's sessionId")
	case filtered:
		return nil, errcode.New(errcode.ValidationFailed, "a terminal ticket takes no taskId, types or cursor (the WebSocket's offset is its own)")
	}
	res, err := h.workspace(ctx, sid, workspace.Request{Op: workspace.OpTerminalList})
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(res.Terminals, func(t terminal.Info) bool { return t.ID == tid && t.Command == "" }) {
		return nil, errcode.New(errcode.TerminalNotFound, "no terminal %q in this session", tid)
	}
	tok, exp, err := h.tickets.issue(terminalKey(sid, tid), "")
	if err != nil {
		return nil, err
	}
	path := "/session/" + url.PathEscape(sid) + "/terminals/" + url.PathEscape(tid) + "/ws"
	return CreateStreamTicket201JSONResponse{Ticket: tok, Url: path + "?" + url.Values{ticketQuery: {tok}}.Encode(), ExpiresAt: exp.UTC()}, nil
}
