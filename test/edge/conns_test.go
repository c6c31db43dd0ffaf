package edge_test

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// attack is one kind of connection that holds a descriptor without doing
// useful work.
type attack struct {
	name string
	open func(d *daemon, stop time.Time) net.Conn
}

var attacks = []attack{
	{"idle keep-alive", func(d *daemon, stop time.Time) net.Conn {
		c := d.dial()
		_, _ = c.Write([]byte(request("GET", "/health")))
		// The answer may never come (a daemon out of descriptors); the
		// connection is the attack either way.
		_, _, _ = readResponse(c, bufio.NewReader(c), stop)
		return c
	}},
	{"slow header", func(d *daemon, _ time.Time) net.Conn {
		c := d.dial()
		_, _ = c.Write([]byte("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "))
		return c
	}},
	{"slow body without token", func(d *daemon, _ time.Time) net.Conn {
		c := d.dial()
		head := request("POST", "/tasks", "Content-Type: application/json", "Content-Length: 100000")
		_, _ = c.Write([]byte(head + `{"title":"`))
		return c
	}},
	{"slow body with token", func(d *daemon, _ time.Time) net.Conn {
		c := d.dial()
		head := request("POST", "/tasks", "Authorization: Bearer "+token, "Content-Type: application/json", "Content-Length: 100000")
		_, _ = c.Write([]byte(head + `{"title":"`))
		return c
	}},
}

func TestConnectionFloodLeavesHealthAndSessionsWorking(t *testing.T) {
	cases := []struct {
		name string
		opts daemonOptions
		cap  int // the daemon's connection cap
	}{
		// Long timeouts: the cap alone must keep the daemon reachable.
		{"cap by flag", daemonOptions{args: []string{"--max-connections", "16", "--idle-timeout", "10m", "--body-timeout", "10m"}}, 16},
		// RLIMIT_NOFILE 256 gives the default cap 192; a daemon without a
		// cap runs out of descriptors and stops accepting.
		{"cap from RLIMIT_NOFILE", daemonOptions{nofile: 256}, 192},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, tc.opts)
			stop := time.Now().Add(deadline)
			opened := 0
			for _, a := range attacks {
				for i := 0; i < 2*tc.cap; i++ {
					a.open(d, stop)
					opened++
				}
			}
			t.Logf("%d attacking connections open (cap %d)", opened, tc.cap)
			d.mustWork()
			// The flood shows on /metrics: evictions, and never more open
			// connections than the cap.
			m := d.metrics()
			if got := m["tether_http_connections_evicted_total"]; got < 1 {
				t.Errorf("tether_http_connections_evicted_total: got %v, want at least 1", got)
			}
			if got, want := m["tether_http_connections_max"], float64(tc.cap); got != want {
				t.Errorf("tether_http_connections_max: got %v, want %v", got, want)
			}
			if got := m["tether_http_connections_open"]; got < 1 || got > float64(tc.cap) {
				t.Errorf("tether_http_connections_open: got %v, want 1..%d", got, tc.cap)
			}
		})
	}
}

func TestAllConnectionsBusyGets503WithRetryAfter(t *testing.T) {
	const max = 4
	d := startDaemon(t, daemonOptions{args: []string{"--max-connections", strconv.Itoa(max)}})
	// Every slot holds an event stream: busy, never evicted.
	var streams []net.Conn
	for i := 0; i < max; i++ {
		c := d.dial()
		_, _ = c.Write([]byte(request("GET", "/events", "Authorization: Bearer "+token)))
		_ = c.SetReadDeadline(time.Now().Add(deadline))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: got %d, want 200", i, resp.StatusCode)
		}
		streams = append(streams, c)
	}

	c := d.dial()
	_, _ = c.Write([]byte(request("GET", "/health")))
	resp, body, err := readResponse(c, bufio.NewReader(c), time.Now().Add(deadline))
	if err != nil {
		t.Fatalf("GET /health with every slot busy: %v", err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET /health with every slot busy: got %d, want 503", resp.StatusCode)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("got Retry-After %q, want a positive number of seconds", resp.Header.Get("Retry-After"))
	}
	var p map[string]any
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") || json.Unmarshal(body, &p) != nil {
		t.Errorf("got %q %s, want a problem+json body", ct, body)
	}
	if p["code"] != "too_many_connections" {
		t.Errorf("got code %v, want too_many_connections", p["code"])
	}

	// A stream that ends frees its slot.
	_ = streams[0].Close()
	until := time.Now().Add(deadline)
	for {
		st, _, err := d.do("GET", "/health", nil)
		if err == nil && st == http.StatusOK {
			break
		}
		if time.Now().After(until) {
			t.Fatalf("GET /health after a stream closed: got %d (%v), want 200", st, err)
		}
		d.client.CloseIdleConnections()
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	d := startDaemon(t, daemonOptions{args: []string{"--header-timeout", "1s", "--body-timeout", "1s",
		"--idle-timeout", "1s", "--write-timeout", "1s", "--heartbeat", "300ms"}})
	cases := []struct {
		name string
		send string
		// wantStatus is the answer before the daemon closes (0: none).
		wantStatus int
		wantCode   string
	}{
		{"idle keep-alive", request("GET", "/health"), http.StatusOK, ""},
		{"slow header", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", 0, ""},
		{"slow body with token", request("POST", "/tasks", "Authorization: Bearer "+token, "Content-Type: application/json",
			"Content-Length: 1000") + `{"title":"`, http.StatusRequestTimeout, "request_timeout"},
		// net/http reads what is left of a refused body before answering;
		// the body deadline ends that, and the connection with it.
		{"slow body without token", request("POST", "/tasks", "Content-Type: application/json",
			"Content-Length: 1000") + `{"title":"`, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := d.dial()
			br := bufio.NewReader(c)
			if _, err := c.Write([]byte(tc.send)); err != nil {
				t.Fatal(err)
			}
			if tc.wantStatus != 0 {
				resp, body, err := readResponse(c, br, time.Now().Add(deadline))
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				if resp.StatusCode != tc.wantStatus {
					t.Fatalf("got %d %s, want %d", resp.StatusCode, body, tc.wantStatus)
				}
				if tc.wantCode != "" && !strings.Contains(string(body), `"code":"`+tc.wantCode+`"`) {
					t.Errorf("got %s, want code %s", body, tc.wantCode)
				}
			}
			waitClosed(t, c, br)
		})
	}
	t.Run("event stream outlives every timeout", func(t *testing.T) {
		t.Parallel()
		c := d.dial()
		_, _ = c.Write([]byte(request("GET", "/events", "Authorization: Bearer "+token)))
		br := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(deadline))
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /events: %v %v", resp, err)
		}
		// 12 heartbeats 300ms apart span several times each 1s timeout.
		sc := bufio.NewScanner(resp.Body)
		pings := 0
		for pings < 12 && sc.Scan() {
			if sc.Text() == ": ping" {
				pings++
			}
		}
		if pings < 12 {
			t.Fatalf("the stream ended after %d heartbeats: %v", pings, sc.Err())
		}
	})
}
