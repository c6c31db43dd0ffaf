package realagents_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether/tether/internal/modelserver"
	"github.com/tether/tether/internal/testbin"
)

// The runtimes a real agent's session runs on: a child of tetherd, the
// local detached executor host, and a remote `tetherd host` in a network
// namespace of its own, reached over a veth pair with TLS and a token.
const (
	standalone = "standalone"
	detached   = "detached"
	remote     = "remote"
)

// forEachAgentOn runs scenario as a subtest on every real agent on every
// runtime of runtimes.
func forEachAgentOn(t *testing.T, runtimes []string, scenario func(t *testing.T, a agent, rt string)) {
	for _, rt := range runtimes {
		for _, a := range agents {
			t.Run(rt+"/"+a.id, func(t *testing.T) {
				t.Parallel()
				scenario(t, a, rt)
			})
		}
	}
}

// newWorldOn is newWorld with the session's agent on runtime rt.
func newWorldOn(t *testing.T, a agent, rt string, script modelserver.Script, extra ...string) *world {
	t.Helper()
	switch rt {
	case standalone:
		return newWorld(t, a, script, extra...)
	case detached:
		w := newWorld(t, a, script, append([]string{"--executor", "detached"}, extra...)...)
		t.Cleanup(func() { w.stop(); stopHosts(t, w.dir) })
		return w
	case remote:
		return newRemoteWorld(t, a, script, extra...)
	}
	t.Fatalf("no runtime %q", rt)
	return nil
}

// farHost is the remote executor host "far" of a world: `tetherd host`
// in the network namespace ns, listening on ns.IP with TLS and a token.
type farHost struct {
	ns   *testbin.Netns
	dir  string
	args []string
	logs *testbin.LogBuffer
	cmd  *exec.Cmd
	done chan struct{}
}

// pingFlags make the daemon notice a silent host connection (a cut link)
// within a few seconds rather than the default twenty.
var pingFlags = []string{"--host-ping-interval", "500ms", "--host-ping-timeout", "1500ms"}

// newRemoteWorld is a world whose sessions run on the remote host "far"
// (the daemon's default executor). The model server listens on the
// namespace's own loopback, where the host's agents reach it whether or
// not the link to the daemon is up; the host has the agent's profile in
// an agents.yaml of its own.
func newRemoteWorld(t *testing.T, a agent, script modelserver.Script, extra ...string) *world {
	t.Helper()
	ns := testbin.NewNetns(t)
	model := modelserver.StartOn(t, ns.Listen("127.0.0.1:0"), script)
	w := prepareWorld(t, a, model, append(append([]string{"--executor", "far"}, pingFlags...), extra...)...)
	h := &farHost{ns: ns, dir: filepath.Join(w.dir, "remote-far"), logs: &testbin.LogBuffer{}}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	yaml, err := os.ReadFile(filepath.Join(w.dir, "agents.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dir, "agents.yaml"), yaml, 0o600); err != nil {
		t.Fatal(err)
	}
	cert, key, _ := testbin.SelfSigned(t)
	tokenFile := filepath.Join(h.dir, "token")
	if err := os.WriteFile(tokenFile, []byte("far-host-token-of-the-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(ns.IP, "7778")
	h.args = []string{"netns", "exec", ns.Name, testbin.Tetherd(t), "host", "--data-dir", h.dir, "--agents-dir", h.dir,
		"--listen", addr, "--tls-cert", cert, "--tls-key", key, "--token-file", tokenFile, "--log-level", "debug"}
	hosts, _ := json.Marshal(map[string]any{"hosts": []map[string]any{{"name": "far", "url": "tls://" + addr,
		"tokenFile": tokenFile, "pinSha256": testbin.CertPin(t, cert)}}})
	if err := os.WriteFile(filepath.Join(w.dir, "hosts.yaml"), hosts, 0o600); err != nil {
		t.Fatal(err)
	}
	w.far = h
	w.startFar()
	w.start()
	t.Cleanup(func() {
		w.stop()
		w.stopFar()
		if t.Failed() {
			t.Logf("--- remote host output ---\n%s", h.logs.String())
		}
	})
	w.waitFor("the remote host to be connected", func() bool { return w.hostState("far") == "connected" })
	return w
}

// startFar runs the remote host and waits until it listens.
func (w *world) startFar() {
	w.t.Helper()
	h := w.far
	h.cmd = exec.Command("ip", h.args...)
	h.cmd.Stdout, h.cmd.Stderr = h.logs, h.logs
	if err := h.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	done := make(chan struct{})
	h.done = done
	go func() { _ = h.cmd.Wait(); close(done) }()
	w.waitFor("the remote host to listen", func() bool {
		select {
		case <-done:
			w.t.Fatalf("the remote host exited during start-up:\n%s", h.logs.String())
		default:
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort(h.ns.IP, "7778"), time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// stopFar ends the remote host with SIGTERM (it stops its agents) and
// waits for it, if it runs.
func (w *world) stopFar() {
	h := w.far
	if h == nil || h.cmd == nil {
		return
	}
	testbin.Terminate(w.t, h.cmd, h.done, "the remote host", deadline)
	h.cmd = nil
}

// holds reports whether a file in the host's data dir (its outboxes)
// holds s.
func (h *farHost) holds(s string) bool {
	found := false
	_ = filepath.WalkDir(h.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(s)) {
			found = true
		}
		return nil
	})
	return found
}

// hostState is the state GET /executors gives executor host name.
func (w *world) hostState(name string) string {
	w.t.Helper()
	_, m := w.do("GET", "/executors", nil)
	for _, h := range list(m, "hosts") {
		if h["name"] == name {
			s, _ := h["state"].(string)
			return s
		}
	}
	return ""
}
