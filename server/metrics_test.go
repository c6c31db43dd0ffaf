package server_test

import (
	"net/http"
	"testing"

	"github.com/tether/tether/api"
)

// TestMetrics scrapes /metrics over HTTP after some activity, parses the
// exposition strictly, and checks that every family is there and sane.
func TestMetrics(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	if r := d.doRaw("GET", "/metrics", nil, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("without token: got %d, want 401", r.Status)
	}
	sid, _ := d.createSession(nil)
	d.waitTurn(sid, d.prompt(sid, "/stream 5", ""))
	d.transcript(sid)
	r := d.do("GET", "/metrics", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("got %d, want 200: %s", r.Status, r.Body)
	}
	fams := parseExposition(t, string(r.Body))

	type check struct {
		name   string
		sample string // defaults to name
		labels map[string]string
		min    float64
	}
	const latency = "tether_http_request_duration_seconds"
	cases := []check{
		{name: "tether_build_info", labels: map[string]string{"api_version": api.Version()}, min: 1},
		{name: "tether_sessions_live", min: 1},
		{name: "tether_agents_running", min: 1},
		{name: "tether_events_committed_total", min: 10},
		{name: "tether_event_batches_total", min: 1},
		{name: "tether_stream_subscribers", min: 0},
		{name: "tether_event_writer_retries_total", min: 0},
		{name: "tether_event_writer_busy_total", min: 0},
		{name: "tether_event_writer_queue", min: 0},
		{name: "tether_event_writer_queue_limit", min: 1},
		{name: "tether_event_writer_waiting", min: 0},
		{name: "tether_session_mailbox_max", min: 0},
		{name: "tether_sqlite_busy_total", min: 0},
		{name: "tether_sqlite_checkpoints_total", min: 0},
		{name: "tether_sqlite_wal_restarts_total", min: 0},
		{name: "tether_sqlite_checkpoint_failures_total", min: 0},
		{name: "tether_sqlite_wal_frames", min: 0},
		{name: "tether_agent_processes", labels: map[string]string{"profile": "demo"}, min: 1},
		{name: "tether_agent_process_starts_total", labels: map[string]string{"profile": "demo"}, min: 1},
		{name: "process_open_fds", min: 1},
		{name: "process_max_fds", min: 1},
		{name: "process_threads", min: 1},
		{name: "process_resident_memory_bytes", min: 1 << 20},
		{name: "go_goroutines", min: 1},
		{name: "go_threads", min: 1},
		{name: "go_memstats_heap_inuse_bytes", min: 1},
		{name: "go_memstats_sys_bytes", min: 1 << 20},
		{name: latency, sample: latency + "_count", min: 1,
			labels: map[string]string{"route": "/session/:id/transcript", "method": "GET", "code": "2xx"}},
		{name: latency, sample: latency + "_bucket", min: 1,
			labels: map[string]string{"route": "/session/:id/prompt", "method": "POST", "code": "2xx", "le": "+Inf"}},
		{name: latency, sample: latency + "_count", min: 1,
			labels: map[string]string{"route": "/metrics", "method": "GET", "code": "4xx"}},
	}
	for _, tc := range cases {
		f := fams[tc.name]
		if f == nil {
			t.Errorf("%s: family missing from\n%s", tc.name, r.Body)
			continue
		}
		sample := tc.sample
		if sample == "" {
			sample = tc.name
		}
		v, ok := f.value(sample, tc.labels)
		if !ok {
			t.Errorf("%s%v: no such sample in\n%s", sample, tc.labels, r.Body)
			continue
		}
		if v < tc.min {
			t.Errorf("%s%v: got %v, want at least %v", sample, tc.labels, v, tc.min)
		}
	}
	fds, _ := fams["process_open_fds"].value("process_open_fds", nil)
	limit, _ := fams["process_max_fds"].value("process_max_fds", nil)
	if fds > limit {
		t.Errorf("got %v open fds over a limit of %v", fds, limit)
	}
	// Raw paths never become labels: the session id is not in any series.
	for _, s := range fams[latency].samples {
		if s.labels["route"] == "/session/"+sid+"/transcript" {
			t.Errorf("got a series for the raw path %q, want the route template", s.labels["route"])
		}
	}
}
