// Package onetruth is a test helper: it checks, from outside and over
// HTTP only, that what a running tetherd serves about a session is what
// the session's own event log says (issue 29: the log is the only truth;
// the transcript, the status and the recovery plan are projections of it).
//
// Check reads the durable log (GET /session/{id}/events?follow=false),
// rebuilds each view from it and compares it with what the API serves:
// the transcript (transcript.go), the status (status.go) and the context
// with its recovery plan (plan.go). Each view is compared at a cursor it
// is consistent with (the one it names, or the window between two reads
// of the log around it), so a daemon still at work gets no slack: a row
// a write changed without an event, an event whose row was lost (a
// takeover, a failed write), or an answer that shows what has not
// committed yet all show as differences. Only the recovery plan, which
// the daemon pushes at a turn's boundaries, waits until the session has
// settled.
//
// Diff and DiffExecutor (diff.go) compare a state folded from a log with
// one built from rows or an actor's memory, for the in-process suites
// (internal/sessions' replay and write-failure tests).
//
// The crash suite runs it after every crash and when each test ends, the
// server suite once the store takes writes again after an injected fault
// and after restores, and the cluster suite after a node was killed or
// cut off from the database.
package onetruth

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// deadline bounds the wait for a consistent read: a safety net against a
// daemon that never holds still, never a performance assertion.
const deadline = 60 * time.Second

// Daemon is how the check reaches a tetherd (a node, or a balancer in
// front of several).
type Daemon struct {
	// Base is the daemon's URL, e.g. http://127.0.0.1:8080.
	Base string
	// Token is the API's bearer token.
	Token string
	// Client sends the requests; nil is http.DefaultClient.
	Client *http.Client
}

// Check compares what d serves about session sid with what its event log
// implies, and reports each difference as an error of t. A session d does
// not serve (deleted, 404) is skipped.
func (d Daemon) Check(t testing.TB, sid string) {
	t.Helper()
	if !d.checkTranscript(t, sid) {
		return
	}
	d.checkStatus(t, sid)
	d.checkContext(t, sid)
}

// event is one durable event of a session's log as the API serves it.
type event struct {
	ID   string // the cursor <epoch>:<seq>
	Type string
	Seq  int64
	Data map[string]any
}

// replay is session sid's whole durable log, in order.
func (d Daemon) replay(t testing.TB, sid string) []event {
	t.Helper()
	frames := testbin.Replay(t, d.Client, d.Base, d.Token, sid)
	out := make([]event, 0, len(frames))
	for _, f := range frames {
		e := event{ID: f.ID, Type: f.Event, Seq: cursorSeq(t, f.ID)}
		if err := json.Unmarshal([]byte(f.Data), &e.Data); err != nil {
			t.Fatalf("one truth: event %s %s: %v", f.ID, f.Event, err)
		}
		out = append(out, e)
	}
	return out
}

// head is the sequence number of the log's last event (0: empty).
func head(log []event) int64 {
	if len(log) == 0 {
		return 0
	}
	return log[len(log)-1].Seq
}

// get sends GET path and decodes a 200 answer into v; it returns the
// status code.
func (d Daemon) get(t testing.TB, path string, v any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.Base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := d.client().Do(req)
	if err != nil {
		t.Fatalf("one truth: GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("one truth: GET %s: decode %s: %v", path, b, err)
		}
	}
	return resp.StatusCode
}

func (d Daemon) client() *http.Client {
	if d.Client != nil {
		return d.Client
	}
	return http.DefaultClient
}

// cursorSeq is the sequence number of a cursor <epoch>:<seq>.
func cursorSeq(t testing.TB, cursor string) int64 {
	t.Helper()
	_, seq, _ := strings.Cut(cursor, ":")
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		t.Fatalf("one truth: cursor %q: %v", cursor, err)
	}
	return n
}

// jsonEqual compares two values as their JSON encodings decode.
func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}

// differ reports that view serves got where the log implies want.
func differ(t testing.TB, view, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	t.Errorf("one truth, %s %s: served %s, the log implies %s", view, what, g, w)
}
