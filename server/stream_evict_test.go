package server_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
)

// neverReader opens a raw TCP connection, sends an SSE request for path and
// never reads the answer, as a stuck or hostile client does.
func (d *daemon) neverReader(path string) net.Conn {
	d.t.Helper()
	conn, err := net.Dial("tcp", d.Server.Listener.Addr().String())
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = conn.Close() })
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer %s\r\n\r\n", path, testToken); err != nil {
		d.t.Fatal(err)
	}
	return conn
}

// TestNeverReadingClientsDoNotLockASessionStream fills a session's
// subscriber limit (64) with clients that never read; a healthy client
// still connects and streams, and the oldest never-reader is the one
// displaced: it gets stream_lagged and its connection is closed.
func TestNeverReadingClientsDoNotLockASessionStream(t *testing.T) {
	const limit = 64
	// MinAge (how long a quiet subscriber is protected) is shortened so the
	// test need not wait for the never-readers to age.
	d := startDaemon(t, daemonOptions{leakCheck: true, hub: events.HubConfig{MaxPerSession: limit, MinAge: time.Nanosecond}})
	sid, _ := d.createSession(nil)
	path := "/session/" + sid + "/events"

	var stuck []net.Conn
	for i := 0; i < limit; i++ {
		stuck = append(stuck, d.neverReader(path))
		d.waitFor(fmt.Sprintf("never-reader %d to subscribe", i+1), func() bool { return d.Hub.Count() == i+1 })
	}

	healthy := d.openStream(path, nil)
	healthy.Until(isEvent(events.ReplayComplete))
	pid := d.prompt(sid, "/echo still streaming", "")
	var got []string
	for _, f := range healthy.Until(func(f sseFrame) bool { return f.Event == events.TurnCompleted }) {
		got = append(got, f.Event)
	}
	if len(got) == 0 || got[len(got)-1] != events.TurnCompleted || !strings.Contains(strings.Join(got, " "), events.MessageAdded) {
		t.Errorf("healthy client's live events: got %v, want the turn's messages and turn.completed", got)
	}
	if turn := d.turn(sid, pid); turn["state"] != "completed" {
		t.Errorf("turn: got %v, want completed", turn["state"])
	}

	// The oldest never-reader was displaced: what it would read ends with
	// stream_lagged (its cursor to resume from) and the end of the
	// response's body.
	if b := readUntil(t, stuck[0], "event: "+events.StreamLagged, "\r\n0\r\n\r\n"); b == "" {
		t.Error("evicted client: got no stream_lagged and end of stream")
	}
	if got := d.Hub.Count(); got != limit {
		t.Errorf("subscribers: got %d, want %d (63 never-readers and the healthy client)", got, limit)
	}
}

// readUntil reads conn until it has seen every marker, in order, and
// returns what it read ("" if the connection ended or stalled first; the
// deadline is a safety net against hangs).
func readUntil(t *testing.T, conn net.Conn, markers ...string) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		rest := b.String()
		ok := true
		for _, m := range markers {
			i := strings.Index(rest, m)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(m):]
		}
		if ok {
			return b.String()
		}
		n, err := conn.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			t.Logf("read: %v after %q", err, b.String())
			return ""
		}
	}
}
