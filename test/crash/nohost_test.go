package crash_test

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/host"
)

// hostProcesses lists the world's detached executor host (the daemon's
// own, in <data-dir>/host) if it runs. Its command line names no path:
// host.Running finds it by its directory.
func (w *world) hostProcesses() []procInfo {
	pid := host.Running(filepath.Join(w.dir, "host"))
	var out []procInfo
	for _, p := range w.processes(" host ") {
		if p.pid == pid {
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
