package crash_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// Remote executor hosts (issue 13): `tetherd host --listen` processes the
// test runs itself, as a remote machine's user would, each with its own
// data dir, agents.yaml, token and TLS certificate; some inside a network
// namespace of their own, reached over a veth pair whose link the test
// cuts.

// remoteHost is one `tetherd host` serving TLS on TCP.
type remoteHost struct {
	w    *world
	name string
	// dir is its data dir, inside the world's: the world's clean-up finds
	// it and its agents.
	dir       string
	addr      string // host:port it listens on
	cert, key string
	tokenFile string
	// ns, if set, is the network namespace it runs in.
	ns *netns
	// extra are more `tetherd host` flags.
	extra []string
	// relative runs the host in the world's data dir, every path flag
	// relative to it.
	relative bool
	proc     *child // under w.mu; nil while not running
}

// newRemoteHost prepares a host named name listening on addr (inside ns
// if not nil): a fresh certificate, a token file (mode 0600) and the
// world's agent profiles. start runs it.
func (w *world) newRemoteHost(name, addr string, ns *netns, extra ...string) *remoteHost {
	w.t.Helper()
	h := &remoteHost{w: w, name: name, dir: filepath.Join(w.dir, "remote-"+name), addr: addr, ns: ns, extra: extra}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		w.t.Fatal(err)
	}
	h.cert, h.key, _ = testbin.SelfSigned(w.t)
	h.tokenFile = filepath.Join(h.dir, "token")
	writeToken(w.t, h.tokenFile)
	w.mu.Lock()
	profiles := w.profiles
	w.mu.Unlock()
	w.writeAgents(h.dir, profiles...)
	w.t.Cleanup(h.stop) // before the world's own clean-up looks for survivors
	return h
}

// writeToken writes a fresh random token to path, mode 0600.
func writeToken(t *testing.T, path string) {
	t.Helper()
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	if err := os.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// start runs the host and waits until it accepts TCP connections.
func (h *remoteHost) start() {
	h.w.t.Helper()
	dir, cert, key, tokenFile, cwd := h.dir, h.cert, h.key, h.tokenFile, ""
	if h.relative {
		cwd = h.w.dir
		for _, p := range []*string{&dir, &cert, &key, &tokenFile} {
			rel, err := filepath.Rel(cwd, *p)
			if err != nil {
				h.w.t.Fatal(err)
			}
			*p = rel
		}
	}
	args := append([]string{"host", "--data-dir", dir, "--agents-dir", dir, "--listen", h.addr,
		"--tls-cert", cert, "--tls-key", key, "--token-file", tokenFile, "--log-level", "debug"}, h.extra...)
	cmd := exec.Command(h.w.bin, args...)
	cmd.Dir = cwd
	if h.ns != nil {
		// ip netns exec execs the host: the pid is the host's.
		cmd = exec.Command("ip", append([]string{"netns", "exec", h.ns.Name, h.w.bin}, args...)...)
	}
	cmd.Env = append(os.Environ(), "SHELL=/bin/sh") // its terminals: see world.start
	p := h.w.run("remote host "+h.name, cmd)
	h.w.mu.Lock()
	h.proc = p
	h.w.mu.Unlock()
	h.w.waitFor("remote host "+h.name+" to listen on "+h.addr, func() bool {
		if p.exited() {
			h.w.t.Fatalf("remote host %s exited during start-up:\n%s", h.name, p.logs.String())
		}
		c, err := net.DialTimeout("tcp", h.addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// take returns the host's running process and forgets it, nil if none.
func (h *remoteHost) take() *child {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	p := h.proc
	h.proc = nil
	return p
}

// kill9 kills the host with SIGKILL and waits until it is reaped; its
// agents lose their host.
func (h *remoteHost) kill9() {
	h.w.t.Helper()
	p := h.take()
	if p == nil {
		h.w.t.Fatalf("remote host %s is not running", h.name)
	}
	p.kill9(h.w.t)
}

// stop ends the host with SIGTERM (it stops its agents) and waits for it.
func (h *remoteHost) stop() {
	if p := h.take(); p != nil {
		p.term(h.w.t)
	}
}

// url is the host's address as hosts.yaml names it.
func (h *remoteHost) url() string { return "tls://" + h.addr }

// pin is the SHA-256 of the host's certificate (its DER), in hex.
func (h *remoteHost) pin() string { return certPin(h.w.t, h.cert) }

func certPin(t *testing.T, certFile string) string { return testbin.CertPin(t, certFile) }

// hostEntry is one host of the daemon's hosts.yaml.
type hostEntry struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	TokenFile  string `json:"tokenFile"`
	CAFile     string `json:"caFile,omitempty"`
	PinSHA256  string `json:"pinSha256,omitempty"`
	ServerName string `json:"serverName,omitempty"`
}

// pinned is the entry that reaches h by its token and certificate pin.
func (h *remoteHost) pinned() hostEntry {
	return hostEntry{Name: h.name, URL: h.url(), TokenFile: h.tokenFile, PinSHA256: h.pin()}
}

// setHosts writes the daemon's hosts.yaml (read by the next daemon
// start); JSON is YAML.
func (w *world) setHosts(hosts ...hostEntry) {
	w.t.Helper()
	b, err := json.Marshal(map[string]any{"hosts": hosts})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "hosts.yaml"), b, 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// executorHost is the daemon's GET /executors entry for name (nil if it
// lists none).
func (w *world) executorHost(name string) map[string]any {
	w.t.Helper()
	for _, h := range list(w.get("/executors"), "hosts") {
		if h["name"] == name {
			return h
		}
	}
	return nil
}

// waitHost polls GET /executors until the entry for name satisfies cond,
// and returns it.
func (w *world) waitHost(name, what string, cond func(h map[string]any) bool) map[string]any {
	w.t.Helper()
	var h map[string]any
	end := time.Now().Add(deadline)
	for {
		h = w.executorHost(name)
		if h != nil && cond(h) {
			return h
		}
		if time.Now().After(end) {
			w.t.Fatalf("timed out waiting for executor host %s to be %s; last seen: %v", name, what, h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hostState says whether an executor entry is in state.
func hostState(state string) func(map[string]any) bool {
	return func(h map[string]any) bool { return h["state"] == state }
}

// netns is a network namespace with a veth pair to the test's own
// (testbin.Netns).
type netns = testbin.Netns

// newNetns makes a namespace for the test (testbin.NewNetns).
func newNetns(t *testing.T) *netns { return testbin.NewNetns(t) }
