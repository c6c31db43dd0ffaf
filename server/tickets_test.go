package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/terminal"
	"github.com/tether/tether/internal/workspace"
	"github.com/tether/tether/server"
)

// fakeClock is a clock the test moves by hand, so expiry needs no sleep.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// ticket asks for a stream ticket and returns its url (path and query).
func (d *daemon) ticket(body map[string]any) string {
	d.t.Helper()
	r := d.do("POST", "/events/tickets", body)
	if r.Status != http.StatusCreated {
		d.t.Fatalf("POST /events/tickets %v: got %d %s, want 201", body, r.Status, r.Body)
	}
	u, _ := r.JSON(d.t)["url"].(string)
	return u
}

// ticketOf is the ?ticket= value of a ticket url.
func ticketOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Query().Get("ticket")
}

// tokenless is the header set of a client that cannot send the token.
var tokenless = map[string]string{"Authorization": ""}

// problemCode reads a refused stream's problem code.
func problemCode(t *testing.T, c *sseConn) string {
	t.Helper()
	b, _ := io.ReadAll(c.Resp.Body)
	r := response{Status: c.Resp.StatusCode, Header: c.Resp.Header, Body: b}
	code, _ := r.JSON(t)["code"].(string)
	return code
}

// TestStreamTickets: a ticket opens the one stream it was issued for, with
// its filters, without the bearer token; every other use is a 401 with a
// stable code.
func TestStreamTickets(t *testing.T) {
	clock := newFakeClock()
	d := startDaemon(t, daemonOptions{clock: clock.Now})
	a, b := d.storeSession(session.SessionRunning), d.storeSession(session.SessionRunning)
	d.emit(a.ID, events.MessageAdded, 2, nil)
	d.emit(b.ID, events.MessageAdded, 1, nil)

	cases := []struct {
		name string
		// open returns the stream path to open without the token.
		open     func(t *testing.T) string
		wantCode string // "" means 200
	}{
		{"valid session ticket", func(*testing.T) string {
			return d.ticket(map[string]any{"sessionId": a.ID}) + "&follow=false"
		}, ""},
		{"valid global ticket with filters", func(*testing.T) string {
			return d.ticket(map[string]any{"taskId": a.TaskID, "types": "session.state_changed, session.created"}) + "&follow=false"
		}, ""},
		{"expired", func(*testing.T) string {
			u := d.ticket(map[string]any{"sessionId": a.ID})
			clock.Advance(server.DefaultStreamTicketTTL)
			return u
		}, "stream_ticket_expired"},
		{"reused on another stream", func(t *testing.T) string {
			u := d.ticket(map[string]any{"sessionId": a.ID})
			if c := d.stream(u+"&follow=false", tokenless); c.Resp.StatusCode != http.StatusOK {
				t.Fatalf("first use: got %d, want 200", c.Resp.StatusCode)
			}
			return "/events?follow=false&ticket=" + ticketOf(t, u)
		}, "stream_ticket_wrong_stream"},
		{"wrong session", func(t *testing.T) string {
			u := d.ticket(map[string]any{"sessionId": a.ID})
			return "/session/" + b.ID + "/events?ticket=" + ticketOf(t, u)
		}, "stream_ticket_wrong_stream"},
		{"other filters", func(t *testing.T) string {
			u := d.ticket(map[string]any{"sessionId": a.ID, "types": "message.added"})
			return "/session/" + a.ID + "/events?types=turn.started&ticket=" + ticketOf(t, u)
		}, "stream_ticket_wrong_stream"},
		{"unknown ticket", func(*testing.T) string {
			return "/session/" + a.ID + "/events?ticket=bm90LWEtdGlja2V0"
		}, "stream_ticket_invalid"},
		{"no ticket", func(*testing.T) string { return "/session/" + a.ID + "/events" }, "unauthorized"},
		{"in use", func(t *testing.T) string {
			u := d.ticket(map[string]any{"sessionId": a.ID})
			d.openStream(u, tokenless).Until(isEvent(events.ReplayComplete)) // stays open
			return u
		}, "stream_ticket_in_use"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := d.stream(tc.open(t), tokenless)
			defer c.Close()
			if tc.wantCode != "" {
				if got := c.Resp.StatusCode; got != http.StatusUnauthorized {
					t.Fatalf("got status %d, want 401 %s", got, tc.wantCode)
				}
				if got := problemCode(t, c); got != tc.wantCode {
					t.Errorf("got code %q, want %q", got, tc.wantCode)
				}
				return
			}
			if c.Resp.StatusCode != http.StatusOK {
				t.Fatalf("got status %d (%s), want 200", c.Resp.StatusCode, problemCode(t, c))
			}
			if fs := c.All(); len(ofType(fs, events.ReplayComplete)) != 1 {
				t.Errorf("got frames %v, want a replay ending in replay_complete", fs)
			}
		})
	}
}

// TestStreamTicketReconnect: EventSource reconnects with the same URL and
// a Last-Event-ID header; the ticket opens its stream again (until it
// expires) and the stream resumes after that event.
func TestStreamTicketReconnect(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	s := d.storeSession(session.SessionRunning)
	evs := d.emit(s.ID, events.MessageAdded, 3, nil)
	u := d.ticket(map[string]any{"sessionId": s.ID}) + "&follow=false"

	first := durableFrames(d.openStream(u, tokenless).All())
	if len(first) != len(evs) {
		t.Fatalf("first connection: got %d durable frames, want %d", len(first), len(evs))
	}
	again := durableFrames(d.openStream(u, map[string]string{"Authorization": "", "Last-Event-ID": first[0].ID}).All())
	if len(again) != len(evs)-1 || again[0].ID != first[1].ID {
		t.Errorf("reconnect after %s: got %d frames starting %v, want %d starting %s", first[0].ID, len(again), again, len(evs)-1, first[1].ID)
	}

	// A new ticket resumes where an old one's stream stopped: its cursor
	// stands in for the Last-Event-ID a new EventSource cannot send, and
	// the EventSource's own Last-Event-ID wins on its reconnects.
	resumed := d.ticket(map[string]any{"sessionId": s.ID, "cursor": first[0].ID}) + "&follow=false"
	for _, tc := range []struct {
		name, lastEventID string
		wantFirst         string
	}{
		{"first connection", "", first[1].ID},
		{"reconnect", first[1].ID, first[2].ID},
	} {
		got := durableFrames(d.openStream(resumed, map[string]string{"Authorization": "", "Last-Event-ID": tc.lastEventID}).All())
		if len(got) == 0 || got[0].ID != tc.wantFirst {
			t.Errorf("%s of a ticket with a cursor: got frames %v, want them to start at %s", tc.name, got, tc.wantFirst)
		}
	}
}

// TestStreamTicketRequests: what a ticket may be issued for, how many may
// be outstanding, and that a ticket authenticates nothing but streams.
func TestStreamTicketRequests(t *testing.T) {
	clock := newFakeClock()
	d := startDaemon(t, daemonOptions{clock: clock.Now, ticketsMax: 2})
	s := d.storeSession(session.SessionRunning)

	cases := []struct {
		name       string
		body       map[string]any
		wantStatus int
		wantCode   string
	}{
		{"unknown session", map[string]any{"sessionId": "nope"}, http.StatusNotFound, "session_not_found"},
		{"session with taskId", map[string]any{"sessionId": s.ID, "taskId": s.TaskID}, http.StatusBadRequest, "validation_failed"},
		{"unknown field", map[string]any{"token": "x"}, http.StatusBadRequest, "validation_failed"},
		{"bad cursor", map[string]any{"sessionId": s.ID, "cursor": "nope"}, http.StatusBadRequest, "invalid_cursor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := d.do("POST", "/events/tickets", tc.body)
			if code, _ := r.JSON(t)["code"].(string); r.Status != tc.wantStatus || code != tc.wantCode {
				t.Errorf("got %d %s, want %d %s", r.Status, r.Body, tc.wantStatus, tc.wantCode)
			}
		})
	}

	t.Run("outstanding limit", func(t *testing.T) {
		d.ticket(map[string]any{})
		d.ticket(map[string]any{"sessionId": s.ID})
		r := d.do("POST", "/events/tickets", map[string]any{})
		if code, _ := r.JSON(t)["code"].(string); r.Status != http.StatusTooManyRequests || code != "too_many_stream_tickets" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("third ticket: got %d %s (Retry-After %q), want 429 too_many_stream_tickets with Retry-After", r.Status, r.Body, r.Header.Get("Retry-After"))
		}
		clock.Advance(server.DefaultStreamTicketTTL)
		d.ticket(map[string]any{}) // the expired ones made room
	})

	t.Run("not a credential for other routes", func(t *testing.T) {
		clock.Advance(server.DefaultStreamTicketTTL)
		tk := ticketOf(t, d.ticket(map[string]any{}))
		r := d.doRaw("GET", "/sessions?ticket="+tk, nil, nil)
		if code, _ := r.JSON(t)["code"].(string); r.Status != http.StatusUnauthorized || code != "unauthorized" {
			t.Errorf("GET /sessions with a ticket: got %d %s, want 401 unauthorized", r.Status, r.Body)
		}
	})
}

// TestStreamTicketNotLogged: neither the daemon's log (at debug level) nor
// /metrics ever show a ticket, whether it opened a stream or was refused.
func TestStreamTicketNotLogged(t *testing.T) {
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d := startDaemon(t, daemonOptions{logger: logger})
	s := d.storeSession(session.SessionRunning)
	u := d.ticket(map[string]any{"sessionId": s.ID})
	tk := ticketOf(t, u)
	d.openStream(u+"&follow=false", tokenless).All()
	if c := d.stream("/events?ticket="+tk, tokenless); c.Resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong stream: got %d, want 401", c.Resp.StatusCode)
	}
	// A ticket too long for the contract, sent with the token: refused by
	// the validator, whose message must not echo it into the log either.
	d.stream("/session/"+s.ID+"/events?ticket="+tk+strings.Repeat("x", 300), nil).Close()
	metrics := d.do("GET", "/metrics", nil).Body

	mu.Lock()
	defer mu.Unlock()
	for name, text := range map[string]string{"log": buf.String(), "metrics": string(metrics)} {
		if strings.Contains(text, tk) {
			t.Errorf("the %s shows the ticket:\n%s", name, text)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestTerminalTickets: a browser's WebSocket cannot send the token, so a
// ticket opens one terminal's WebSocket and nothing else; the token never
// goes into a URL.
func TestTerminalTickets(t *testing.T) {
	terms := terminal.New(terminal.Options{})
	t.Cleanup(terms.CloseAll)
	d := startDaemon(t, daemonOptions{sessions: sessions.Config{Workspace: workspace.Config{Terminals: terms}}})
	sid, _ := d.createSession(nil)
	other, _ := d.createSession(nil)
	r := d.do("POST", "/session/"+sid+"/terminals", map[string]any{})
	if r.Status != http.StatusCreated {
		t.Fatalf("open terminal: got %d %s, want 201", r.Status, r.Body)
	}
	tid, _ := r.JSON(t)["id"].(string)
	wsURL := func(path string) string { return "ws" + strings.TrimPrefix(d.URL, "http") + path }
	dial := func(t *testing.T, path string) (*websocket.Conn, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, wsURL(path), nil)
		if err != nil {
			if resp == nil {
				t.Fatalf("dial %s: %v", path, err)
			}
			return nil, resp.StatusCode
		}
		return c, http.StatusSwitchingProtocols
	}

	t.Run("opens its terminal, one connection at a time", func(t *testing.T) {
		u := d.ticket(map[string]any{"sessionId": sid, "terminalId": tid})
		if !strings.HasPrefix(u, "/session/"+sid+"/terminals/"+tid+"/ws?ticket=") {
			t.Fatalf("got url %q, want the terminal's WebSocket with a ticket", u)
		}
		c, status := dial(t, u+"&offset=0")
		if status != http.StatusSwitchingProtocols {
			t.Fatalf("got %d, want 101", status)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if typ, b, err := c.Read(ctx); err != nil || typ != websocket.MessageText || !strings.Contains(string(b), `"hello"`) {
			t.Fatalf("first frame: got %v %q %v, want the hello", typ, b, err)
		}
		if _, status := dial(t, u); status != http.StatusUnauthorized {
			t.Errorf("a second connection with the ticket: got %d, want 401 (in use)", status)
		}
		_ = c.Close(websocket.StatusNormalClosure, "")
	})

	refusals := []struct {
		name       string
		body       map[string]any
		wantStatus int
		wantCode   string
	}{
		{"no session", map[string]any{"terminalId": tid}, http.StatusBadRequest, "validation_failed"},
		{"with a cursor", map[string]any{"sessionId": sid, "terminalId": tid, "cursor": "x"}, http.StatusBadRequest, "validation_failed"},
		{"another session's terminal", map[string]any{"sessionId": other, "terminalId": tid}, http.StatusNotFound, "terminal_not_found"},
		{"unknown session", map[string]any{"sessionId": "nope", "terminalId": tid}, http.StatusNotFound, "session_not_found"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := d.do("POST", "/events/tickets", tc.body)
			if code, _ := r.JSON(t)["code"].(string); r.Status != tc.wantStatus || code != tc.wantCode {
				t.Errorf("got %d %s, want %d %s", r.Status, r.Body, tc.wantStatus, tc.wantCode)
			}
		})
	}

	uses := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"no ticket", func(*testing.T) string { return "/session/" + sid + "/terminals/" + tid + "/ws" }},
		{"a session stream's ticket", func(t *testing.T) string {
			return "/session/" + sid + "/terminals/" + tid + "/ws?ticket=" + ticketOf(t, d.ticket(map[string]any{"sessionId": sid}))
		}},
		{"the terminal's ticket on the session's stream", func(t *testing.T) string {
			return "/session/" + sid + "/events?follow=false&ticket=" + ticketOf(t, d.ticket(map[string]any{"sessionId": sid, "terminalId": tid}))
		}},
	}
	for _, tc := range uses {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "the terminal's ticket on the session's stream" {
				c := d.stream(tc.path(t), tokenless)
				defer c.Close()
				if c.Resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("got %d, want 401", c.Resp.StatusCode)
				}
				return
			}
			if _, status := dial(t, tc.path(t)); status != http.StatusUnauthorized {
				t.Errorf("got %d, want 401", status)
			}
		})
	}
}

// TestStreamTicketSurvivesRestart: a ticket issued before the daemon
// restarts opens its stream on the restarted daemon (same token, same
// data dir) until it expires, as EventSource's reconnect needs: the stream
// resumes after the Last-Event-ID with every later event once, a ticket's
// cursor still stands in for a first connection's Last-Event-ID, and the
// refusals hold.
func TestStreamTicketSurvivesRestart(t *testing.T) {
	clock := newFakeClock()
	d := startDaemon(t, daemonOptions{clock: clock.Now})
	s := d.storeSession(session.SessionWaitingForInput)
	other := d.storeSession(session.SessionWaitingForInput)
	d.emit(s.ID, events.MessageAdded, 3, nil)
	plain := d.ticket(map[string]any{"sessionId": s.ID}) + "&follow=false"
	before := durableFrames(d.openStream(plain, tokenless).All())
	if len(before) == 0 {
		t.Fatal("the first connection replayed nothing")
	}
	last := before[len(before)-1]
	withCursor := d.ticket(map[string]any{"sessionId": s.ID, "cursor": last.ID}) + "&follow=false"
	expiring := d.ticket(map[string]any{"sessionId": s.ID})

	clock.Advance(server.DefaultStreamTicketTTL / 2)
	d = d.restart(daemonOptions{clock: clock.Now})
	d.emit(s.ID, events.MessageAdded, 2, nil)
	var want []string
	for _, e := range d.sessionLog(s.ID) {
		if e.Seq > last.seq(t) {
			want = append(want, s.EventEpoch+":"+strconv.FormatInt(e.Seq, 10))
		}
	}
	if len(want) < 2 {
		t.Fatalf("events after %s: got %v, want at least the 2 emitted after the restart", last.ID, want)
	}

	for _, tc := range []struct {
		name, path, lastEventID string
	}{
		{"EventSource's reconnect with Last-Event-ID", plain, last.ID},
		{"first connection of a ticket with a cursor", withCursor, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := d.stream(tc.path, map[string]string{"Authorization": "", "Last-Event-ID": tc.lastEventID})
			defer c.Close()
			if c.Resp.StatusCode != http.StatusOK {
				t.Fatalf("got %d %s, want 200: a ticket issued before the restart opens its stream", c.Resp.StatusCode, problemCode(t, c))
			}
			var got []string
			for _, f := range durableFrames(c.All()) {
				got = append(got, f.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got events %v, want %v (every event after %s, once)", got, want, last.ID)
			}
		})
	}

	for _, tc := range []struct {
		name, path string
		// advance moves the clock first.
		advance  time.Duration
		wantCode string
	}{
		{"on another session's stream", "/session/" + other.ID + "/events?ticket=" + ticketOf(t, plain), 0, "stream_ticket_wrong_stream"},
		{"past its TTL", expiring, server.DefaultStreamTicketTTL / 2, "stream_ticket_expired"},
	} {
		clock.Advance(tc.advance)
		t.Run(tc.name, func(t *testing.T) {
			c := d.stream(tc.path, tokenless)
			defer c.Close()
			if c.Resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("got status %d, want 401 %s", c.Resp.StatusCode, tc.wantCode)
			}
			if got := problemCode(t, c); got != tc.wantCode {
				t.Errorf("got code %q, want %q", got, tc.wantCode)
			}
		})
	}
}
