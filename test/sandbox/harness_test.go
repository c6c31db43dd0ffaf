// Package sandbox_test attacks tether from inside, as an agent that turned
// hostile would (issue 31): the real tetherd binary over real HTTP runs the
// demo agent's /hostile on each runtime (standalone, detached, a remote
// host), which tries to take the keys that answer its permission requests
// and answer them itself, to write outside its workspace through its own
// shell, to see other processes and to leave one behind when it is killed.
// In its sandbox every attempt fails; with `sandbox: {mode: off}` they
// succeed, which proves the test sees them.
//
// TETHER_TEST_AGENT_BIN, when set, is the tetherd that runs the demo agent
// (default: the tetherd under test, TETHERD_BIN): a daemon built before
// /hostile existed is attacked by a newer agent.
package sandbox_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// deadline bounds every wait: a safety net against hangs, never a
// performance assertion.
const deadline = 60 * time.Second

func TestMain(m *testing.M) { testbin.Main(m) }

// child is a process the test runs (a daemon, a remote host).
type child struct {
	name string
	cmd  *exec.Cmd
	logs *testbin.LogBuffer
	done chan struct{} // closed once reaped
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// world is one daemon on a data dir of its own, its agent profile, and
// for the remote runtime a `tetherd host --listen` with its own dir.
type world struct {
	t   *testing.T
	bin string
	// root holds everything of the world's: data dirs, workspaces, the
	// agents' homes (one t.TempDir, removed after cleanup).
	root string
	dir  string // the daemon's data dir
	addr string
	// token is the daemon's, which it generated into dir/token.
	token    string
	children []*child
	daemon   *child
	// remote is the remote host, when the runtime has one.
	remote *remoteHost
}

type remoteHost struct {
	dir, addr, cert, key, tokenFile string
	// daemonToken is the daemon's copy of the token (hosts.yaml's
	// tokenFile): tokenFile itself unless startRemote was given another.
	daemonToken string
	proc        *child
}

// newWorld prepares a data dir (root/data, or dataDir relative to root)
// whose agents.yaml has one profile, "hostile": the demo agent with a HOME
// of its own, and the sandbox entry given (none if "").
func newWorld(t *testing.T, dataDir, sandbox string) *world {
	t.Helper()
	if dataDir == "" {
		dataDir = "data"
	}
	w := &world{t: t, bin: testbin.Tetherd(t), root: t.TempDir(), addr: testbin.FreeAddr(t)}
	w.dir = w.mkdir(dataDir)
	w.writeAgents(w.dir, sandbox)
	t.Cleanup(w.cleanup)
	return w
}

// mkdir makes root/name (and its parents) and returns its real path.
func (w *world) mkdir(name string) string {
	w.t.Helper()
	d := filepath.Join(w.root, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		w.t.Fatal(err)
	}
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// agentBin is the tetherd that runs the demo agent.
func agentBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TETHER_TEST_AGENT_BIN"); p != "" {
		return p
	}
	return testbin.Tetherd(t)
}

// writeAgents writes dir/agents.yaml with the hostile profile.
func (w *world) writeAgents(dir, sandbox string) {
	w.t.Helper()
	home := w.mkdir(filepath.Join("home", filepath.Base(dir)))
	cmd, _ := json.Marshal(agentBin(w.t))
	args, _ := json.Marshal([]string{"demo-agent", "--state-dir", filepath.Join(home, "state")})
	env, _ := json.Marshal(map[string]string{"HOME": home})
	yaml := fmt.Sprintf("agents:\n  - id: hostile\n    command: %s\n    args: %s\n    env: %s\n", cmd, args, env)
	if sandbox != "" {
		yaml += "    sandbox: " + sandbox + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "agents.yaml"), []byte(yaml), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// run starts cmd, keeping its output for a failure's report.
func (w *world) run(name string, cmd *exec.Cmd) *child {
	w.t.Helper()
	c := &child{name: name, cmd: cmd, logs: &testbin.LogBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.logs, c.logs
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(c.done) }()
	w.children = append(w.children, c)
	return c
}

// startRemote runs a `tetherd host --listen` on loopback, with TLS, its own
// data dir (root/dir), token and agents.yaml (the same profile), and names
// it "far" in the daemon's hosts.yaml, with the token copied to
// daemonToken for the daemon if set.
func (w *world) startRemote(dir, sandbox, daemonToken string) {
	w.t.Helper()
	h := &remoteHost{dir: w.mkdir(dir), addr: testbin.FreeAddr(w.t)}
	h.cert, h.key, _ = testbin.SelfSigned(w.t)
	h.tokenFile = filepath.Join(h.dir, "token")
	w.writeAgents(h.dir, sandbox)
	cmd := exec.Command(w.bin, "host", "--data-dir", h.dir, "--agents-dir", h.dir, "--listen", h.addr,
		"--tls-cert", h.cert, "--tls-key", h.key, "--token-file", h.tokenFile, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "SHELL=/bin/sh")
	h.proc = w.run("remote host", cmd)
	w.remote = h
	w.waitFor("the remote host to listen", func() bool {
		if h.proc.exited() {
			w.t.Fatalf("the remote host exited during start-up:\n%s", h.proc.logs.String())
		}
		c, err := net.DialTimeout("tcp", h.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	h.daemonToken = h.tokenFile
	if daemonToken != "" {
		b, err := os.ReadFile(h.tokenFile)
		if err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(daemonToken, b, 0o600); err != nil {
			w.t.Fatal(err)
		}
		h.daemonToken = daemonToken
	}
	hosts, _ := json.Marshal(map[string]any{"hosts": []map[string]string{{"name": "far", "url": "tls://" + h.addr,
		"tokenFile": h.daemonToken, "pinSha256": testbin.CertPin(w.t, h.cert)}}})
	if err := os.WriteFile(filepath.Join(w.dir, "hosts.yaml"), hosts, 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// start runs `tetherd serve` with its default executor, waits for
// /health and reads the token it generated.
func (w *world) start(executor string) {
	w.t.Helper()
	cmd := exec.Command(w.bin, "serve", "--data-dir", w.dir, "--addr", w.addr, "--log-level", "debug", "--executor", executor)
	cmd.Env = append(os.Environ(), "SHELL=/bin/sh")
	w.daemon = w.run("tetherd", cmd)
	w.waitFor("tetherd to be healthy", func() bool {
		if w.daemon.exited() {
			w.t.Fatalf("tetherd exited during start-up:\n%s", w.daemon.logs.String())
		}
		resp, err := http.Get("http://" + w.addr + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	b, err := os.ReadFile(filepath.Join(w.dir, "token"))
	if err != nil {
		w.t.Fatalf("the daemon's token: %v", err)
	}
	w.token = strings.TrimSpace(string(b))
	if w.remote != nil {
		w.waitFor("the remote host to be connected", func() bool {
			for _, h := range list(w.get("/executors"), "hosts") {
				if h["name"] == "far" && h["state"] == "connected" {
					return true
				}
			}
			return false
		})
	}
}

// cleanup stops the daemon and the hosts, and kills whatever of the
// world's is left (an orphan of mode off among them).
func (w *world) cleanup() {
	for _, c := range w.children {
		testbin.Terminate(w.t, c.cmd, c.done, c.name, deadline)
	}
	// The detached host outlives its daemon on purpose.
	for _, p := range procsMatching(func(p proc) bool { return strings.Contains(p.cmdline, w.root) }) {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	if w.t.Failed() {
		for _, c := range w.children {
			w.t.Logf("--- %s output ---\n%s", c.name, c.logs.String())
		}
		if b, err := os.ReadFile(filepath.Join(w.dir, "host", "host.log")); err == nil {
			w.t.Logf("--- detached host log ---\n%s", b)
		}
	}
}

// waitFor polls cond until it holds.
func (w *world) waitFor(what string, cond func() bool) {
	w.t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			w.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do sends an API request with the token and decodes a JSON answer.
func (w *world) do(method, path string, body any) (int, map[string]any) {
	w.t.Helper()
	return testbin.DoJSON(w.t, "http://"+w.addr, w.token, method, path, body)
}

// get is do for GET that insists on 200.
func (w *world) get(path string) map[string]any {
	w.t.Helper()
	code, m := w.do("GET", path, nil)
	if code != http.StatusOK {
		w.t.Fatalf("GET %s: got %d, want 200: %v", path, code, m)
	}
	return m
}

// list returns a JSON array member as a slice of objects.
func list(m map[string]any, key string) []map[string]any { return testbin.List(m, key) }

// proc is one process of the machine, seen from outside any sandbox.
type proc struct {
	pid, ppid int
	argv      []string
	cmdline   string
	environ   string
}

// procsMatching lists the live processes (not zombies) that keep.
func procsMatching(keep func(proc) bool) []proc {
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
			continue // gone, or a zombie: it runs nothing
		}
		f := strings.Fields(string(stat[i+2:]))
		ppid, _ := strconv.Atoi(f[1])
		raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		p := proc{pid: pid, ppid: ppid, argv: strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00"),
			cmdline: strings.ReplaceAll(string(raw), "\x00", " "), environ: string(env)}
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// alive reports whether pid runs (and is not a zombie).
func alive(pid int) bool {
	return len(procsMatching(func(p proc) bool { return p.pid == pid })) > 0
}
