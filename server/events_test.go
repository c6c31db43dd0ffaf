package server_test

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/r3labs/sse/v2"
	"gopkg.in/cenkalti/backoff.v1"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// TestSessionStreamReplay checks what a stream replays for each way of
// naming where to start, and the frames around the replay.
func TestSessionStreamReplay(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	s := d.storeSession(session.SessionRunning)
	types := []string{events.TurnStarted, events.MessageChunk, events.ToolCallStarted, events.MessageChunk, events.TurnCompleted}
	for _, typ := range types {
		d.emit(s.ID, typ, 1, nil)
	}
	e := s.EventEpoch
	base := "/session/" + s.ID + "/events"
	cases := []struct {
		name    string
		query   string
		headers map[string]string
		wantIDs []int64
	}{
		{"no cursor replays everything", "?follow=false", nil, []int64{1, 2, 3, 4, 5}},
		{"cursor in query", "?follow=false&cursor=" + cursorOf(e, 2), nil, []int64{3, 4, 5}},
		{"Last-Event-ID header", "?follow=false", map[string]string{"Last-Event-ID": cursorOf(e, 3)}, []int64{4, 5}},
		{"query cursor wins over header", "?follow=false&cursor=" + cursorOf(e, 1), map[string]string{"Last-Event-ID": cursorOf(e, 4)}, []int64{2, 3, 4, 5}},
		{"cursor at head replays nothing", "?follow=false&cursor=" + cursorOf(e, 5), nil, nil},
		{"types filter", "?follow=false&types=" + events.MessageChunk + "," + events.TurnCompleted, nil, []int64{2, 4, 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := d.openStream(base+tc.query, tc.headers)
			for k, want := range map[string]string{"Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
				if got := c.Resp.Header.Get(k); got != want {
					t.Errorf("header %s: got %q, want %q", k, got, want)
				}
			}
			frames := c.All()
			if len(frames) == 0 || frames[0].Retry != "2000" || frames[0].HasID {
				t.Fatalf("got first frame %+v, want retry: 2000 without id", frames)
			}
			var gotIDs []int64
			for _, f := range durableFrames(frames) {
				gotIDs = append(gotIDs, f.seq(t))
				if want := types[f.seq(t)-1]; f.Event != want {
					t.Errorf("event %s: got type %q, want %q", f.ID, f.Event, want)
				}
				if f.JSON(t)["sessionId"] != s.ID {
					t.Errorf("event %s: got payload %s, want its sessionId", f.ID, f.Data)
				}
			}
			if !slices.Equal(gotIDs, tc.wantIDs) {
				t.Errorf("got seqs %v, want %v", gotIDs, tc.wantIDs)
			}
			last := frames[len(frames)-1]
			if last.Event != events.ReplayComplete || last.HasID {
				t.Fatalf("got last frame %+v, want replay_complete without id", last)
			}
			if got := last.JSON(t)["cursor"]; got != cursorOf(e, 5) {
				t.Errorf("replay_complete cursor: got %v, want %s", got, cursorOf(e, 5))
			}
		})
	}
}

// TestSessionStreamReplayThenLive checks the hand-over from the log to the
// hub: events written after the stream opened follow the replay at once.
func TestSessionStreamReplayThenLive(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	s := d.storeSession(session.SessionRunning)
	d.emit(s.ID, events.MessageChunk, 3, nil)
	c := d.openStream("/session/"+s.ID+"/events", nil)
	replayed := durableFrames(c.Until(isEvent(events.ReplayComplete)))
	checkConsecutive(t, replayed, s.EventEpoch, 1)
	if len(replayed) != 3 {
		t.Fatalf("got %d replayed events, want 3", len(replayed))
	}
	d.emit(s.ID, events.MessageChunk, 4, nil)
	live := durableFrames(c.Until(func(f sseFrame) bool { return f.ID == cursorOf(s.EventEpoch, 7) }))
	checkConsecutive(t, live, s.EventEpoch, 4)
	// session.closed is the stream's last event: the server ends it.
	d.emit(s.ID, events.SessionClosed, 1, nil)
	rest := c.All()
	if len(rest) != 1 || rest[0].Event != events.SessionClosed || rest[0].ID != cursorOf(s.EventEpoch, 8) {
		t.Fatalf("got %+v after the live events, want session.closed with id 8 and the end of the stream", rest)
	}
}

// TestSessionStreamOfRealTurns streams what the session runtime writes for
// real prompts to the demo agent.
func TestSessionStreamOfRealTurns(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	for _, p := range []string{"/stream 5", "hello"} {
		d.waitTurn(sid, d.prompt(sid, p, ""))
	}
	epoch := d.do("GET", "/session/"+sid, nil).JSON(t)["eventEpoch"].(string)
	frames := durableFrames(d.openStream("/session/"+sid+"/events?follow=false", nil).All())
	if len(frames) == 0 {
		t.Fatal("got no events for a session that ran two turns")
	}
	checkConsecutive(t, frames, epoch, 1)
	if got := int64(len(frames)); got != int64(len(d.sessionLog(sid))) {
		t.Errorf("got %d events, want the %d in the log", got, len(d.sessionLog(sid)))
	}
	count := map[string]int{}
	for _, f := range frames {
		count[f.Event]++
		if f.JSON(t)["sessionId"] != sid {
			t.Errorf("event %s %s: got payload %s, want sessionId %s", f.ID, f.Event, f.Data, sid)
		}
	}
	for typ, atLeast := range map[string]int{events.TurnStarted: 2, events.TurnCompleted: 2, events.MessageChunk: 5} {
		if count[typ] < atLeast {
			t.Errorf("got %d %s events, want at least %d (all: %v)", count[typ], typ, atLeast, count)
		}
	}
	if last := frames[len(frames)-1]; last.Event == events.TurnStarted {
		t.Errorf("got last event %s, want the turn to have ended", last.Event)
	}
}

// TestSessionStreamResumesAcrossRandomDisconnects drops the connection at
// random points while events keep being written and resumes each time from
// the last id seen: the concatenation must be the log, in order, once.
func TestSessionStreamResumesAcrossRandomDisconnects(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	s := d.storeSession(session.SessionRunning)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	const batches, perBatch = 40, 25
	const total = batches * perBatch
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for b := range batches {
			d.emit(s.ID, events.MessageChunk, perBatch, func(i int) map[string]any {
				return map[string]any{"text": "batch " + strconv.Itoa(b) + " chunk " + strconv.Itoa(i)}
			})
		}
	}()
	defer func() { <-writerDone }()

	var got []sseFrame
	last := ""
	for conns := 0; len(got) < total; conns++ {
		if conns > 10*total {
			t.Fatalf("no progress after %d connections (%d events)", conns, len(got))
		}
		path, headers := "/session/"+s.ID+"/events", map[string]string{}
		if last != "" {
			// Both ways of resuming: EventSource's header and ?cursor=.
			if rng.IntN(2) == 0 {
				headers["Last-Event-ID"] = last
			} else {
				path += "?cursor=" + last
			}
		}
		c := d.openStream(path, headers)
		want := 1 + rng.IntN(60)
		for n := 0; n < want && len(got) < total; {
			f := c.MustNext()
			if f.durable() {
				got = append(got, f)
				last = f.ID
				n++
			}
		}
		c.Close()
	}
	<-writerDone
	checkConsecutive(t, got, s.EventEpoch, 1)
	log := d.sessionLog(s.ID)
	if len(log) != total {
		t.Fatalf("got %d events in the log, want %d", len(log), total)
	}
	for i, e := range log {
		if got[i].Event != e.Type || got[i].Data != string(e.Payload) {
			t.Fatalf("event %d: got %s %s, want %s %s", i+1, got[i].Event, got[i].Data, e.Type, e.Payload)
		}
	}
}

// TestSessionStreamRefusals covers the answers that are not a normal
// stream: problems before streaming, 204 for a drained closed session, and
// resync_required for cursors that cannot be continued.
func TestSessionStreamRefusals(t *testing.T) {
	d := startDaemon(t, daemonOptions{hub: events.HubConfig{MaxPerSession: 1}})
	ctx := context.Background()
	open := d.storeSession(session.SessionRunning)
	d.emit(open.ID, events.MessageChunk, 5, nil)
	closed := d.storeSession(session.SessionRunning)
	d.emit(closed.ID, events.MessageChunk, 3, nil)
	d.emit(closed.ID, events.SessionClosed, 1, nil)
	if err := d.Store.UpdateSessionState(ctx, closed.ID, session.SessionCompleted); err != nil {
		t.Fatal(err)
	}
	empty := d.storeSession(session.SessionCompleted)
	full := d.storeSession(session.SessionRunning) // its one stream slot gets taken below

	problems := []struct {
		name    string
		path    string
		headers map[string]string
		status  int
		code    string
	}{
		{"malformed cursor", "/session/" + open.ID + "/events?cursor=nope", nil, http.StatusBadRequest, "invalid_cursor"},
		{"malformed Last-Event-ID", "/session/" + open.ID + "/events", map[string]string{"Last-Event-ID": "abc:-1"}, http.StatusBadRequest, "invalid_cursor"},
		{"non-hex epoch", "/session/" + open.ID + "/events?cursor=xyz:1", nil, http.StatusBadRequest, "invalid_cursor"},
		{"unknown session", "/session/00000000-0000-0000-0000-000000000000/events", nil, http.StatusNotFound, "session_not_found"},
		{"no token", "/session/" + open.ID + "/events", map[string]string{"Authorization": ""}, http.StatusUnauthorized, "unauthorized"},
		{"no token on the global stream", "/events", map[string]string{"Authorization": ""}, http.StatusUnauthorized, "unauthorized"},
		{"malformed global cursor", "/events?cursor=1", nil, http.StatusBadRequest, "invalid_cursor"},
	}
	for _, tc := range problems {
		t.Run(tc.name, func(t *testing.T) {
			c := d.stream(tc.path, tc.headers)
			r := readResponse(t, c)
			d.validate(c.Resp.Request, r)
			if r.Status != tc.status || r.JSON(t)["code"] != tc.code {
				t.Fatalf("got %d %s, want %d with code %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}

	t.Run("too many subscribers", func(t *testing.T) {
		first := d.openStream("/session/"+full.ID+"/events", nil)
		first.Until(isEvent(events.ReplayComplete))
		c := d.stream("/session/"+full.ID+"/events", nil)
		r := readResponse(t, c)
		if r.Status != http.StatusTooManyRequests || r.JSON(t)["code"] != "too_many_subscribers" {
			t.Fatalf("got %d %s, want 429 too_many_subscribers", r.Status, r.Body)
		}
		if r.Header.Get("Retry-After") == "" {
			t.Error("got no Retry-After on 429")
		}
	})

	noContent := []struct {
		name    string
		path    string
		headers map[string]string
	}{
		{"closed session at its head", "/session/" + closed.ID + "/events", map[string]string{"Last-Event-ID": cursorOf(closed.EventEpoch, 4)}},
		{"closed session with an empty log", "/session/" + empty.ID + "/events", nil},
	}
	for _, tc := range noContent {
		t.Run(tc.name, func(t *testing.T) {
			r := readResponse(t, d.stream(tc.path, tc.headers))
			if r.Status != http.StatusNoContent {
				t.Fatalf("got %d %s, want 204", r.Status, r.Body)
			}
		})
	}

	t.Run("closed session behind its head ends after the replay", func(t *testing.T) {
		frames := d.openStream("/session/"+closed.ID+"/events?cursor="+cursorOf(closed.EventEpoch, 2), nil).All()
		got := durableFrames(frames)
		checkConsecutive(t, got, closed.EventEpoch, 3)
		if len(got) != 2 || got[1].Event != events.SessionClosed {
			t.Fatalf("got %+v, want seq 3 and session.closed", got)
		}
	})

	resyncs := []struct {
		name, path, reason, cursor string
	}{
		{"epoch mismatch", "/session/" + open.ID + "/events?cursor=" + cursorOf("0123abcd", 2), events.ReasonEpochMismatch, cursorOf(open.EventEpoch, 5)},
		{"cursor ahead", "/session/" + open.ID + "/events?cursor=" + cursorOf(open.EventEpoch, 6), events.ReasonCursorAhead, cursorOf(open.EventEpoch, 5)},
	}
	for _, tc := range resyncs {
		t.Run(tc.name, func(t *testing.T) { checkResync(t, d, tc.path, tc.reason, tc.cursor) })
	}
}

// checkResync asserts that path answers retry, one resync_required (no id)
// with the given reason and cursor, and the end of the stream.
func checkResync(t *testing.T, d *daemon, path, reason, cursor string) {
	t.Helper()
	frames := d.openStream(path, nil).All()
	if len(frames) != 2 || frames[1].Event != events.ResyncRequired || frames[1].HasID {
		t.Fatalf("got %+v, want retry then one resync_required without id, then the end", frames)
	}
	data := frames[1].JSON(t)
	wantEpoch, _, _ := strings.Cut(cursor, ":")
	if data["reason"] != reason || data["epoch"] != wantEpoch || data["cursor"] != cursor {
		t.Errorf("got %s, want reason %s, epoch %s, cursor %s", frames[1].Data, reason, wantEpoch, cursor)
	}
}

// TestSessionStreamAfterRetention prunes a closed session's log: cursors
// before what is retained get resync_required{cursor_expired}; a cursor
// just before the oldest retained event still resumes.
func TestSessionStreamAfterRetention(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	ctx := context.Background()
	s := d.storeSession(session.SessionRunning)
	d.emit(s.ID, events.MessageChunk, 10, nil)
	if err := d.Store.UpdateSessionState(ctx, s.ID, session.SessionCompleted); err != nil {
		t.Fatal(err)
	}
	if _, err := events.Prune(ctx, d.Writer, time.Now().Add(time.Hour), 3, 4); err != nil {
		t.Fatalf("prune: %v", err)
	}
	path := "/session/" + s.ID + "/events?cursor="
	for _, n := range []int64{0, 2, 6} {
		t.Run("expired at "+cursorOf("", n), func(t *testing.T) {
			checkResync(t, d, path+cursorOf(s.EventEpoch, n), events.ReasonCursorExpired, cursorOf(s.EventEpoch, 10))
		})
	}
	t.Run("from the oldest retained event", func(t *testing.T) {
		got := durableFrames(d.openStream(path+cursorOf(s.EventEpoch, 7), nil).All())
		checkConsecutive(t, got, s.EventEpoch, 8)
		if len(got) != 3 {
			t.Fatalf("got %d events, want 8..10", len(got))
		}
	})
	t.Run("at the head", func(t *testing.T) {
		if r := readResponse(t, d.stream(path+cursorOf(s.EventEpoch, 10), nil)); r.Status != http.StatusNoContent {
			t.Fatalf("got %d %s, want 204", r.Status, r.Body)
		}
	})
}

// readResponse reads a non-stream answer in full.
func readResponse(t *testing.T, c *sseConn) response {
	t.Helper()
	defer c.Close()
	var b strings.Builder
	for {
		line, err := c.r.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			break
		}
	}
	return response{Status: c.Resp.StatusCode, Header: c.Resp.Header, Body: []byte(b.String())}
}

// TestHeartbeatsAreCommentsWithoutIDs idles a stream with a short
// heartbeat: pings are comments that never carry an id, so they never move
// an EventSource's cursor, and events between them keep their own ids.
func TestHeartbeatsAreCommentsWithoutIDs(t *testing.T) {
	d := startDaemon(t, daemonOptions{heartbeat: 50 * time.Millisecond})
	s := d.storeSession(session.SessionRunning)
	d.emit(s.ID, events.MessageChunk, 2, nil)
	c := d.openStream("/session/"+s.ID+"/events", nil)
	c.Until(isEvent(events.ReplayComplete))
	pings := 0
	wantNext := int64(3)
	for pings < 6 {
		f := c.MustNext()
		switch {
		case len(f.Comments) > 0:
			if f.HasID || f.Event != "" || f.Data != "" {
				t.Fatalf("got heartbeat %+v, want a bare comment", f)
			}
			pings++
			if pings == 3 {
				d.emit(s.ID, events.MessageChunk, 1, nil)
			}
		case f.durable():
			if f.ID != cursorOf(s.EventEpoch, wantNext) {
				t.Fatalf("got event id %s between heartbeats, want %s", f.ID, cursorOf(s.EventEpoch, wantNext))
			}
			wantNext++
		default:
			t.Fatalf("got unexpected frame %+v", f)
		}
	}
	if wantNext != 4 {
		t.Errorf("got %d events between heartbeats, want 1", wantNext-3)
	}
}

// TestStalledSubscriberIsCutOffWhileOthersKeepUp opens one stream that
// never reads and one that does. The stalled one must be dropped by the
// hub (and its connection closed) while the reader receives every event.
func TestStalledSubscriberIsCutOffWhileOthersKeepUp(t *testing.T) {
	d := startDaemon(t, daemonOptions{hub: events.HubConfig{Buffer: 64}})
	s := d.storeSession(session.SessionRunning)
	// A tiny receive window makes the stall reach the server after a few
	// megabytes instead of tens.
	stalledClient := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Control: smallReceiveBuffer}).DialContext}}
	defer stalledClient.CloseIdleConnections()
	stalled := d.streamWith(stalledClient, "/session/"+s.ID+"/events", nil)
	if stalled.Resp.StatusCode != http.StatusOK {
		t.Fatalf("stalled stream: got %d, want 200", stalled.Resp.StatusCode)
	}
	reader := d.openStream("/session/"+s.ID+"/events", nil)
	reader.Until(isEvent(events.ReplayComplete))
	d.waitFor("both subscribers", func() bool { return d.Hub.Count() == 2 })

	big := strings.Repeat("x", 4096)
	const perBatch, maxBatches = 50, 400
	var received int64
	cutAt := -1
	for b := 0; b < maxBatches && (cutAt < 0 || b < cutAt+3); b++ {
		evs := d.emit(s.ID, events.MessageChunk, perBatch, func(i int) map[string]any { return map[string]any{"text": big} })
		// Lockstep: the reader drains each batch before the next, so only
		// the stalled subscriber can fall behind.
		for received < evs[len(evs)-1].Seq {
			f := reader.MustNext()
			if !f.durable() {
				continue
			}
			if got := f.seq(t); got != received+1 {
				t.Fatalf("reader: got seq %d, want %d", got, received+1)
			}
			received++
		}
		if cutAt < 0 && d.Hub.Count() == 1 {
			cutAt = b
		}
	}
	if cutAt < 0 {
		t.Fatalf("the stalled subscriber was never cut off after %d events", received)
	}
	t.Logf("stalled subscriber cut off after batch %d; reader got all %d events", cutAt, received)

	// The server must drop the stalled connection by itself: reading now
	// yields a gapless prefix of the log and then the end of the stream.
	var got int64
	lagged := false
	for {
		f, err := stalled.Next()
		if err != nil {
			t.Logf("stalled stream: %d events, stream_lagged %v, then %v", got, lagged, err)
			break
		}
		switch {
		case f.durable():
			if f.seq(t) != got+1 {
				t.Fatalf("stalled stream: got seq %d, want %d", f.seq(t), got+1)
			}
			got++
		case f.Event == events.StreamLagged:
			lagged = true
			if c := f.JSON(t)["cursor"]; c != cursorOf(s.EventEpoch, got) {
				t.Errorf("stream_lagged: got cursor %v, want %s", c, cursorOf(s.EventEpoch, got))
			}
		}
	}
	if got >= received {
		t.Errorf("stalled stream got all %d events, want it cut off", got)
	}
}

// TestReplayThatOutrunsTheHubQueueResumesFromTheLog holds a long replay
// back (the client does not read) while more events are written than the
// hub queue holds. The stream must not lose or repeat any of them: the
// subscription is renewed and the rest comes from the log.
func TestReplayThatOutrunsTheHubQueueResumesFromTheLog(t *testing.T) {
	d := startDaemon(t, daemonOptions{hub: events.HubConfig{Buffer: 8}})
	s := d.storeSession(session.SessionRunning)
	big := strings.Repeat("y", 2048)
	payload := func(int) map[string]any { return map[string]any{"text": big} }
	const backlog, during = 3000, 200
	for range backlog / 500 {
		d.emit(s.ID, events.MessageChunk, 500, payload)
	}
	slow := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Control: smallReceiveBuffer}).DialContext}}
	defer slow.CloseIdleConnections()
	c := d.streamWith(slow, "/session/"+s.ID+"/events", nil)
	if c.Resp.StatusCode != http.StatusOK {
		t.Fatalf("got %d, want 200", c.Resp.StatusCode)
	}
	for range during / 10 {
		d.emit(s.ID, events.MessageChunk, 10, payload)
	}
	var frames []sseFrame
	completes, lastSeen := 0, false
	for completes == 0 || !lastSeen {
		f := c.MustNext()
		frames = append(frames, f)
		switch {
		case f.ID == cursorOf(s.EventEpoch, backlog+during):
			lastSeen = true
		case f.Event == events.ReplayComplete:
			completes++
			t.Logf("replay_complete at %s", f.JSON(t)["cursor"])
		case f.Event == events.StreamLagged || f.Event == events.ResyncRequired:
			t.Fatalf("got %s %s, want the stream to carry on", f.Event, f.Data)
		}
	}
	checkConsecutive(t, durableFrames(frames), s.EventEpoch, 1)
	if completes != 1 {
		t.Errorf("got %d replay_complete frames, want 1", completes)
	}
}

// TestGlobalStreamFiltersByTask writes global and session-only events for
// two tasks and reads /events with and without ?taskId=.
func TestGlobalStreamFiltersByTask(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	ctx := context.Background()
	epoch, err := d.Store.GlobalEpoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, b := d.storeSession(session.SessionRunning), d.storeSession(session.SessionRunning)
	state := func(s session.Session) func(int) map[string]any {
		return func(i int) map[string]any { return map[string]any{"taskId": s.TaskID, "state": "RUNNING"} }
	}
	var global []store.Event
	for range 3 {
		global = append(global, d.emit(a.ID, events.SessionStateChanged, 1, state(a))...)
		d.emit(a.ID, events.MessageChunk, 2, nil) // session-only: not on /events
		global = append(global, d.emit(b.ID, events.SessionStateChanged, 1, state(b))...)
	}
	idsOf := func(evs []store.Event, keep func(store.Event) bool) []string {
		var out []string
		for _, e := range evs {
			if keep(e) {
				out = append(out, cursorOf(epoch, e.ID))
			}
		}
		return out
	}
	frameIDs := func(fs []sseFrame) []string {
		var out []string
		for _, f := range durableFrames(fs) {
			out = append(out, f.ID)
		}
		return out
	}
	all := func(store.Event) bool { return true }
	ofA := func(e store.Event) bool { return e.SessionID == a.ID }
	cases := []struct {
		name  string
		query string
		want  []string
	}{
		{"every global event", "?follow=false", idsOf(global, all)},
		{"one task", "?follow=false&taskId=" + a.TaskID, idsOf(global, ofA)},
		{"one task from a cursor", "?follow=false&taskId=" + a.TaskID + "&cursor=" + cursorOf(epoch, global[0].ID), idsOf(global[1:], ofA)},
		{"unknown task", "?follow=false&taskId=nope", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frames := d.openStream("/events"+tc.query, nil).All()
			if got := frameIDs(frames); !slices.Equal(got, tc.want) {
				t.Fatalf("got ids %v, want %v", got, tc.want)
			}
			for _, f := range durableFrames(frames) {
				if f.Event != events.SessionStateChanged {
					t.Errorf("got %s on the global stream, want only global types", f.Event)
				}
			}
			if last := frames[len(frames)-1]; last.Event != events.ReplayComplete {
				t.Errorf("got last frame %+v, want replay_complete", last)
			}
		})
	}

	t.Run("live with a task filter", func(t *testing.T) {
		c := d.openStream("/events?taskId="+b.TaskID, nil)
		c.Until(isEvent(events.ReplayComplete))
		d.emit(a.ID, events.SessionStateChanged, 1, state(a))
		want := d.emit(b.ID, events.SessionStateChanged, 1, state(b))[0]
		f := c.MustNext()
		if f.ID != cursorOf(epoch, want.ID) || f.JSON(t)["taskId"] != b.TaskID {
			t.Fatalf("got %+v, want task %s's event %d (the other task's skipped)", f, b.TaskID, want.ID)
		}
	})

	t.Run("cursor from another database", func(t *testing.T) {
		frames := d.openStream("/events?cursor="+cursorOf("feedface", 1), nil).All()
		if len(frames) != 2 || frames[1].Event != events.ResyncRequired || frames[1].JSON(t)["reason"] != events.ReasonEpochMismatch {
			t.Fatalf("got %+v, want resync_required epoch_mismatch", frames)
		}
	})
}

// TestR3labsClientResumesAfterServerDropsConnections uses a third-party SSE
// client: the server drops every connection mid-stream, the client
// reconnects on its own with Last-Event-ID, and each event arrives once.
func TestR3labsClientResumesAfterServerDropsConnections(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	s := d.storeSession(session.SessionRunning)
	d.emit(s.ID, events.MessageChunk, 20, nil)

	var (
		mu       sync.Mutex
		ids      []string
		replays  int
		progress = make(chan struct{}, 1)
	)
	client := sse.NewClient(d.URL + "/session/" + s.ID + "/events")
	client.Headers["Authorization"] = "Bearer " + testToken
	client.Connection = d.client
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	client.ReconnectStrategy = backoff.WithContext(backoff.NewConstantBackOff(20*time.Millisecond), ctx)
	done := make(chan error, 1)
	go func() {
		done <- client.SubscribeRawWithContext(ctx, func(m *sse.Event) {
			mu.Lock()
			switch string(m.Event) {
			case events.MessageChunk:
				ids = append(ids, string(m.ID))
			case events.ReplayComplete:
				replays++
			}
			mu.Unlock()
			select {
			case progress <- struct{}{}:
			default:
			}
		})
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitIDs := func(n int) {
		t.Helper()
		deadline := time.After(streamTimeout)
		for {
			mu.Lock()
			got := len(ids)
			mu.Unlock()
			if got >= n {
				return
			}
			select {
			case <-progress:
			case <-deadline:
				t.Fatalf("got %d events, want %d", got, n)
			}
		}
	}

	waitIDs(20)
	for round := range 3 {
		d.dropConnections()
		d.emit(s.ID, events.MessageChunk, 10, nil)
		waitIDs(30 + 10*round)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 50 {
		t.Fatalf("got %d events, want 50 exactly once: %v", len(ids), ids)
	}
	for i, id := range ids {
		if want := cursorOf(s.EventEpoch, int64(i+1)); id != want {
			t.Fatalf("event %d: got id %s, want %s (ids %v)", i, id, want, ids)
		}
	}
	if replays < 2 {
		t.Errorf("got %d connections, want the client to have reconnected", replays)
	}
}
