// Package cli_test drives the terminal client `tether` (cmd/tether) as a
// user does: the real binary against a real tetherd, its stdout, stderr
// and exit code checked, and what a command changed checked again through
// the daemon's API. `tether attach` is driven through tmux (attach_test.go).
package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/client"
	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/testbin"
)

// deadline bounds every wait: a safety net against hangs, never a
// performance assertion.
const deadline = 60 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	closeFixtures()
	if tetherDir != "" {
		_ = os.RemoveAll(tetherDir)
	}
	testbin.Cleanup()
	os.Exit(code)
}

var (
	tetherOnce sync.Once
	tetherPath string
	tetherDir  string
	tetherErr  error
)

// tetherBin returns the path of a tether executable: $TETHER_BIN, else a
// single fresh build of ./cmd/tether shared by every test of the package
// (removed by TestMain).
func tetherBin(tb testing.TB) string {
	tb.Helper()
	tetherOnce.Do(func() {
		if p := os.Getenv("TETHER_BIN"); p != "" {
			tetherPath = p
			return
		}
		if tetherDir, tetherErr = os.MkdirTemp("", "tether-test-bin-"); tetherErr != nil {
			return
		}
		tetherPath = filepath.Join(tetherDir, "tether")
		cmd := exec.Command("go", "build", "-o", tetherPath, "./cmd/tether")
		cmd.Dir = testbin.Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			tetherErr = fmt.Errorf("go build ./cmd/tether: %v\n%s", err, out)
		}
	})
	if tetherErr != nil {
		tb.Fatal(tetherErr)
	}
	return tetherPath
}

// cleanEnv is the test's environment without what would lead tether or
// tetherd elsewhere than the test says: TETHER_* variables, XDG_DATA_HOME,
// NO_COLOR and an enclosing tmux.
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return strings.HasPrefix(k, "TETHER_") || k == "XDG_DATA_HOME" || k == "NO_COLOR" || k == "TMUX" || k == "TMUX_PANE"
	})
}

// daemon is one data directory and the tetherd daemons run on it, one at
// a time, always on the same address. The daemon finds its data dir as a
// user's does, through XDG_DATA_HOME, and so do the tether commands the
// test runs: they are given only TETHER_ADDR.
type daemon struct {
	tb   testing.TB // nil for a fixture shared by several benchmarks
	bin  string
	root string // everything of this daemon: XDG_DATA_HOME and session directories
	xdg  string // XDG_DATA_HOME
	dir  string // the data dir, <xdg>/tether
	addr string
	base string // http://addr

	mu    sync.Mutex
	proc  *proc   // the running tetherd, nil between runs
	runs  []*proc // every tetherd run, for a failure's report
	token string
	seq   int // numbers session directories and prompt ids
}

// proc is one tetherd run, reaped by a goroutine of its own.
type proc struct {
	cmd  *exec.Cmd
	logs *testbin.LogBuffer
	done chan struct{}
}

// newDaemon is a daemon on a fresh data directory under root (which the
// caller removes after close); it is not started.
func newDaemon(tb testing.TB, root string) *daemon {
	tb.Helper()
	addr := testbin.FreeAddr(tb)
	d := &daemon{tb: tb, bin: testbin.Tetherd(tb), root: root, xdg: filepath.Join(root, "xdg"), addr: addr, base: "http://" + addr}
	d.dir = filepath.Join(d.xdg, "tether")
	if err := os.MkdirAll(d.xdg, 0o700); err != nil {
		tb.Fatal(err)
	}
	return d
}

// startDaemon starts a daemon for test t on a data directory of its own;
// it is stopped, with its executor host and agents, when t ends.
func startDaemon(t *testing.T) *daemon {
	t.Helper()
	d := newDaemon(t, t.TempDir())
	t.Cleanup(func() { d.close(t.Errorf) })
	d.start(t)
	return d
}

// start runs `tetherd serve --addr` and waits until it is ready. The
// detached runtime is the default: its executor host outlives the daemon
// (close stops it); --host-linger is only a safety net should the test
// binary itself be killed.
func (d *daemon) start(tb testing.TB) {
	tb.Helper()
	cmd := exec.Command(d.bin, "serve", "--addr", d.addr, "--host-linger", "2m")
	cmd.Env = append(cleanEnv(), "XDG_DATA_HOME="+d.xdg)
	p := &proc{cmd: cmd, logs: &testbin.LogBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	d.mu.Lock()
	d.proc = p
	d.runs = append(d.runs, p)
	d.mu.Unlock()
	end := time.Now().Add(deadline)
	for {
		resp, err := http.Get(d.base + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-p.done:
			tb.Fatalf("tetherd exited during start-up:\n%s", p.logs.String())
		default:
		}
		if time.Now().After(end) {
			tb.Fatalf("tetherd was not ready after %s: %v\n%s", deadline, err, p.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, err := os.ReadFile(filepath.Join(d.dir, "token"))
	if err != nil {
		tb.Fatalf("the daemon's token file: %v", err)
	}
	d.mu.Lock()
	d.token = strings.TrimSpace(string(b))
	d.mu.Unlock()
}

// take returns the running tetherd and forgets it (nil if none).
func (d *daemon) take() *proc {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.proc
	d.proc = nil
	return p
}

// kill9 kills the running tetherd with SIGKILL and waits until it is
// reaped; its executor host and agents live on.
func (d *daemon) kill9(tb testing.TB) {
	tb.Helper()
	p := d.take()
	if p == nil {
		tb.Fatal("no tetherd to kill")
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	<-p.done
}

// stop ends the running tetherd with SIGTERM (SIGKILL after deadline)
// and waits for it; it reports whether the daemon stopped in time.
func (d *daemon) stop() bool {
	p := d.take()
	if p == nil {
		return true
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(deadline):
		_ = p.cmd.Process.Kill()
		<-p.done
		return false
	}
}

// close stops the daemon, then its detached executor host (which outlives
// every daemon on purpose) and waits until no process of this data
// directory is left, killing stragglers; problems go to report. A failed
// test gets every daemon's output and the host's log.
func (d *daemon) close(report func(format string, args ...any)) {
	hosts := d.startingHosts()
	if !d.stop() {
		report("tetherd did not stop within %s of SIGTERM", deadline)
	}
	if pid := host.Running(filepath.Join(d.dir, "host")); pid != 0 {
		hosts = append(hosts, pid)
	}
	for _, pid := range hosts {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	end := time.Now().Add(20 * time.Second)
	for {
		left := d.processes(hosts)
		if len(left) == 0 {
			break
		}
		if time.Now().After(end) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			report("processes of this daemon still running 20s after it and its host were stopped (killed now): %v", left)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d.tb != nil && d.tb.Failed() {
		d.mu.Lock()
		runs := slices.Clone(d.runs)
		d.mu.Unlock()
		for i, p := range runs {
			d.tb.Logf("--- tetherd run %d output ---\n%s", i+1, p.logs.String())
		}
		if b, err := os.ReadFile(filepath.Join(d.dir, "host", "host.log")); err == nil {
			d.tb.Logf("--- detached host log ---\n%s", b)
		}
	}
}

// startingHosts are the running tetherd's children that run `tetherd
// host`: a host being started has not written host.lock yet, by which
// host.Running finds it.
func (d *daemon) startingHosts() []int {
	d.mu.Lock()
	p := d.proc
	d.mu.Unlock()
	if p == nil {
		return nil
	}
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || parentOf(pid) != p.cmd.Process.Pid {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && args[1] == "host" {
			out = append(out, pid)
		}
	}
	return out
}

// processes lists the live processes of this daemon: those of pids still
// running, and those whose command line names its data directory (the
// agents: their state dir is in it).
func (d *daemon) processes(pids []int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if slices.Contains(pids, pid) || bytes.Contains(cmdline, []byte(d.dir+string(filepath.Separator))) {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf is pid's parent (0 if pid is gone).
func parentOf(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(stat, ')')
	if err != nil || i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:])) // state, ppid, …
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// alive reports whether pid runs (exists and is no zombie).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(stat, ')')
	if err != nil || i < 0 || i+2 >= len(stat) {
		return false
	}
	return stat[i+2] != 'Z'
}

// tokenNow is the daemon's bearer token.
func (d *daemon) tokenNow() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.token
}

// newCwd makes a fresh session directory (inside the daemon's root, so
// that it outlives the agents working in it).
func (d *daemon) newCwd(tb testing.TB) string {
	tb.Helper()
	d.mu.Lock()
	d.seq++
	n := d.seq
	d.mu.Unlock()
	dir := filepath.Join(d.root, fmt.Sprintf("cwd-%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Fixture\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	return dir
}

// env is the environment of a tether command run against this daemon:
// the daemon's address, and its data dir through XDG_DATA_HOME (where
// tether finds the token), then extra (later entries win).
func (d *daemon) env(extra ...string) []string {
	return append(append(cleanEnv(), "TETHER_ADDR="+d.addr, "XDG_DATA_HOME="+d.xdg), extra...)
}

// result is how a tether command ended.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run is one tether command line: its environment, directory and stdin,
// and how long it may run (deadline when 0): a safety net, as deadline.
type run struct {
	env     []string
	dir     string
	stdin   string
	timeout time.Duration
}

// tether runs tether with args as r says and returns how it ended; a
// command still running after its timeout is killed and fails tb.
func (r run) tether(tb testing.TB, args ...string) result {
	tb.Helper()
	timeout := r.timeout
	if timeout == 0 {
		timeout = deadline
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tetherBin(tb), args...)
	cmd.Env, cmd.Dir = r.env, r.dir
	if r.stdin != "" {
		cmd.Stdin = strings.NewReader(r.stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		tb.Fatalf("tether %s: still running after %s (killed), want it to have exited long before\n%s", strings.Join(args, " "), timeout, res)
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		tb.Fatalf("tether %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// tether runs tether against the daemon, in the test's directory.
func (d *daemon) tether(tb testing.TB, args ...string) result {
	tb.Helper()
	return run{env: d.env()}.tether(tb, args...)
}

// must runs tether against the daemon and insists on exit 0.
func (d *daemon) must(tb testing.TB, args ...string) result {
	tb.Helper()
	r := d.tether(tb, args...)
	if r.code != 0 {
		tb.Fatalf("tether %s: got %s, want exit 0", strings.Join(args, " "), r)
	}
	return r
}

// api sends an API request with the daemon's token and decodes a JSON
// answer into out (unless nil); it returns the status.
func (d *daemon) api(tb testing.TB, method, path string, body, out any) int {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tb.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.base+path, rd)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.tokenNow())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return resp.StatusCode
}

// get is api for a GET that insists on 200.
func (d *daemon) get(tb testing.TB, path string, out any) {
	tb.Helper()
	if code := d.api(tb, http.MethodGet, path, nil, out); code != http.StatusOK {
		tb.Fatalf("GET %s: got %d, want 200", path, code)
	}
}

// transcript is the session's stored transcript (GET
// /session/{id}/transcript).
func (d *daemon) transcript(tb testing.TB, sid string) client.Transcript {
	tb.Helper()
	var t client.Transcript
	d.get(tb, "/session/"+sid+"/transcript", &t)
	return t
}

// session is the session as the API shows it.
func (d *daemon) session(tb testing.TB, sid string) client.Session {
	tb.Helper()
	var s client.Session
	d.get(tb, "/session/"+sid, &s)
	return s
}

// turn is one turn of the session as the API shows it.
func (d *daemon) turn(tb testing.TB, sid, pid string) client.Turn {
	tb.Helper()
	var t client.Turn
	d.get(tb, "/session/"+sid+"/turns/"+pid, &t)
	return t
}

// terminal reports whether a turn state is final.
func terminal(s client.TurnState) bool {
	switch s {
	case "completed", "failed", "cancelled", "interrupted":
		return true
	}
	return false
}

// waitTurn waits until the turn has ended and returns it.
func (d *daemon) waitTurn(tb testing.TB, sid, pid string) client.Turn {
	tb.Helper()
	var t client.Turn
	waitFor(tb, "turn "+pid+" to end", func() bool {
		t = d.turn(tb, sid, pid)
		return terminal(t.State)
	})
	return t
}

// createSession starts a demo session in a fresh directory through the
// API and returns its id and directory.
func (d *daemon) createSession(tb testing.TB) (sid, cwd string) {
	tb.Helper()
	cwd = d.newCwd(tb)
	var s client.Session
	if code := d.api(tb, http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": cwd}, &s); code != http.StatusCreated {
		tb.Fatalf("POST /session: got %d, want 201", code)
	}
	return s.Id, cwd
}

// prompt sends a prompt through the API under a new id and returns it.
func (d *daemon) prompt(tb testing.TB, sid, text string) string {
	tb.Helper()
	d.mu.Lock()
	d.seq++
	pid := fmt.Sprintf("api-prompt-%d", d.seq)
	d.mu.Unlock()
	body := map[string]any{"prompt": []map[string]any{{"type": "text", "text": text}}, "promptId": pid}
	if code := d.api(tb, http.MethodPost, "/session/"+sid+"/prompt", body, nil); code != http.StatusAccepted {
		tb.Fatalf("prompt %q: got %d, want 202", text, code)
	}
	return pid
}

// replay is the session's whole durable log as the API serves it.
func (d *daemon) replay(tb testing.TB, sid string) []testbin.Frame {
	tb.Helper()
	return testbin.Replay(tb, nil, d.base, d.tokenNow(), sid)
}

// waitFor polls cond until it holds, failing tb after deadline.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			tb.Fatalf("timed out after %s waiting for %s", deadline, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// agentText is the text of the agent's messages of turn pid, in order.
func agentText(t client.Transcript, pid string) string {
	var b strings.Builder
	for _, m := range t.Messages {
		if m.Role == "agent" && m.PromptId != nil && *m.PromptId == pid {
			b.WriteString(m.Text)
		}
	}
	return b.String()
}

// userTurn is the id of the transcript's turn whose user message is text
// ("" if none).
func userTurn(t client.Transcript, text string) string {
	for _, m := range t.Messages {
		if m.Role == "user" && m.Text == text && m.PromptId != nil {
			return *m.PromptId
		}
	}
	return ""
}

// fixtures are daemons shared by the benchmarks across their runs
// (-count), closed by TestMain.
var (
	fixturesMu sync.Mutex
	fixtures   []func()
)

// keepFixture registers a shared fixture's teardown.
func keepFixture(close func()) {
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	fixtures = append(fixtures, close)
}

// closeFixtures tears every shared fixture down.
func closeFixtures() {
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	for _, f := range fixtures {
		f()
	}
	fixtures = nil
}
