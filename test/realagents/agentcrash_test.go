package realagents_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// Issue 28, items 1 and 2: what a live agent's crash does to the session,
// with real agents.

// agentPID is the pid of the session's agent process: the executor's, or
// on a remote host (whose pids the session does not give, as they are
// another machine's) the one its host lists in GET /executors; the test's
// remote host runs on this machine.
func (w *world) agentPID(sid string) int {
	w.t.Helper()
	_, sess := w.do("GET", "/session/"+sid, nil)
	exec, _ := sess["executor"].(map[string]any)
	pid, _ := exec["pid"].(float64)
	if exec["runtime"] == "remote" {
		_, m := w.do("GET", "/executors", nil)
		for _, h := range list(m, "hosts") {
			for _, s := range list(h, "sessions") {
				if s["sessionId"] == sid {
					pid, _ = s["pid"].(float64)
				}
			}
		}
	}
	if pid <= 1 {
		w.t.Fatalf("no agent pid in %v", exec)
	}
	// The executor's pid is the agent's sandbox: bwrap, whose child is
	// bwrap again inside its namespaces, whose child is the loopback
	// sandbox's init (tetherd sandbox-init), whose child is the agent.
	p := int(pid)
	for i := 0; i < 4; i++ {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		argv := strings.Split(string(cmdline), "\x00")
		if err != nil || len(argv) < 2 || (filepath.Base(argv[0]) != "bwrap" && argv[1] != "sandbox-init") {
			break
		}
		kids := childrenOf(w.t, p)
		if len(kids) != 1 {
			w.t.Fatalf("the agent's sandbox (pid %d) has children %v, want one", p, kids)
		}
		p = kids[0]
	}
	return p
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

// TestKillAgentWithQueuedPrompts: kill -9 of the agent's process group
// while its model stalls and two prompts wait behind the turn. The queue
// is held as after a daemon restart: no queued prompt reaches the model
// before the user continues; continue is accepted, and the model sees the
// continuation, then each queued prompt once, in order. Before the fix the
// first queued prompt ran at once on a fresh agent and continue answered
// 409 nothing_to_continue.
func TestKillAgentWithQueuedPrompts(t *testing.T) {
	const one, two = "QUEUED-ONE: please say one.", "QUEUED-TWO: please say two."
	forEachAgentOn(t, []string{standalone, detached, remote}, func(t *testing.T, a agent, rt string) {
		gate := modelserver.NewGate()
		t.Cleanup(gate.Release)
		w := newWorldOn(t, a, rt, modelserver.Stall("Working on it, one word at a time, slowly.", 3, gate))
		sid := w.createSession()
		w.prompt(sid, "Do the slow thing.", "p1")
		waitStalled(t, gate)
		w.prompt(sid, one, "q1")
		w.prompt(sid, two, "q2")
		before := len(mainRequests(w.model))
		// The agent's group: its sandbox's, whose leader is bwrap.
		pid := w.agentPID(sid)
		pgid, err := syscall.Getpgid(pid)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill agent group %d: %v", pgid, err)
		}
		if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" || turn["interruptReason"] != "agent_exited" {
			t.Fatalf("p1 after the agent died: got %v (%v), want interrupted by agent_exited", turn["state"], turn["interruptReason"])
		}
		_, ctx := w.do("GET", "/session/"+sid+"/context", nil)
		rec, _ := ctx["recovery"].(map[string]any)
		if rec["promptId"] != "p1" || rec["canContinue"] != true || rec["queueHeld"] != true ||
			!reflect.DeepEqual(rec["queuedPromptIds"], []any{"q1", "q2"}) {
			t.Fatalf("recovery after the crash: got %v, want p1 continuable with q1, q2 held", rec)
		}
		w.model.SetScript(modelserver.Say("FINAL: done."))
		w.continueTurn(sid, "c1")
		for _, id := range []string{"q1", "q2"} {
			if turn := w.waitTurn(sid, id); turn["state"] != "completed" {
				t.Fatalf("turn %s: got %v, want completed: %v", id, turn["state"], turn)
			}
		}
		asked := askedSince(w.model, before, map[string]string{one: "q1", two: "q2"})
		if want := []string{"continuation", "q1", "q2"}; !reflect.DeepEqual(asked, want) {
			t.Errorf("model requests after the crash: got %v, want %v", asked, want)
		}
	})
}

// TestClaudeCLIDiesMidTool: claude-agent-acp runs Claude Code as a child
// process of its own; that child is killed while the agent waits on the
// user's permission for a write. claude-agent-acp lives on but has lost
// the session ("The Claude Agent process exited unexpectedly. Please start
// a new session.", then "Session not found" for every later prompt). The
// turn is interrupted (agent_session_lost), its tool call gets the
// synthetic failed result, the permission expires, a recovery report is
// recorded, and continue restores the session in a new agent and
// completes, on every runtime; a later prompt works too. The restore is
// native_resume when Claude Code had written its session file
// (~/.claude/projects/<cwd>/<id>.jsonl, a line at a time) before it died,
// else history_injection: killed before its first write it leaves no
// file, and claude-agent-acp answers session/resume, and session/load,
// which opens the session the same way, with resourceNotFound ("No
// conversation found with session ID"). Before the fix the turn ended
// failed, the tool call stayed pending and every later prompt failed with
// agent_session_not_found.
func TestClaudeCLIDiesMidTool(t *testing.T) {
	a := agents[0]
	if a.id != "claude" {
		t.Fatalf("agents[0] is %s, want claude", a.id)
	}
	const final = "FINAL: continued after Claude Code died."
	for _, rt := range []string{standalone, detached, remote} {
		t.Run(rt, func(t *testing.T) {
			t.Parallel()
			claudeCLIDiesMidTool(t, a, rt, final)
		})
	}
}

func claudeCLIDiesMidTool(t *testing.T, a agent, rt, final string) {
	w := newWorldOn(t, a, rt, nil)
	path := filepath.Join(w.cwd, "out.txt")
	w.model.SetScript(modelserver.WriteFile(path, "content\n", "I will write the file.", final))
	sid := w.createSession()
	fol := w.follow(sid)
	w.prompt(sid, "Write out.txt please.", "p1")
	w.waitFor("the agent's permission request", func() bool { return len(list(w.transcript(sid), "pendingPermissions")) == 1 })
	agentPID := w.agentPID(sid)
	kids := childrenOf(t, agentPID)
	if len(kids) == 0 {
		t.Fatalf("claude-agent-acp (pid %d) has no child process", agentPID)
	}
	for _, k := range kids {
		if err := syscall.Kill(k, syscall.SIGKILL); err != nil {
			t.Fatalf("kill Claude Code %d: %v", k, err)
		}
	}
	turn := w.waitTurn(sid, "p1")
	if turn["state"] != "interrupted" || turn["interruptReason"] != "agent_session_lost" {
		t.Fatalf("p1 after Claude Code died: got %v (reason %v, error %v), want interrupted by agent_session_lost",
			turn["state"], turn["interruptReason"], turn["error"])
	}
	tr := w.transcript(sid)
	calls := list(tr, "toolCalls")
	if len(calls) != 1 || calls[0]["status"] != "failed" || calls[0]["interrupted"] != true {
		t.Errorf("tool calls after the interruption: got %v, want one, failed and interrupted", calls)
	}
	if p := list(tr, "pendingPermissions"); len(p) != 0 {
		t.Errorf("pending permissions after the interruption: got %v, want none", p)
	}
	_, ctx := w.do("GET", "/session/"+sid+"/context", nil)
	rec, _ := ctx["recovery"].(map[string]any)
	if rec["kind"] != "interrupted_turn" || rec["canContinue"] != true || rec["interruptReason"] != "agent_session_lost" {
		t.Fatalf("recovery: got %v, want interrupted_turn, continuable, agent_session_lost", rec)
	}
	if d, _ := rec["danglingToolCalls"].([]any); len(d) != 1 {
		t.Errorf("recovery's dangling tool calls: got %v, want the write", rec["danglingToolCalls"])
	}
	if _, ok := rec["report"].(map[string]any); !ok {
		t.Errorf("recovery: got no report in %v", rec)
	}

	w.model.SetScript(modelserver.Say(final))
	w.continueTurn(sid, "c1")
	if got := agentText(w.transcript(sid), "c1"); !strings.Contains(got, final) {
		t.Errorf("continuation's agent text: got %q, want %q", got, final)
	}
	if newPID := w.agentPID(sid); newPID == agentPID {
		t.Errorf("the continuation ran on pid %d, the agent that lost the session", newPID)
	}
	// Restored in the new agent: natively where Claude Code had saved
	// the session, else by injecting the history (a kill before its first
	// save leaves claude-agent-acp nothing to resume). Either way the
	// model's continuation request holds the original request.
	var resumed []string
	for _, ev := range w.log(sid) {
		if ev.Type == "session.resumed" {
			s, _ := ev.Data["strategy"].(string)
			resumed = append(resumed, s)
		}
	}
	if len(resumed) != 1 || (resumed[0] != "native_resume" && resumed[0] != "native_load" && resumed[0] != "history_injection") {
		t.Errorf("session.resumed strategies: got %v, want one restore (native, or history injection)", resumed)
	}
	reqs := mainRequests(w.model)
	if last := reqs[len(reqs)-1]; !last.Contains("Write out.txt please.") {
		t.Errorf("the continuation's model request does not hold the original request (last user: %q)", last.LastUser().Text())
	}
	w.prompt(sid, "And once more.", "p2")
	if turn := w.waitTurn(sid, "p2"); turn["state"] != "completed" {
		t.Fatalf("a prompt after the continuation: got %v (%v), want completed", turn["state"], turn["error"])
	}
	if n := fol.count("turn.interrupted"); n != 1 {
		t.Errorf("turn.interrupted events streamed: got %d, want 1", n)
	}
}

// TestContinueAtOnceAfterClaudeCLIDies: claude-agent-acp's Claude Code
// child is killed while the agent waits on a permission, and the user
// continues the moment the turn is interrupted, while the agent that lost
// the session is still being stopped. The continue is accepted and
// restores the session in a new agent on every runtime. Before, on an
// executor host (detached, remote) the new agent's start failed with
// 502 agent_start_failed: "session … already has an agent on executor
// host", as the retired one had not ended yet.
func TestContinueAtOnceAfterClaudeCLIDies(t *testing.T) {
	a := agents[0]
	if a.id != "claude" {
		t.Fatalf("agents[0] is %s, want claude", a.id)
	}
	const final = "FINAL: continued at once."
	for _, rt := range []string{standalone, detached, remote} {
		t.Run(rt, func(t *testing.T) {
			t.Parallel()
			w := newWorldOn(t, a, rt, nil)
			w.model.SetScript(modelserver.WriteFile(filepath.Join(w.cwd, "out.txt"), "content\n", "I will write the file.", final))
			sid := w.createSession()
			w.prompt(sid, "Write out.txt please.", "p1")
			w.waitFor("the agent's permission request", func() bool { return len(list(w.transcript(sid), "pendingPermissions")) == 1 })
			for _, k := range childrenOf(t, w.agentPID(sid)) {
				_ = syscall.Kill(k, syscall.SIGKILL)
			}
			w.model.SetScript(modelserver.Say(final))
			var code int
			var m map[string]any
			w.waitFor("continue to be possible", func() bool {
				code, m = w.do("POST", "/session/"+sid+"/continue", map[string]any{"promptId": "c1"})
				// Until the turn is interrupted: turn_active.
				return code != http.StatusConflict || m["code"] != "turn_active"
			})
			if code != http.StatusAccepted {
				t.Fatalf("continue right after the interruption: got %d %v, want 202", code, m)
			}
			if turn := w.waitTurn(sid, "c1"); turn["state"] != "completed" {
				t.Fatalf("continuation: got %v (%v), want completed", turn["state"], turn["error"])
			}
			if got := agentText(w.transcript(sid), "c1"); !strings.Contains(got, final) {
				t.Errorf("continuation's agent text: got %q, want %q", got, final)
			}
		})
	}
}
