package crash_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// agentGauge scrapes /metrics and returns tether_agent_processes of the
// demo profile by runtime.
func (w *world) agentGauge() map[string]float64 {
	w.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+w.addr+"/metrics", nil)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("GET /metrics: got %d %s, want 200", resp.StatusCode, b)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "tether_agent_processes{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			w.t.Fatalf("metrics line %q: no value", line)
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			w.t.Fatalf("metrics line %q: %v", line, err)
		}
		if l["profile"] == "demo" {
			out[l["runtime"]] += n
		}
	}
	return out
}

// waitAgentGauge waits until /metrics counts want demo agent processes,
// all on runtime, and exactly that many demo agents of the world run.
func (w *world) waitAgentGauge(runtime string, want int) {
	w.t.Helper()
	end := time.Now().Add(deadline)
	for {
		g := w.agentGauge()
		total := 0.0
		for _, n := range g {
			total += n
		}
		procs := w.processes(" demo-agent ")
		if (want == 0 || g[runtime] == float64(want)) && total == float64(want) && len(procs) == want {
			return
		}
		if time.Now().After(end) {
			w.t.Fatalf("tether_agent_processes{profile=demo}: got %v by runtime with %d demo agents running (%v), want %d on %s",
				g, len(procs), procs, want, runtime)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAgentProcessesMetric: /metrics' tether_agent_processes counts the
// agent processes this daemon's sessions run on every runtime, its own
// children and the agents on a detached or remote executor host alike:
// as many as run, after a kill -9 of the daemon too (the agents on a host
// outlive it), and none once the sessions are closed.
func TestAgentProcessesMetric(t *testing.T) {
	const n = 3
	cases := []struct {
		name, runtime string
		// executor is the session's (a remote host's name for remote).
		executor string
		remote   bool
		// restart kill -9s the daemon once the agents run: they run on.
		restart bool
	}{
		{name: "standalone", runtime: "standalone", executor: "standalone"},
		{name: "detached", runtime: "detached", executor: "detached", restart: true},
		{name: "remote", runtime: "remote", executor: "far", remote: true, restart: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			if tc.remote {
				far := w.newRemoteHost(tc.executor, testbin.FreeAddr(t), nil)
				far.start()
				w.setHosts(far.pinned())
			}
			start := func() {
				w.start()
				if tc.remote {
					w.waitHost(tc.executor, "connected", hostState("connected"))
				}
			}
			start()
			var sids []string
			for i := range n {
				sid, _ := w.createSessionOn("demo", tc.executor)
				pid := fmt.Sprintf("p%d", i)
				w.prompt(sid, "/echo hello", pid)
				if got := w.waitTurn(sid, pid)["state"]; got != "completed" {
					t.Fatalf("turn %s: got state %v, want completed", pid, got)
				}
				sids = append(sids, sid)
			}
			w.waitAgentGauge(tc.runtime, n)
			if tc.restart {
				w.kill9()
				start()
				w.waitAgentGauge(tc.runtime, n)
			}
			for _, sid := range sids {
				if code, m := w.do(http.MethodDelete, "/session/"+sid, nil); code != http.StatusOK {
					t.Fatalf("close %s: got %d %v, want 200", sid, code, m)
				}
			}
			w.waitAgentGauge(tc.runtime, 0)
		})
	}
}
