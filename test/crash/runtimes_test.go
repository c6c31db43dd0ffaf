package crash_test

import (
	"net"
	"net/http"
	"testing"
)

// executorRuntime is one place a session's agent and workspace can be.
type executorRuntime struct {
	name string
	// setup prepares what the runtime needs besides the daemon (a remote
	// host) and returns the executor a session asks for ("" for the
	// daemon's default) and the daemon's flags for it.
	setup func(t *testing.T, w *world) (executor string, daemonFlags []string)
}

// start runs the world's daemon (with flags besides the runtime's) so
// that sessions can be made on the runtime, and returns the executor a
// session asks for and how to start the daemon again (after a kill -9).
func (rt executorRuntime) start(t *testing.T, w *world, flags ...string) (executor string, restart func()) {
	t.Helper()
	executor, daemon := rt.setup(t, w)
	args := append(append([]string{}, daemon...), flags...)
	restart = func() {
		t.Helper()
		w.start(args...)
		if executor != "" {
			w.waitHost(executor, "connected", hostState("connected"))
		}
	}
	restart()
	return executor, restart
}

// allRuntimes are the standalone and detached runtimes and a remote host
// in a network namespace, started with hostFlags (a remote host serves no
// terminal or command unless given --terminal on). The workspace is served
// by the executor on each, so a workspace test runs on all three.
func allRuntimes(hostFlags ...string) []executorRuntime {
	return []executorRuntime{
		{"standalone", func(*testing.T, *world) (string, []string) { return "", []string{"--executor", "standalone"} }},
		{"detached", func(*testing.T, *world) (string, []string) { return "", []string{"--executor", "detached"} }},
		{"remote host in a network namespace", func(t *testing.T, w *world) (string, []string) {
			ns := newNetns(t)
			far := w.newRemoteHost("far", net.JoinHostPort(ns.IP, "7778"), ns, hostFlags...)
			far.start()
			w.setHosts(far.pinned())
			return "far", pingFlags
		}},
	}
}

// createSessionIn starts a session on profile in cwd on executor ("" for
// the daemon's default) and returns its id, failing the test unless it is
// created.
func (w *world) createSessionIn(profile, executor, cwd string) string {
	w.t.Helper()
	code, m := w.do(http.MethodPost, "/session", sessionBody(profile, executor, cwd))
	if code != http.StatusCreated {
		w.t.Fatalf("create session in %s: got %d, want 201: %v", cwd, code, m)
	}
	w.sessions = append(w.sessions, m["id"].(string))
	return m["id"].(string)
}

// sessionBody is a session's create request on executor ("" for the
// daemon's default).
func sessionBody(profile, executor, cwd string) map[string]any {
	body := map[string]any{"agentProfileId": profile, "cwd": cwd}
	if executor != "" {
		body["executor"] = executor
	}
	return body
}
