// Package crash_test drives the real tetherd binary and the real demo agent
// through daemon crashes (kill -9) and restarts on the same data directory.
package crash_test

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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store/storetest"
	"github.com/tether/tether/internal/testbin"
)

const token = "crash-test-token"

// deadline bounds every wait: a safety net against hangs, never a
// performance assertion.
const deadline = 60 * time.Second

// Four at once: the parallel tests wait on daemons, agents, graces and
// network cuts, and the package is the longest of CI's Go pass.
func TestMain(m *testing.M) { testbin.MainWaiting(m, 4) }

// binary is the tetherd executable shared by this package's tests.
func binary(t *testing.T) string { return testbin.Tetherd(t) }

func freeAddr(t *testing.T) string { return testbin.FreeAddr(t) }

// logBuffer collects a child's output; the child writes while tests read.
type logBuffer = testbin.LogBuffer

// profile is one demo-agent profile of agents.yaml.
type profile struct {
	id    string
	flags []string
	// env and passthrough are the entry's env and envPassthrough.
	env         map[string]string
	passthrough []string
}

// world is one data directory and the tetherd daemons run on it, one at a
// time, always on the same address (clients reconnect to the same URL).
type world struct {
	t    *testing.T
	bin  string
	dir  string // data dir
	addr string
	// states is the parent of every profile's --state-dir.
	states string
	// env is added to the environment of every daemon the world starts.
	env []string
	// cred, if set, is the user and group the daemons run as (nil: the
	// test's).
	cred *syscall.Credential

	mu sync.Mutex
	// daemon is the running tetherd, nil between runs.
	daemon *child
	// all keeps the output of every daemon of the world, and of the
	// executor hosts the test runs itself, for failures.
	all     []namedLog
	started int // daemons started
	// profiles are the agent profiles of the daemon's agents.yaml.
	profiles []profile
	// db is the world's PostgreSQL database ("" on SQLite).
	db string
	// relative runs each daemon in the data dir's parent, naming the data
	// dir relative to it (--data-dir as a user in that directory types it).
	relative bool
	// sessions are those createSessionOn made: cleanup checks each one's
	// transcript against its log (checkOneTruth) while the daemon runs.
	sessions []string
}

// namedLog is one child's output and what the child was.
type namedLog struct {
	name string
	logs *logBuffer
}

// keepLog adds a child's output to what a failed test prints.
func (w *world) keepLog(name string, logs *logBuffer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, namedLog{name, logs})
}

func newWorld(t *testing.T, profiles ...profile) *world {
	t.Helper()
	return newWorldAt(t, binary(t), t.TempDir(), profiles...)
}

// newWorldAt is a world on the data dir dir whose daemons and agents run
// the tetherd executable bin.
func newWorldAt(t *testing.T, bin, dir string, profiles ...profile) *world {
	t.Helper()
	w := &world{t: t, bin: bin, dir: dir, addr: freeAddr(t)}
	w.states = filepath.Join(w.dir, "agent-state")
	w.setProfiles(profiles...)
	t.Cleanup(w.cleanup)
	return w
}

// stateDir is the profile's demo-agent state directory.
func (w *world) stateDir(id string) string { return filepath.Join(w.states, id) }

// setProfiles writes agents.yaml; it is read by the next daemon start.
func (w *world) setProfiles(profiles ...profile) {
	w.t.Helper()
	w.writeAgents(w.dir, profiles...)
	w.mu.Lock()
	w.profiles = profiles
	w.mu.Unlock()
}

// writeAgents writes an agents.yaml of profiles into dir: the daemon's,
// or an executor host's own.
func (w *world) writeAgents(dir string, profiles ...profile) {
	w.t.Helper()
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, p := range profiles {
		args, _ := json.Marshal(append([]string{"demo-agent", "--state-dir", w.stateDir(p.id)}, p.flags...))
		cmd, _ := json.Marshal(w.bin)
		fmt.Fprintf(&b, "  - id: %s\n    command: %s\n    args: %s\n", p.id, cmd, args)
		// Sandboxed as a user's profile is: its state dir its own.
		fmt.Fprintf(&b, "    sandbox: {writable: [%q]}\n", w.stateDir(p.id))
		if len(p.env) > 0 {
			env, _ := json.Marshal(p.env)
			fmt.Fprintf(&b, "    env: %s\n", env)
		}
		if len(p.passthrough) > 0 {
			pass, _ := json.Marshal(p.passthrough)
			fmt.Fprintf(&b, "    envPassthrough: %s\n", pass)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "agents.yaml"), []byte(b.String()), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// child is a process a test runs (a daemon, an executor host), reaped by
// a goroutine of its own.
type child struct {
	name string
	cmd  *exec.Cmd
	logs *logBuffer
	done chan struct{} // closed once reaped
}

// run starts cmd, keeping its output for a failure's report under name.
func (w *world) run(name string, cmd *exec.Cmd) *child {
	w.t.Helper()
	c := &child{name: name, cmd: cmd, logs: &logBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.logs, c.logs
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(c.done) }()
	w.keepLog(name, c.logs)
	return c
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// exited reports whether the child has ended (and was reaped).
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// kill9 kills the child with SIGKILL and waits until it is reaped.
func (c *child) kill9(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
}

// term stops the child with SIGTERM (a clean stop) and waits for it.
func (c *child) term(t *testing.T) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(deadline):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Errorf("%s did not stop within %s of SIGTERM", c.name, deadline)
	}
}

// start runs `tetherd serve` on the world's data dir and waits for /health.
func (w *world) start(extra ...string) {
	w.t.Helper()
	// Standalone unless a test asks for a host: these tests are about the
	// daemon's own children (the hosted ones say --executor detached).
	dataDir, cwd := w.dir, ""
	if w.relative {
		dataDir, cwd = filepath.Base(w.dir), filepath.Dir(w.dir)
	}
	args := append([]string{"serve", "--data-dir", dataDir, "--addr", w.addr, "--token", token, "--log-level", "debug", "--executor", "standalone"}, extra...)
	if db := w.database(); db != "" {
		// On PostgreSQL (TETHER_TEST_DATABASE=postgres) the daemon is a
		// one-node cluster; every run of the world uses its database.
		args = append(args, "--database", db)
	}
	cmd := exec.Command(w.bin, args...)
	cmd.Dir = cwd
	// Terminals run /bin/sh: the tests are about the terminal, not this
	// machine's shell start-up files (an interactive bash sources
	// ~/.bashrc, which on some machines waits for a lock a killed shell
	// left behind).
	cmd.Env = append(append(os.Environ(), "SHELL=/bin/sh"), w.env...)
	if w.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.cred}
	}
	w.mu.Lock()
	w.started++
	name := fmt.Sprintf("tetherd run %d", w.started)
	w.mu.Unlock()
	d := w.run(name, cmd)
	w.mu.Lock()
	w.daemon = d
	w.mu.Unlock()
	end := time.Now().Add(deadline)
	for {
		resp, err := http.Get("http://" + w.addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if d.exited() {
			w.t.Fatalf("tetherd exited during start-up:\n%s", d.logs.String())
		}
		if time.Now().After(end) {
			w.t.Fatalf("tetherd did not become healthy: %v\n%s", err, d.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// database is the world's PostgreSQL database when the run asks for one
// (storetest), made on first use; "" on SQLite.
func (w *world) database() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.db == "" && storetest.Postgres() {
		w.db = storetest.URL(w.t)
	}
	return w.db
}

// takeDaemon returns the running daemon and forgets it, nil if none.
func (w *world) takeDaemon() *child {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.daemon
	w.daemon = nil
	return d
}

// kill9 kills the daemon with SIGKILL and waits until it is reaped.
func (w *world) kill9() {
	w.t.Helper()
	d := w.takeDaemon()
	if d == nil {
		w.t.Fatal("no daemon to kill")
	}
	d.kill9(w.t)
}

// term stops the daemon with SIGTERM (a clean stop) and waits for it.
func (w *world) term() {
	w.t.Helper()
	if d := w.takeDaemon(); d != nil {
		d.term(w.t)
	}
}

// cleanup stops the daemon and makes sure no process of this world (the
// daemon, its agents, orphans of a killed daemon) survives the test.
func (w *world) cleanup() {
	// The one-truth check fails with t.Fatal, which ends this function by
	// runtime.Goexit: the teardown is deferred so that it still stops
	// every process and prints the daemon's output for that failure.
	defer w.teardown()
	w.mu.Lock()
	running := w.daemon != nil
	w.mu.Unlock()
	if running && !w.t.Failed() {
		for _, sid := range w.sessions {
			w.checkOneTruth(sid)
		}
	}
}

// teardown stops the daemon, its hosts and every process of this world,
// and prints their output when the test failed.
func (w *world) teardown() {
	// A host the daemon is starting is found as its child (processes)
	// only while the daemon runs: it has not written host.lock yet.
	hosts := w.processes(" host ")
	w.term()
	// Executor hosts outlive every daemon on purpose; only once the last
	// daemon is gone can none start another.
	for _, p := range hosts {
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
	}
	w.stopHosts()
	end := time.Now().Add(20 * time.Second)
	for {
		pids := w.processes("")
		if len(pids) == 0 {
			break
		}
		if time.Now().After(end) {
			for _, p := range pids {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
			w.t.Errorf("processes of this test still running 20s after the daemon stopped (killed now): %v", pids)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if w.t.Failed() {
		w.mu.Lock()
		all := slices.Clone(w.all)
		w.mu.Unlock()
		for _, l := range all {
			w.t.Logf("--- %s output ---\n%s", l.name, l.logs.String())
		}
		// The detached host's own log, if the daemon started one.
		if b, err := os.ReadFile(filepath.Join(w.dir, "host", "host.log")); err == nil {
			w.t.Logf("--- detached host log ---\n%s", b)
		}
	}
}

type procInfo struct {
	pid, ppid int
	cwd       string
	cmd       string
}

func (p procInfo) String() string { return fmt.Sprintf("%d %q (cwd %s)", p.pid, p.cmd, p.cwd) }

// processes lists live processes of this world: those whose command line
// mentions its data dir (the daemon, and every agent since state dirs
// live inside it) and its detached executor host, whose command line
// names no path (host.Running finds it, and, before it wrote host.lock,
// startingHosts), keeping those whose command line also contains match.
func (w *world) processes(match string) []procInfo {
	// pgrep takes an extended regular expression; test names put
	// parentheses and the like into the directory name.
	out, err := exec.Command("pgrep", "-f", regexp.QuoteMeta(w.dir)).Output()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 { // 1: none
			w.t.Fatalf("pgrep: %v", err)
		}
	}
	pids := strings.Fields(string(out))
	hosts := w.startingHosts()
	if pid := host.Running(filepath.Join(w.dir, "host")); pid != 0 {
		hosts[pid] = true
	}
	for pid := range hosts {
		if !slices.Contains(pids, strconv.Itoa(pid)) {
			pids = append(pids, strconv.Itoa(pid))
		}
	}
	var ps []procInfo
	for _, f := range pids {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // gone meanwhile
		}
		cmd := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		if cmd == "" {
			continue // a zombie (a host that has just exited): it runs nothing
		}
		if !(strings.Contains(cmd, w.dir) || hosts[pid]) || (match != "" && !strings.Contains(cmd, match)) {
			continue
		}
		if f := strings.Fields(cmd); filepath.Base(f[0]) == "bwrap" || (len(f) > 1 && f[1] == sandbox.InitCommand) {
			continue // an agent's sandbox or its init (their command lines name the agent's), not the agent
		}
		// A zombie has no cwd link; it is not running anything.
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		ppid := 0
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) {
			if stat[i+2] == 'Z' {
				continue
			}
			if f := strings.Fields(string(stat[i+2:])); len(f) > 1 {
				ppid, _ = strconv.Atoi(f[1])
			}
		}
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		ps = append(ps, procInfo{pid: pid, ppid: ppid, cwd: cwd, cmd: cmd})
	}
	// A child forked but not yet exec'd (a host starting an agent) carries
	// its parent's command line for a moment: it is not another process
	// of that kind.
	byPID := make(map[int]procInfo, len(ps))
	for _, p := range ps {
		byPID[p.pid] = p
	}
	return slices.DeleteFunc(ps, func(p procInfo) bool {
		parent, ok := byPID[p.ppid]
		return ok && parent.cmd == p.cmd
	})
}

// agentsIn lists demo-agent processes running in the session's cwd (a
// capability probe runs elsewhere, in the temp dir).
func (w *world) agentsIn(cwd string) []procInfo {
	var out []procInfo
	for _, p := range w.processes("demo-agent") {
		if p.cwd == cwd {
			out = append(out, p)
		}
	}
	return out
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
	return testbin.DoJSON(w.t, "http://"+w.addr, token, method, path, body)
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

// createSession starts a session on profile in a fresh directory, on the
// daemon's default executor.
func (w *world) createSession(profile string) (sid, cwd string) {
	w.t.Helper()
	return w.createSessionOn(profile, "")
}

// createSessionOn starts a session on profile in a fresh directory, on
// the executor named (standalone, detached or a remote host's name; ""
// for the daemon's default).
func (w *world) createSessionOn(profile, executor string) (sid, cwd string) {
	w.t.Helper()
	cwd = w.t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "README.md"), []byte("# Fixture\nhello from the fixture\n"), 0o644); err != nil {
		w.t.Fatal(err)
	}
	// The agent runs in the resolved directory.
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = r
	}
	return w.createSessionIn(profile, executor, cwd), cwd
}

func text(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }

// prompt sends a prompt under promptID and insists on 202.
func (w *world) prompt(sid, promptText, promptID string) {
	w.t.Helper()
	code, m := w.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text(promptText), "promptId": promptID})
	if code != http.StatusAccepted {
		w.t.Fatalf("prompt %q: got %d, want 202: %v", promptText, code, m)
	}
}

func (w *world) turn(sid, pid string) map[string]any {
	w.t.Helper()
	return w.get("/session/" + sid + "/turns/" + pid)
}

// waitTurn waits until the turn is terminal and returns it.
func (w *world) waitTurn(sid, pid string) map[string]any {
	w.t.Helper()
	var turn map[string]any
	w.waitFor("turn "+pid+" to end", func() bool {
		turn = w.turn(sid, pid)
		state, _ := turn["state"].(string)
		return session.TurnState(state).Terminal()
	})
	return turn
}

func (w *world) status(sid string) map[string]any {
	w.t.Helper()
	return w.get("/session/" + sid + "/status")
}

func (w *world) transcript(sid string) map[string]any {
	w.t.Helper()
	return w.get("/session/" + sid + "/transcript")
}

// list returns a JSON array member as a slice of objects.
func list(m map[string]any, key string) []map[string]any { return testbin.List(m, key) }

// frame is one durable SSE event as a client saw it.
type frame testbin.Frame

func (f frame) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(f.Data), &m); err != nil {
		t.Fatalf("event %s %s: %v", f.ID, f.Event, err)
	}
	return m
}

func (f frame) seq() int64 {
	_, n, _ := strings.Cut(f.ID, ":")
	v, _ := strconv.ParseInt(n, 10, 64)
	return v
}

// readFrames parses an SSE body, calling fn for each block; a false return
// stops reading. Control frames are passed with an empty ID.
func readFrames(r io.Reader, fn func(frame) bool) error {
	return testbin.ReadFrames(r, func(f testbin.Frame) bool { return fn(frame(f)) })
}

// replay is the session's whole durable log as GET events?follow=false
// serves it.
func (w *world) replay(sid string) []frame {
	w.t.Helper()
	var out []frame
	for _, f := range testbin.Replay(w.t, nil, "http://"+w.addr, token, sid) {
		out = append(out, frame(f))
	}
	return out
}

// recorder is an SSE client connected to a session's live stream. It
// keeps every durable event it receives, reconnecting from its cursor if
// the server cuts it off (stream_lagged), until stopped.
type recorder struct {
	mu     sync.Mutex
	frames []frame
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *world) record(sid string) *recorder { return w.recordStream(sid, false) }

// follow is record for a client that outlives daemons: when the stream
// breaks (tetherd was killed) it reconnects, again and again, with
// Last-Event-ID, as a browser tab would.
func (w *world) follow(sid string) *recorder { return w.recordStream(sid, true) }

func (w *world) recordStream(sid string, persistent bool) *recorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{cancel: cancel, done: make(chan struct{})}
	url := "http://" + w.addr + "/session/" + sid + "/events"
	go func() {
		defer close(r.done)
		last := ""
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Accept", "text/event-stream")
			if last != "" {
				req.Header.Set("Last-Event-ID", last)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				if !persistent {
					return // daemon gone (or stopped): the recording ends
				}
				select { // the daemon is down: try again shortly
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				if !persistent {
					return
				}
				continue
			}
			_ = readFrames(resp.Body, func(f frame) bool {
				if f.ID == "" {
					return f.Event != "stream_lagged" // reconnect from the cursor
				}
				r.mu.Lock()
				r.frames = append(r.frames, f)
				r.mu.Unlock()
				last = f.ID
				return true
			})
			resp.Body.Close()
		}
	}()
	w.t.Cleanup(r.stop)
	return r
}

// seen returns what the client has received so far.
func (r *recorder) seen() []frame {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.frames)
}

// stop disconnects the client and waits for it.
func (r *recorder) stop() {
	r.cancel()
	<-r.done
}

// waitSeen waits until the client has received an event matching cond.
func (w *world) waitSeen(r *recorder, what string, cond func(frame) bool) frame {
	w.t.Helper()
	var hit frame
	w.waitFor(what, func() bool {
		for _, f := range r.seen() {
			if cond(f) {
				hit = f
				return true
			}
		}
		return false
	})
	return hit
}

// snapshotDir reads every file under dir (name → content).
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil {
			out[path] = string(b)
		}
		return nil
	})
	return out
}

// killGroup kills the process group pid is in with SIGKILL: the agent
// and everything it started (a sandboxed agent's group is its sandbox's,
// whose leader is bwrap).
func killGroup(pid int) error {
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		return err
	}
	return syscall.Kill(-pgid, syscall.SIGKILL)
}

// descends reports whether pid is ancestor or one of its descendants.
func descends(pid, ancestor int) bool {
	for i := 0; pid > 1 && i < 64; i++ {
		if pid == ancestor {
			return true
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		j := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[j+2:]))
		if j < 0 || len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return false
}
