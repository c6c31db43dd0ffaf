package crash_test

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostProcesses lists the executor hosts running on this world's data
// dir: this binary run as `tetherd host` with its --data-dir inside the
// world's (processes keeps only command lines naming the world's dir, so
// parallel tests' hosts are not counted).
func (w *world) hostProcesses() []procInfo {
	var out []procInfo
	for _, p := range w.processes("") {
		if strings.HasPrefix(p.cmd, w.bin+" host ") && strings.Contains(p.cmd, "--data-dir "+filepath.Join(w.dir, "host")) {
			out = append(out, p)
		}
	}
	return out
}

// checkNoHost fails the test if an executor host runs on the world's
// data dir, if the daemon made the host's directory, or if the daemon's
// log says it started one.
func (w *world) checkNoHost(when, daemonLog string) {
	w.t.Helper()
	if ps := w.hostProcesses(); len(ps) != 0 {
		w.t.Errorf("%s: got executor host processes %v, want none", when, ps)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "host")); !errors.Is(err, fs.ErrNotExist) {
		w.t.Errorf("%s: stat %s: got %v, want no such directory (nothing asked for an executor host)", when, filepath.Join(w.dir, "host"), err)
	}
	for _, l := range strings.Split(daemonLog, "\n") {
		if strings.Contains(l, "started executor host") {
			w.t.Errorf("%s: the daemon logged %q, want no executor host started", when, l)
		}
	}
}

// TestNoExecutorHostUnlessAsked: a daemon starts the local executor host
// only for a session that runs on it. A daemon whose sessions run as its
// children (--executor standalone, or a session that asks for standalone
// on a detached daemon) runs a session's turn and stops without ever
// starting `tetherd host` or making <data-dir>/host. Before the fix the
// start-up sweep of credentials checks (and the host pool behind it)
// started the host at every daemon start: a `tetherd host` process was
// left behind for --host-linger, writing into the data dir.
func TestNoExecutorHostUnlessAsked(t *testing.T) {
	tests := []struct {
		name string
		// daemon is the daemon's --executor, session the session's
		// executor ("" for the daemon's).
		daemon, session string
	}{
		{name: "standalone daemon", daemon: "standalone"},
		{name: "detached daemon, standalone session", daemon: "detached", session: "standalone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			w.start("--executor", tc.daemon)
			sid, _ := w.createSessionOn("demo", tc.session)
			if ex := w.get("/session/" + sid)["executor"].(map[string]any); ex["runtime"] != "standalone" {
				t.Fatalf("executor: got %v, want runtime standalone", ex)
			}
			w.prompt(sid, "/echo hello", "p1")
			if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
				t.Fatalf("p1: got %v, want completed", turn["state"])
			}
			if code, m := w.do(http.MethodGet, "/executors", nil); code != http.StatusOK || len(list(m, "hosts")) != 0 {
				t.Errorf("GET /executors: got %d %v, want 200 and no host", code, m)
			}
			log := w.daemonLog()
			w.checkOneTruth(sid)
			w.term()
			w.checkNoHost("after the daemon stopped", log)
		})
	}
}
