package crash_test

import (
	"net/http"
	"path/filepath"
	"slices"
	"testing"
)

// TestSlowProbesDelayNothing starts tetherd on a fresh data dir, whose
// profiles have never been probed, with two agents that never finish
// starting when they run where capability probes run (the daemon's temp
// dir). Both probe slots (--probe-concurrency 2) stay taken by the hung
// probes, and a third profile waits for a slot; meanwhile /health, GET
// /agents and sessions of the profile being probed and of the one waiting
// must all work, and the hung probes must still be there afterwards: nothing
// waited for them.
func TestSlowProbesDelayNothing(t *testing.T) {
	probeDir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	slow := []string{"--startup-delay", "1h", "--startup-delay-in", probeDir}
	w := newWorld(t, profile{id: "a-slow", flags: slow}, profile{id: "b-slow", flags: slow}, profile{id: "c-fast"})
	w.env = append(w.env, "TMPDIR="+probeDir)
	w.start("--probe-concurrency", "2", "--probe-timeout", "1h")

	probes := func() []int {
		var pids []int
		for _, id := range []string{"a-slow", "b-slow"} {
			for _, p := range w.processes(filepath.Join("agent-state", id)) {
				if p.cwd == probeDir {
					pids = append(pids, p.pid)
				}
			}
		}
		slices.Sort(pids)
		return pids
	}
	var hung []int
	w.waitFor("the probes of a-slow and b-slow to be running", func() bool {
		hung = probes()
		return len(hung) == 2
	})

	if code, m := w.do("GET", "/health", nil); code != http.StatusOK || m["status"] != "ok" {
		t.Fatalf("health while probes hang: got %d %v, want 200 ok", code, m)
	}
	code, m := w.do("GET", "/agents", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /agents while probes hang: got %d %v, want 200", code, m)
	}
	for _, a := range list(m, "agents") {
		if a["id"] == "c-fast" && a["capabilities"] != nil {
			t.Fatalf("c-fast: got capabilities %v before any session, want it still waiting for a probe slot", a["capabilities"])
		}
	}

	// A session of a profile whose probe hangs, and one of a profile whose
	// probe has not started, each run a turn.
	for _, id := range []string{"a-slow", "c-fast"} {
		sid, _ := w.createSession(id)
		w.prompt(sid, "/echo hello "+id, "p1")
		if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
			t.Fatalf("%s: turn while probes hang: got %v, want completed", id, turn)
		}
	}
	if got := probes(); !slices.Equal(got, hung) {
		t.Errorf("probe processes after the sessions' turns: got %v, want the same hung probes %v", got, hung)
	}

	// The sessions' own agent starts recorded what the probes could not.
	_, m = w.do("GET", "/agents", nil)
	for _, a := range list(m, "agents") {
		if (a["id"] == "a-slow" || a["id"] == "c-fast") && a["capabilities"] == nil {
			t.Errorf("%s: got no capabilities after a session ran it, want them recorded", a["id"])
		}
	}
}
