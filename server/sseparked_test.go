package server_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
)

// TestParkedStreams follows a session stream and the global one over
// HTTP/1.1 past their catch-up, when they leave net/http's hands
// (server/sseparked.go): the live events of a turn arrive, in the chunked
// encoding the body began in, with heartbeats in between; a client that
// leaves is let go at once (the subscriber gauge falls back); a stream
// whose session closes ends with a clean end of the body; and a stream
// that is still open when the daemon stops is cut.
func TestParkedStreams(t *testing.T) {
	d := startDaemon(t, daemonOptions{heartbeat: 100 * time.Millisecond})
	sid, _ := d.createSession(nil)
	base := d.metric("tether_stream_subscribers")

	s := d.openStream("/session/"+sid+"/events", nil)
	g := d.openStream("/events", nil)
	for _, c := range []*sseConn{s, g} {
		c.Until(isEvent(events.ReplayComplete))
		if te := c.Resp.TransferEncoding; len(te) != 1 || te[0] != "chunked" || c.Resp.ProtoMinor != 1 {
			t.Fatalf("got HTTP/1.%d with transfer encoding %v, want HTTP/1.1 chunked", c.Resp.ProtoMinor, te)
		}
	}
	waitMetric(t, d, "tether_stream_subscribers", plus(base, 2))
	waitMetric(t, d, "tether_stream_subscribers_parked", "2")

	pid := d.prompt(sid, "/stream 3", "")
	frames := s.Until(func(f sseFrame) bool { return f.Event == events.TurnCompleted })
	var chunks, pings int
	for _, f := range frames {
		if f.Event == events.MessageChunk {
			chunks++
		}
	}
	if chunks == 0 {
		t.Errorf("got frames %v, want the turn's message chunks", frames)
	}
	g.Until(func(f sseFrame) bool { return f.Event == events.TurnCompleted && strings.Contains(f.Data, pid) })
	// Idle now: heartbeats keep coming.
	for pings < 2 {
		f := s.MustNext()
		if f.Event == "" && !f.HasID && len(f.Comments) > 0 {
			pings++
		}
	}

	// A client that leaves is let go without waiting for a write.
	g.Close()
	waitMetric(t, d, "tether_stream_subscribers", plus(base, 1))
	waitMetric(t, d, "tether_stream_subscribers_parked", "1")

	// Closing the session ends its stream: session.closed, then the end
	// of the body.
	if r := d.do("DELETE", "/session/"+sid, nil); r.Status != http.StatusOK {
		t.Fatalf("close: got %d: %s", r.Status, r.Body)
	}
	s.Until(isEvent(events.SessionClosed))
	if rest, err := io.ReadAll(s.r); err != nil {
		t.Errorf("after session.closed: got %q and %v, want the body's clean end", rest, err)
	}
	waitMetric(t, d, "tether_stream_subscribers", base)
	waitMetric(t, d, "tether_stream_subscribers_parked", "0")

	// A stream still open when the daemon stops is cut.
	other, _ := d.createSession(nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(d.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /session/%s/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", other, testToken)
	readUntil(t, conn, events.ReplayComplete)
	d.stop()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Errorf("after the daemon stopped: the stream ended with %v, want it closed", err)
	}
}

// plus adds n to a gauge's value as /metrics prints it.
func plus(v string, n int) string {
	var x int
	fmt.Sscan(v, &x)
	return fmt.Sprint(x + n)
}

// waitMetric polls /metrics until sample reads want; the deadline is a
// safety net, not a performance assertion.
func waitMetric(t *testing.T, d *daemon, sample, want string) {
	t.Helper()
	d.waitFor(sample+" = "+want, func() bool { return d.metric(sample) == want })
}
