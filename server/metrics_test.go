package server_test

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"
)

func TestMetrics(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	if r := d.doRaw("GET", "/metrics", nil, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("without token: got %d, want 401", r.Status)
	}
	sid, _ := d.createSession(nil)
	d.waitTurn(sid, d.prompt(sid, "/stream 5", ""))
	r := d.do("GET", "/metrics", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("got %d, want 200: %s", r.Status, r.Body)
	}
	cases := []struct {
		name string
		min  int64
	}{
		{"tether_sessions_live", 1},
		{"tether_agents_running", 1},
		{"tether_events_committed_total", 10},
		{"tether_event_batches_total", 1},
		{"tether_stream_subscribers", 0},
	}
	for _, tc := range cases {
		m := regexp.MustCompile(`(?m)^` + tc.name + ` (\d+)$`).FindSubmatch(r.Body)
		if m == nil {
			t.Errorf("%s: missing from\n%s", tc.name, r.Body)
			continue
		}
		if v, _ := strconv.ParseInt(string(m[1]), 10, 64); v < tc.min {
			t.Errorf("%s: got %d, want at least %d", tc.name, v, tc.min)
		}
	}
}
