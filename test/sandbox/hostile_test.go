package sandbox_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tether/tether/internal/demoagent"
	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/sandbox"
)

// runtimeCase is one place a session's agent runs.
type runtimeCase struct {
	name string
	// executor is the daemon's --executor; remote runs a remote host too,
	// which sessions name.
	executor string
	remote   bool
}

var runtimes = []runtimeCase{
	{name: "standalone", executor: "standalone"},
	{name: "detached", executor: "detached"},
	{name: "remote", executor: "standalone", remote: true},
}

// attacks are the attacks that have a target on the runtime: a host
// socket only on the detached one, a host to answer through on both
// hosted ones.
func (rt runtimeCase) attacks() []string {
	out := []string{demoagent.AttackFindSecrets, demoagent.AttackReadToken, demoagent.AttackReadDataDir, demoagent.AttackWriteOutside,
		demoagent.AttackSeeProcesses, demoagent.AttackSeePIDs, demoagent.AttackApproveAPI, demoagent.AttackLeaveProcess}
	if rt.executor == "detached" {
		out = append(out, demoagent.AttackHostSocket)
	}
	if rt.executor == "detached" || rt.remote {
		out = append(out, demoagent.AttackApproveHost)
	}
	return out
}

// hostileCase is one way of running the hostile agent.
type hostileCase struct {
	name string
	// sandbox is the profile's agents.yaml sandbox entry ("": none, the
	// default policy).
	sandbox string
	// confined: every attack must fail; else (mode off) every attack
	// with a target must succeed, which proves the test sees it.
	confined bool
	// end is how the agent ends once it has attacked.
	end agentEnd
	// inWorkspace puts the secrets inside the session's workspace, which
	// the agent sees, so that what hides them is the sandbox's own
	// masking: the data dir of the agent's host (the daemon's, or the
	// remote host's), and on the daemon's runtimes the daemon's copy of a
	// remote host's token, which its hosts.yaml names.
	inWorkspace bool
}

// agentEnd is how a case ends the agent.
type agentEnd int

const (
	// killAgent sends SIGKILL to the demo agent's own process.
	killAgent agentEnd = iota
	// killSandbox sends SIGKILL to the agent's outermost process (the
	// pid its status reports: bwrap's).
	killSandbox
	// closeSession closes the session, which stops the agent.
	closeSession
)

var hostileCases = []hostileCase{
	{name: "sandboxed, kill the agent", confined: true, end: killAgent},
	{name: "sandboxed, kill its sandbox", confined: true, end: killSandbox},
	{name: "sandboxed, close the session", confined: true, end: closeSession},
	{name: "sandboxed, secrets in the workspace", confined: true, inWorkspace: true, end: killAgent},
	{name: "mode off, kill the agent", sandbox: "{mode: off}", end: killAgent},
	{name: "mode off, close the session", sandbox: "{mode: off}", end: closeSession},
}

// reportFile is where the hostile agent writes its report, in its
// workspace: an attack that succeeds over the host protocol takes the
// session's record stream away from the daemon, and the rest of the turn
// with it.
const reportFile = "hostile-report.txt"

// TestHostileAgent (issue 31): on each runtime, a hostile agent tries to
// read tetherd's and the host's tokens and data dirs, to connect to the
// host's socket, to answer its own permission requests through the API
// and through the host, to write outside its workspace through its own
// shell, to see other processes and to leave one behind when it is
// killed -9. In its sandbox each attempt fails, asserted one by one; with
// `sandbox: {mode: off}` each succeeds on the same targets.
func TestHostileAgent(t *testing.T) {
	for _, rt := range runtimes {
		t.Run(rt.name, func(t *testing.T) {
			for _, c := range hostileCases {
				t.Run(c.name, func(t *testing.T) { runHostile(t, rt, c) })
			}
		})
	}
}

func runHostile(t *testing.T, rt runtimeCase, c hostileCase) {
	if c.confined {
		if err := sandbox.Available(); err != nil {
			t.Fatalf("agents cannot be sandboxed on this machine (Debian: apt-get install bubblewrap): %v", err)
		}
	}
	dataDir, remoteDir := "data", "remote"
	if c.inWorkspace && rt.remote {
		remoteDir = "ws/.tether-host"
	} else if c.inWorkspace {
		dataDir = "ws/.tether"
	}
	w := newWorld(t, dataDir, c.sandbox)
	ws := w.mkdir("ws")
	switch {
	case rt.remote:
		w.startRemote(remoteDir, c.sandbox, "")
	case c.inWorkspace:
		w.startRemote(remoteDir, c.sandbox, filepath.Join(ws, "far.token"))
	}
	w.start(rt.executor)
	outside := filepath.Join(w.mkdir("outside"), "escape.txt")
	sid, pid := w.createSession(rt, ws)
	marker := newMarker(t)
	tg := w.targets(rt, marker, outside)
	w.prompt(sid, "/hostile "+mustJSON(t, tg))
	report := w.waitReport(ws)
	got := demoagent.ParseAttacks(report)
	for _, name := range demoagent.HostileAttacks {
		if _, ok := got[name]; !ok {
			t.Fatalf("the report has no line for attack %s:\n%s", name, report)
		}
	}
	if c.confined && got[demoagent.AttackApproveAPI].Outcome != demoagent.OutcomeSucceeded &&
		got[demoagent.AttackApproveHost].Outcome != demoagent.OutcomeSucceeded {
		// Both requests are still the user's to answer (an agent that
		// answered one fails below, attack by attack).
		w.answerPermissions(sid)
	}
	if _, err := os.Stat(outside); err == nil {
		got[demoagent.AttackWriteOutside] = demoagent.AttackResult{Name: demoagent.AttackWriteOutside,
			Outcome: demoagent.OutcomeSucceeded, Detail: outside + " is there, seen from outside"}
	}
	got[demoagent.AttackLeaveProcess] = w.endAndLook(sid, pid, c, marker)

	for _, name := range rt.attacks() {
		r := got[name]
		switch {
		case c.confined && r.Outcome != demoagent.OutcomeBlocked:
			t.Errorf("attack %s: got %s (%s), want blocked", name, r.Outcome, r.Detail)
		case !c.confined && r.Outcome != demoagent.OutcomeSucceeded:
			t.Errorf("attack %s with sandbox mode off: got %s (%s), want SUCCEEDED (else this test cannot see the attack)", name, r.Outcome, r.Detail)
		}
	}
	if c.confined {
		for name, r := range got {
			if !slices.Contains(rt.attacks(), name) && r.Outcome == demoagent.OutcomeSucceeded {
				t.Errorf("attack %s: got %s (%s), want it to fail", name, r.Outcome, r.Detail)
			}
		}
	}
	t.Logf("the agent's report:\n%s", report)
}

func newMarker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "hostile-" + hex.EncodeToString(b)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// createSession starts a session of the hostile profile in ws on the
// runtime, waits for its agent and returns the session's id and the
// agent's pid (the outermost process: bwrap's in a sandbox).
func (w *world) createSession(rt runtimeCase, ws string) (string, int) {
	w.t.Helper()
	body := map[string]any{"agentProfileId": "hostile", "cwd": ws}
	if rt.remote {
		body["executor"] = "far"
	}
	code, m := w.do(http.MethodPost, "/session", body)
	if code != http.StatusCreated {
		w.t.Fatalf("create session: got %d, want 201: %v", code, m)
	}
	sid := m["id"].(string)
	var pid int
	w.waitFor("the agent to be ready", func() bool {
		ex, _ := w.get("/session/" + sid)["executor"].(map[string]any)
		if ex["status"] == "error" {
			w.t.Fatalf("the agent did not start: %v", ex)
		}
		p, _ := ex["pid"].(float64)
		pid = int(p)
		if ex["status"] == "ready" && pid == 0 && rt.remote {
			// A remote host's agent's pid is the host's to tell.
			pid = w.remotePID(sid)
		}
		return ex["status"] == "ready" && pid > 0
	})
	return sid, pid
}

// remotePID is the pid of the session's agent as its remote host reports it.
func (w *world) remotePID(sid string) int {
	w.t.Helper()
	for _, h := range list(w.get("/executors"), "hosts") {
		for _, s := range list(h, "sessions") {
			if p, _ := s["pid"].(float64); s["sessionId"] == sid {
				return int(p)
			}
		}
	}
	return 0
}

// targets are what the agent is told to attack, each checked from
// outside to be there (so that "blocked" means something).
func (w *world) targets(rt runtimeCase, marker, outside string) demoagent.HostileTargets {
	w.t.Helper()
	tg := demoagent.HostileTargets{
		TokenFiles: []string{filepath.Join(w.dir, "token")},
		DataDirs:   []string{w.dir},
		APIAddr:    w.addr,
		Outside:    []string{outside},
		PIDs:       []int{w.daemon.cmd.Process.Pid},
		Marker:     marker,
		Report:     reportFile,
	}
	if r := w.remote; r != nil && !rt.remote {
		tg.TokenFiles = append(tg.TokenFiles, r.daemonToken)
	}
	switch {
	case rt.executor == "detached":
		hostDir := filepath.Join(w.dir, "host")
		tg.TokenFiles = append(tg.TokenFiles, filepath.Join(hostDir, "token"))
		tg.DataDirs = append(tg.DataDirs, hostDir)
		tg.HostSockets = []string{filepath.Join(hostDir, "host.sock")}
		// Its command line names no path: host.lock names it.
		pid := host.Running(hostDir)
		if pid == 0 {
			w.t.Fatalf("the detached host of %s is not running", hostDir)
		}
		tg.PIDs = append(tg.PIDs, pid)
	case rt.remote:
		r := w.remote
		tg.TokenFiles = append(tg.TokenFiles, r.tokenFile, r.key)
		tg.DataDirs = append(tg.DataDirs, r.dir)
		tg.HostAddrs = []string{r.addr}
		tg.PIDs = append(tg.PIDs, r.proc.cmd.Process.Pid)
	}
	for _, f := range tg.TokenFiles {
		if b, err := os.ReadFile(f); err != nil || len(b) == 0 {
			w.t.Fatalf("target %s: got %d bytes, %v; want a secret there", f, len(b), err)
		}
	}
	for _, d := range tg.DataDirs {
		if entries, err := os.ReadDir(d); err != nil || len(entries) == 0 {
			w.t.Fatalf("target %s: got %d entries, %v; want a data dir there", d, len(entries), err)
		}
	}
	for _, s := range tg.HostSockets {
		if fi, err := os.Stat(s); err != nil || fi.Mode().Type() != os.ModeSocket {
			w.t.Fatalf("target %s: %v; want a socket there", s, err)
		}
	}
	for _, pid := range tg.PIDs {
		if !alive(pid) {
			w.t.Fatalf("target pid %d is not running", pid)
		}
	}
	return tg
}

func (w *world) prompt(sid, text string) {
	w.t.Helper()
	code, m := w.do(http.MethodPost, "/session/"+sid+"/prompt", map[string]any{
		"prompt": []map[string]any{{"type": "text", "text": text}}, "promptId": "hostile"})
	if code != http.StatusAccepted {
		w.t.Fatalf("prompt: got %d, want 202: %v", code, m)
	}
}

// waitReport waits for the agent's report in its workspace.
func (w *world) waitReport(ws string) string {
	w.t.Helper()
	var report []byte
	w.waitFor("the hostile agent's report", func() bool {
		var err error
		report, err = os.ReadFile(filepath.Join(ws, reportFile))
		return err == nil
	})
	return string(report)
}

// answerPermissions answers the agent's requests as the user, with
// reject_once, and checks that the agent got that answer: its own never
// reached it.
func (w *world) answerPermissions(sid string) {
	w.t.Helper()
	var pending []map[string]any
	w.waitFor("the agent's permission requests", func() bool {
		pending = list(w.get("/session/"+sid+"/transcript"), "pendingPermissions")
		return len(pending) == 2
	})
	for _, p := range pending {
		code, m := w.do(http.MethodPost, "/session/"+sid+"/permission/"+p["id"].(string), map[string]any{"optionId": "reject_once"})
		if code/100 != 2 {
			w.t.Fatalf("answer permission %v: got %d, want 2xx: %v", p["id"], code, m)
		}
	}
	var text string
	w.waitFor("the hostile turn to end", func() bool {
		turn := w.get("/session/" + sid + "/turns/hostile")
		state, _ := turn["state"].(string)
		return state != "" && state != "running" && state != "queued"
	})
	for _, m := range list(w.get("/session/"+sid+"/transcript"), "messages") {
		if m["role"] == "agent" {
			text += fmt.Sprint(m["text"])
		}
	}
	for i := 1; i <= 2; i++ {
		if want := fmt.Sprintf("permission outcome %d: reject_once", i); !strings.Contains(text, want) {
			w.t.Errorf("the agent's answers: want %q (the user's), got:\n%s", want, text)
		}
	}
}

// endAndLook checks that the process leave-process started runs, ends
// the agent as the case says (pid is its outermost process) and reports
// whether anything carrying marker outlived it.
func (w *world) endAndLook(sid string, pid int, c hostileCase, marker string) demoagent.AttackResult {
	w.t.Helper()
	marked := func() []proc {
		return procsMatching(func(p proc) bool {
			return strings.Contains(p.cmdline, marker) || strings.Contains(p.environ, demoagent.HostileMarkerEnv+"="+marker)
		})
	}
	if len(marked()) == 0 {
		w.t.Fatalf("leave-process: no process carries the marker %s before the kill: the attack was not made", marker)
	}
	if c.confined {
		if argv := procArgv(pid); len(argv) == 0 || filepath.Base(argv[0]) != "bwrap" {
			w.t.Errorf("the agent's process %d runs %q, want bwrap: the agent is not sandboxed", pid, argv)
		}
	}
	agent := agentProcess(w.t, pid)
	// The agent's processes but the marked: bubblewrap, the sandbox's
	// pid 1 (another bubblewrap), the demo agent.
	var tree []int
	for _, p := range descendants(pid) {
		if !strings.Contains(p.cmdline, marker) && !strings.Contains(p.environ, demoagent.HostileMarkerEnv+"="+marker) {
			tree = append(tree, p.pid)
		}
	}
	var how string
	switch c.end {
	case killAgent, killSandbox:
		victim := agent
		if c.end == killSandbox {
			victim = pid
		}
		how = fmt.Sprintf("the kill -9 of %d", victim)
		if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
			w.t.Fatalf("kill -9 %d: %v", victim, err)
		}
	case closeSession:
		how = "the session's close"
		if code, m := w.do(http.MethodDelete, "/session/"+sid, nil); code/100 != 2 {
			w.t.Fatalf("close the session: got %d, want 2xx: %v", code, m)
		}
	}
	// Once the agent's processes have ended, whatever else its sandbox
	// held has ended too: the end of the sandbox's pid 1 kills every
	// process of its PID namespace and waits for them. A process with
	// the marker alive then escaped.
	w.waitFor(fmt.Sprintf("the agent's processes %v to be gone after %s", tree, how), func() bool {
		return !slices.ContainsFunc(tree, alive)
	})
	res := demoagent.AttackResult{Name: demoagent.AttackLeaveProcess, Outcome: demoagent.OutcomeBlocked,
		Detail: fmt.Sprintf("nothing carrying %s outlived %s", marker, how)}
	left := marked()
	if len(left) > 0 {
		res.Outcome = demoagent.OutcomeSucceeded
		res.Detail = fmt.Sprintf("%d processes outlived %s:", len(left), how)
		for _, p := range left {
			res.Detail += fmt.Sprintf(" %d %q (parent %d)", p.pid, p.cmdline, p.ppid)
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	return res
}

// agentProcess is the demo agent's own process: pid, or its descendant
// running `tetherd demo-agent` (bwrap runs it as a grandchild).
func agentProcess(t *testing.T, pid int) int {
	t.Helper()
	for _, p := range descendants(pid) {
		if len(p.argv) > 1 && p.argv[1] == "demo-agent" {
			return p.pid
		}
	}
	t.Fatalf("no demo-agent process at or under pid %d", pid)
	return 0
}

// descendants are pid and the processes under it.
func descendants(pid int) []proc {
	all := procsMatching(func(proc) bool { return true })
	parent := map[int]int{}
	for _, p := range all {
		parent[p.pid] = p.ppid
	}
	return slices.DeleteFunc(all, func(p proc) bool {
		for q := p.pid; q > 0; q = parent[q] {
			if q == pid {
				return false
			}
		}
		return true
	})
}

func procArgv(pid int) []string {
	for _, p := range procsMatching(func(p proc) bool { return p.pid == pid }) {
		return p.argv
	}
	return nil
}
