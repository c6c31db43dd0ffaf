package crash_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syntheticToolResult is the result recorded for a tool call whose outcome
// a daemon restart lost (DESIGN.md section 5).
const syntheticToolResult = "Tool execution result was not recorded: interrupted by daemon restart. Treat as failure and retry if needed."

// The profiles of every world: a plain demo agent, and one that takes 3 s
// to start (so a prompt can be persisted before the agent sees it).
var (
	agentProfile = profile{id: "agent"}
	slowProfile  = profile{id: "slow", flags: []string{"--startup-delay", "3s"}}
)

// TestCrashMatrix kills the real daemon with SIGKILL at each interesting
// moment and restarts it on the same data dir. After the restart: the
// status, the turn outcome, the synthetic tool results and the events are
// as specified; every event a connected client saw before the crash is in
// the log unchanged; and nothing is sent to an agent until a prompt.
func TestCrashMatrix(t *testing.T) {
	t.Run("kill -9 while idle", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, agentProfile, slowProfile)
		w.start()
		sid, cwd := w.createSession("agent")
		rec := w.record(sid)
		w.prompt(sid, "/echo before the crash", "p1")
		if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
			t.Fatalf("turn: got %v, want completed", turn)
		}
		w.waitSeen(rec, "turn.completed", func(f frame) bool { return f.Event == "turn.completed" })
		tok := w.resumeToken(sid)

		w.kill9()
		rec.stop()
		w.start()

		replay := w.checkRestart(sid, cwd, "agent", rec.seen())
		if turn := w.turn(sid, "p1"); turn["state"] != "completed" {
			t.Errorf("turn: got %v, want still completed", turn["state"])
		}
		if n := countEvents(replay, "turn.interrupted"); n != 0 {
			t.Errorf("got %d turn.interrupted events, want 0 (nothing was running)", n)
		}
		w.checkStatus(sid, wantStatus{reason: "agent_not_running", executor: "stopped"})
		if got := w.resumeToken(sid); got != tok {
			t.Errorf("resume token: got %q, want %q kept", got, tok)
		}
		w.checkPromptRestores(sid, cwd, "native_resume")
	})

	t.Run("kill -9 after the prompt was persisted, before the agent received it", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, agentProfile, slowProfile)
		w.start()
		sid, cwd := w.createSession("slow") // the agent needs 3 s to start
		rec := w.record(sid)
		const secret = "never-delivered-prompt"
		w.prompt(sid, "/echo "+secret, "p1")
		w.waitSeen(rec, "turn.queued", func(f frame) bool { return f.Event == "turn.queued" })
		if st := w.status(sid); st["executorStatus"] != "starting" {
			t.Fatalf("executor: got %v, want starting (the agent must not have the prompt yet)", st["executorStatus"])
		}
		if turn := w.turn(sid, "p1"); turn["state"] != "queued" {
			t.Fatalf("turn before the crash: got %v, want queued", turn["state"])
		}

		w.kill9()
		rec.stop()
		w.start()

		replay := w.checkRestart(sid, cwd, "slow", rec.seen())
		w.checkInterrupted(sid, "p1", replay, nil)
		// The turn never started: no system notice, no user message sent.
		for _, m := range list(w.transcript(sid), "messages") {
			t.Errorf("got message %v, want none (the turn never started)", m)
		}
		for path, content := range snapshotDir(t, w.stateDir("slow")) {
			if strings.Contains(content, secret) {
				t.Errorf("agent state %s holds the prompt: the agent received it", path)
			}
		}
		// The agent never opened a session: no resume token, fresh start.
		w.checkStatus(sid, wantStatus{reason: "agent_not_running_fresh_start", executor: "stopped"})
		w.checkPromptRestores(sid, cwd, "")
	})

	t.Run("kill -9 mid-stream", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, agentProfile, slowProfile)
		w.start()
		sid, cwd := w.createSession("agent")
		rec := w.record(sid)
		w.prompt(sid, "/stream 100000", "p1")
		w.waitSeen(rec, "30 message chunks", func(f frame) bool {
			return f.Event == "message.chunk" && strings.Contains(f.Data, `chunk 30\n`)
		})

		w.kill9()
		rec.stop()
		w.start()

		seen := rec.seen()
		replay := w.checkRestart(sid, cwd, "agent", seen)
		w.checkInterrupted(sid, "p1", replay, nil)
		// The streamed text the client saw is in the transcript, in order.
		var seenText strings.Builder
		for _, f := range seen {
			if (f.Event == "message.added" || f.Event == "message.chunk") && f.JSON(t)["role"] == "agent" {
				seenText.WriteString(f.JSON(t)["text"].(string))
			}
		}
		agent, system := "", ""
		for _, m := range list(w.transcript(sid), "messages") {
			switch m["role"] {
			case "agent":
				agent += m["text"].(string)
			case "system":
				system += m["text"].(string)
			}
		}
		if !strings.HasPrefix(seenText.String(), "chunk 1\nchunk 2\n") || !strings.HasPrefix(agent, seenText.String()) {
			t.Errorf("agent text: got %d chars starting %.40q, want it to start with the %d chars the client saw",
				len(agent), agent, seenText.Len())
		}
		// The log is the truth: the transcript holds exactly the chunks
		// whose events committed, those after the client's last one too
		// (they sat as chunk rows of the open message at the kill).
		var logged strings.Builder
		for _, f := range replay {
			if (f.Event == "message.added" || f.Event == "message.chunk") && f.JSON(t)["role"] == "agent" {
				logged.WriteString(f.JSON(t)["text"].(string))
			}
		}
		if agent != logged.String() {
			t.Errorf("agent text: got %d chars ending %q, want the %d chars of the committed chunk events, ending %q",
				len(agent), tail(agent), logged.Len(), tail(logged.String()))
		}
		if !strings.Contains(system, "Turn interrupted: tetherd restarted") {
			t.Errorf("system messages: got %q, want the restart notice", system)
		}
		w.checkStatus(sid, wantStatus{reason: "agent_not_running", executor: "stopped"})
		w.checkPromptRestores(sid, cwd, "native_resume")
	})

	t.Run("kill -9 mid tool call", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, agentProfile, slowProfile)
		w.start()
		sid, cwd := w.createSession("agent")
		// The hanging tool call stays in progress for as long as the test
		// wants (a FIFO read did this before reads of FIFOs were refused).
		rec := w.record(sid)
		w.prompt(sid, "/tool hang", "p1")
		w.waitSeen(rec, "the tool call in progress", func(f frame) bool {
			return f.Event == "tool_call.started" && strings.Contains(f.Data, `"status":"in_progress"`)
		})

		w.kill9()
		rec.stop()
		w.start()

		replay := w.checkRestart(sid, cwd, "agent", rec.seen())
		w.checkInterrupted(sid, "p1", replay, []map[string]any{{"id": "tool-1", "title": "Run hanging tool", "kind": "execute"}})
		w.checkSyntheticToolResult(sid, "tool-1", replay)
		w.checkStatus(sid, wantStatus{reason: "agent_not_running", executor: "stopped"})
		w.checkPromptRestores(sid, cwd, "native_resume")
	})

	t.Run("kill -9 while a permission is pending", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, agentProfile, slowProfile)
		w.start()
		sid, cwd := w.createSession("agent")
		rec := w.record(sid)
		w.prompt(sid, "/permission", "p1")
		req := w.waitSeen(rec, "permission.requested", func(f frame) bool { return f.Event == "permission.requested" })
		reqID := req.JSON(t)["requestId"].(string)

		w.kill9()
		rec.stop()
		w.start()

		replay := w.checkRestart(sid, cwd, "agent", rec.seen())
		w.checkInterrupted(sid, "p1", replay, []map[string]any{{"id": "tool-1", "title": "Edit demo.txt", "kind": "edit"}})
		w.checkSyntheticToolResult(sid, "tool-1", replay)
		if p := list(w.transcript(sid), "pendingPermissions"); len(p) != 0 {
			t.Errorf("pending permissions: got %v, want none", p)
		}
		var resolved []map[string]any
		for _, f := range replay {
			if f.Event == "permission.resolved" {
				resolved = append(resolved, f.JSON(t))
			}
		}
		if len(resolved) != 1 || resolved[0]["requestId"] != reqID || resolved[0]["state"] != "expired" {
			t.Errorf("permission.resolved: got %v, want one for %s with state expired", resolved, reqID)
		}
		code, p := w.do("POST", "/session/"+sid+"/permission/"+reqID, map[string]any{"optionId": "allow_once"})
		if code != http.StatusConflict || p["state"] != "expired" {
			t.Errorf("answering the expired permission: got %d %v, want 409 with state expired", code, p)
		}
		w.checkStatus(sid, wantStatus{reason: "agent_not_running", executor: "stopped"})
		w.checkPromptRestores(sid, cwd, "native_resume")
	})

	t.Run("kill -9 during a restore", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, agentProfile, slowProfile)
		w.start()
		sid, cwd := w.createSession("agent")
		w.prompt(sid, "/echo first", "p1")
		w.waitTurn(sid, "p1")
		tok := w.resumeToken(sid)
		w.term()

		// The same profile now takes a while to start: kill -9 the daemon
		// while POST /resume waits for it.
		const delay = 20 * time.Second
		w.setProfiles(profile{id: "agent", flags: []string{"--startup-delay", delay.String()}}, slowProfile)
		w.start()
		rec := w.record(sid)
		go func() {
			req, _ := http.NewRequest("POST", "http://"+w.addr+"/session/"+sid+"/resume", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		w.waitFor("the restore to start", func() bool { return len(w.agentsIn(cwd)) == 1 })
		w.waitSeen(rec, "executor starting", func(f frame) bool {
			return f.Event == "session.executor_status" && f.JSON(t)["status"] == "starting"
		})
		orphan := w.agentsIn(cwd)[0]
		if st := w.status(sid); st["resumeReason"] != "agent_starting" {
			t.Fatalf("status before the crash: got %v, want agent_starting", st["resumeReason"])
		}

		w.kill9()
		rec.stop()
		killedAt := time.Now()
		w.setProfiles(agentProfile, slowProfile)
		w.start()

		// Start-up reconciliation stops the orphan of the interrupted
		// restore; it must not be left to finish its start on its own.
		w.waitFor("the orphaned agent of the interrupted restore to be stopped", func() bool {
			return !alive(orphan.pid) || time.Since(killedAt) > delay/2
		})
		if alive(orphan.pid) {
			t.Errorf("agent %v of the interrupted restore still runs %s after the restart (executor row pid %v)",
				orphan, time.Since(killedAt).Round(time.Second), w.executor(sid)["pid"])
			_ = syscall.Kill(orphan.pid, syscall.SIGKILL)
		}
		seen := rec.seen()
		replay := w.checkRestart(sid, cwd, "agent", seen)
		for _, f := range seen {
			if p := f.JSON(t); f.Event == "session.executor_status" && p["status"] == "starting" && p["pid"] != nil {
				t.Errorf("executor_status starting carries pid %v: the previous agent's, not the one starting", p["pid"])
			}
		}
		if n := countEvents(replay, "turn.interrupted"); n != 0 {
			t.Errorf("got %d turn.interrupted events, want 0 (no turn was running)", n)
		}
		if n := countEvents(replay, "session.resumed"); n != 0 {
			t.Errorf("got %d session.resumed events, want 0 (the restore never finished)", n)
		}
		if turn := w.turn(sid, "p1"); turn["state"] != "completed" {
			t.Errorf("turn: got %v, want still completed", turn["state"])
		}
		w.checkStatus(sid, wantStatus{reason: "agent_not_running", executor: "stopped"})
		if got := w.resumeToken(sid); got != tok {
			t.Errorf("resume token: got %q, want %q kept", got, tok)
		}
		code, st := w.do("POST", "/session/"+sid+"/resume", nil)
		if code != http.StatusOK || st["isAgentRunning"] != true {
			t.Fatalf("resume after the restart: got %d %v, want 200 with the agent running", code, st)
		}
		resumed := lastEvent(t, w.replay(sid), "session.resumed")
		if resumed == nil || resumed["strategy"] != "native_resume" || resumed["contextRestored"] != true {
			t.Errorf("session.resumed: got %v, want native_resume with context restored", resumed)
		}
	})

	t.Run("clean stop (SIGTERM) mid-turn", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, agentProfile, slowProfile)
		w.start()
		sid, cwd := w.createSession("agent")
		rec := w.record(sid)
		w.prompt(sid, "/sleep 600000", "p1")
		w.waitSeen(rec, "the agent's first chunk", func(f frame) bool {
			return f.Event == "message.added" && strings.Contains(f.Data, "sleeping 600000 ms")
		})

		w.term()
		rec.stop()
		w.start()

		replay := w.checkRestart(sid, cwd, "agent", rec.seen())
		w.checkInterrupted(sid, "p1", replay, nil)
		w.checkStatus(sid, wantStatus{reason: "agent_not_running", executor: "stopped"})
		w.checkPromptRestores(sid, cwd, "native_resume")
	})
}

// checkRestart runs the checks every case shares right after the restart
// and returns the session's log: the events the client saw before the
// crash are all there, unchanged and not renumbered; and nothing is sent
// to an agent until a prompt (no agent process, no change to the agent's
// state, no restore or turn event) while a client looks at the session.
func (w *world) checkRestart(sid, cwd, profile string, seen []frame) []frame {
	w.t.Helper()
	t := w.t
	if len(seen) == 0 {
		t.Fatal("the client saw no events before the crash")
	}
	w.waitReportSettled(sid)
	replay := w.replay(sid)
	if len(replay) < len(seen) {
		t.Fatalf("log after restart: got %d events, want at least the %d the client saw", len(replay), len(seen))
	}
	for i, f := range seen {
		if replay[i] != f {
			t.Fatalf("event %d: client saw %+v before the crash, log has %+v after it", i, f, replay[i])
		}
	}
	epoch, _, _ := strings.Cut(replay[0].ID, ":")
	for i, f := range replay {
		if e, _, _ := strings.Cut(f.ID, ":"); e != epoch || f.seq() != int64(i+1) {
			t.Fatalf("event %d: got id %s, want %s:%d (no gap, no renumbering)", i, f.ID, epoch, i+1)
		}
	}

	// Agents of the killed daemon die with it (stdin closed, or stopped
	// by reconciliation); none may be started again without a prompt.
	w.waitFor("the killed daemon's agents to be gone", func() bool { return len(w.agentsIn(cwd)) == 0 })
	state := snapshotDir(t, w.stateDir(profile))
	w.status(sid)
	w.transcript(sid)
	w.get("/session/" + sid)
	time.Sleep(time.Second) // observation window for a wrongly eager restore
	if ps := w.agentsIn(cwd); len(ps) != 0 {
		t.Errorf("agent processes started without a prompt: %v", ps)
	}
	if now := snapshotDir(t, w.stateDir(profile)); !mapsEqual(now, state) {
		t.Errorf("the agent's state changed without a prompt")
	}
	again := w.replay(sid)
	for _, f := range again[len(replay):] {
		t.Errorf("event after restart without a prompt: %s %s", f.Event, f.Data)
	}
	if st := w.status(sid); st["isAgentRunning"] != false || (st["executorStatus"] != "stopped" && st["executorStatus"] != "error") {
		t.Errorf("status: got running %v executor %v, want no agent", st["isAgentRunning"], st["executorStatus"])
	}
	// Reconciliation announced the executor it re-derived.
	if p := lastEvent(t, replay, "session.executor_status"); p == nil || p["status"] != "stopped" || p["error"] == nil {
		t.Errorf("last session.executor_status: got %v, want stopped with the reason", p)
	}
	// Every view of the session is what its log, repaired by the restart,
	// implies.
	w.checkOneTruth(sid)
	return replay
}

// checkInterrupted checks the turn's outcome and its turn.interrupted event.
func (w *world) checkInterrupted(sid, pid string, replay []frame, dangling []map[string]any) {
	w.t.Helper()
	t := w.t
	turn := w.turn(sid, pid)
	if turn["state"] != "interrupted" || turn["interruptReason"] != "daemon_restart" || turn["endedAt"] == nil {
		t.Errorf("turn %s: got state %v reason %v endedAt %v, want interrupted, daemon_restart, ended",
			pid, turn["state"], turn["interruptReason"], turn["endedAt"])
	}
	var evs []map[string]any
	for _, f := range replay {
		if f.Event == "turn.interrupted" {
			p := f.JSON(t)
			if p["promptId"] != pid {
				t.Errorf("turn.interrupted for %v, want %s", p["promptId"], pid)
			}
			evs = append(evs, p)
		}
	}
	if len(evs) != 1 {
		t.Fatalf("got %d turn.interrupted events, want 1", len(evs))
	}
	if evs[0]["reason"] != "daemon_restart" {
		t.Errorf("turn.interrupted reason: got %v, want daemon_restart", evs[0]["reason"])
	}
	got, _ := json.Marshal(evs[0]["danglingToolCalls"])
	if dangling == nil {
		dangling = []map[string]any{}
	}
	want, _ := json.Marshal(dangling)
	if string(got) != string(want) {
		t.Errorf("danglingToolCalls: got %s, want %s", got, want)
	}
	if p := lastEvent(t, replay, "session.state_changed"); p == nil || p["state"] != "WAITING_FOR_INPUT" {
		t.Errorf("last session.state_changed: got %v, want WAITING_FOR_INPUT", p)
	}
	for _, typ := range []string{"turn.completed", "turn.failed", "turn.cancelled"} {
		if n := countEvents(replay, typ); n != 0 {
			t.Errorf("got %d %s events, want 0", n, typ)
		}
	}
}

// checkSyntheticToolResult checks the failed, interrupted tool call in the
// transcript and its durable tool_call.updated event.
func (w *world) checkSyntheticToolResult(sid, toolCallID string, replay []frame) {
	w.t.Helper()
	t := w.t
	var call map[string]any
	for _, c := range list(w.transcript(sid), "toolCalls") {
		if c["id"] == toolCallID {
			call = c
		}
	}
	if call == nil {
		t.Fatalf("no tool call %s in the transcript", toolCallID)
	}
	content, _ := json.Marshal(call["content"])
	if call["status"] != "failed" || call["interrupted"] != true || !strings.Contains(string(content), syntheticToolResult) {
		t.Errorf("tool call: got status %v interrupted %v content %s, want failed, interrupted, %q",
			call["status"], call["interrupted"], content, syntheticToolResult)
	}
	var ev map[string]any
	for _, f := range replay {
		if f.Event == "tool_call.updated" {
			if p := f.JSON(t); p["toolCallId"] == toolCallID && p["interrupted"] == true {
				ev = p
			}
		}
	}
	if ev == nil {
		t.Fatalf("no tool_call.updated event flagged interrupted for %s", toolCallID)
	}
	evContent, _ := json.Marshal(ev["content"])
	if ev["status"] != "failed" || !strings.Contains(string(evContent), syntheticToolResult) {
		t.Errorf("tool_call.updated: got %v, want failed with the synthetic result", ev)
	}
}

type wantStatus struct {
	reason, executor string
}

// checkStatus checks GET /session/{id}/status after a restart, and that
// the task is back in REVIEW.
func (w *world) checkStatus(sid string, want wantStatus) {
	w.t.Helper()
	t := w.t
	st := w.status(sid)
	checks := []struct {
		field string
		want  any
	}{
		{"sessionId", sid}, {"state", "WAITING_FOR_INPUT"}, {"isAgentRunning", false}, {"isResumable", true},
		{"needsResume", true}, {"resumeReason", want.reason}, {"executorStatus", want.executor}, {"runtime", "standalone"},
		{"contextLost", false},
	}
	for _, c := range checks {
		if st[c.field] != c.want {
			t.Errorf("status %s: got %v, want %v", c.field, st[c.field], c.want)
		}
	}
	if msg, _ := st["errorMessage"].(string); !strings.Contains(msg, "restarted") {
		t.Errorf("status errorMessage: got %q, want why the agent stopped (tetherd restarted)", msg)
	}
	if st["taskId"] == nil || st["agentProfileId"] == nil {
		t.Errorf("status: got %v, want taskId and agentProfileId", st)
	}
	task := w.get("/tasks/" + st["taskId"].(string))
	if task["state"] != "REVIEW" {
		t.Errorf("task state: got %v, want REVIEW", task["state"])
	}
}

// checkPromptRestores sends a prompt: the agent is restored first (with
// strategy, when given) and the turn completes.
func (w *world) checkPromptRestores(sid, cwd, strategy string) {
	w.t.Helper()
	t := w.t
	w.prompt(sid, "/echo after the restart", "after")
	if turn := w.waitTurn(sid, "after"); turn["state"] != "completed" {
		t.Fatalf("prompt after the restart: got %v, want completed", turn)
	}
	if strategy != "" {
		if p := lastEvent(t, w.replay(sid), "session.resumed"); p == nil || p["strategy"] != strategy {
			t.Errorf("session.resumed: got %v, want strategy %s", p, strategy)
		}
	}
	if n := len(w.agentsIn(cwd)); n != 1 {
		t.Errorf("got %d agent processes after the prompt, want 1 (processes of this test: %v)", n, w.processes(""))
	}
}

func (w *world) executor(sid string) map[string]any {
	w.t.Helper()
	ex, _ := w.get("/session/" + sid)["executor"].(map[string]any)
	return ex
}

func (w *world) resumeToken(sid string) string {
	w.t.Helper()
	tok, _ := w.executor(sid)["resumeToken"].(string)
	return tok
}

func countEvents(fs []frame, typ string) int {
	n := 0
	for _, f := range fs {
		if f.Event == typ {
			n++
		}
	}
	return n
}

func lastEvent(t *testing.T, fs []frame, typ string) map[string]any {
	t.Helper()
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].Event == typ {
			return fs[i].JSON(t)
		}
	}
	return nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestEagerRestartRestoresWithoutModelRequest: with --resume-on-start
// eager, sessions come back after kill -9 without any request, each with
// one agent process, and nothing is prompted.
func TestEagerRestartRestoresWithoutModelRequest(t *testing.T) {
	t.Parallel()
	w := newWorld(t, agentProfile, slowProfile)
	w.start()
	type sess struct{ id, cwd string }
	var ss []sess
	for i := 0; i < 3; i++ {
		sid, cwd := w.createSession("agent")
		w.prompt(sid, "/echo hello "+strconv.Itoa(i), "p1")
		w.waitTurn(sid, "p1")
		ss = append(ss, sess{sid, cwd})
	}
	w.kill9()
	for _, s := range ss {
		w.waitFor("the killed daemon's agents to be gone", func() bool { return len(w.agentsIn(s.cwd)) == 0 })
	}
	state := snapshotDir(t, w.stateDir("agent"))
	w.start("--resume-on-start", "eager")
	for _, s := range ss {
		w.waitFor("the eager restore of "+s.id, func() bool { return w.status(s.id)["isAgentRunning"] == true })
		replay := w.replay(s.id)
		if p := lastEvent(t, replay, "session.resumed"); p == nil || p["strategy"] != "native_resume" {
			t.Errorf("session %s: got session.resumed %v, want native_resume", s.id, p)
		}
		if n := countEvents(replay, "turn.started"); n != 1 {
			t.Errorf("session %s: got %d turn.started events, want 1 (nothing prompted by the restore)", s.id, n)
		}
		if ps := w.agentsIn(s.cwd); len(ps) != 1 {
			t.Errorf("session %s: got agent processes %v, want 1", s.id, ps)
		}
	}
	if !mapsEqual(snapshotDir(t, w.stateDir("agent")), state) {
		t.Errorf("the agents' state changed: the eager restore sent something beyond session/resume")
	}
}

// TestConcurrentResumesStartOneAgentProcess: eight simultaneous POST
// /resume after a crash share one restore and one agent process.
func TestConcurrentResumesStartOneAgentProcess(t *testing.T) {
	t.Parallel()
	w := newWorld(t, agentProfile, slowProfile)
	w.start()
	sid, cwd := w.createSession("agent")
	w.prompt(sid, "/echo hello", "p1")
	w.waitTurn(sid, "p1")
	w.kill9()
	// A slow start makes sure the requests overlap.
	w.setProfiles(profile{id: "agent", flags: []string{"--startup-delay", "1s"}}, slowProfile)
	w.start()
	w.waitFor("the killed daemon's agents to be gone", func() bool { return len(w.agentsIn(cwd)) == 0 })
	head := len(w.replay(sid))

	const n = 8
	var wg sync.WaitGroup
	codes := make([]int, n)
	running := make([]any, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", "http://"+w.addr+"/session/"+sid+"/resume", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var m map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&m)
			codes[i], running[i] = resp.StatusCode, m["isAgentRunning"]
		}()
	}
	close(start)
	wg.Wait()
	for i := range codes {
		if codes[i] != http.StatusOK || running[i] != true {
			t.Errorf("request %d: got %d running %v, want 200 with the agent running", i, codes[i], running[i])
		}
	}
	after := w.replay(sid)[head:]
	starting := 0
	for _, f := range after {
		if f.Event == "session.executor_status" && f.JSON(t)["status"] == "starting" {
			starting++
		}
	}
	if starting != 1 || countEvents(after, "session.resumed") != 1 {
		t.Errorf("got %d executor starting and %d session.resumed events, want 1 and 1", starting, countEvents(after, "session.resumed"))
	}
	ps := w.agentsIn(cwd)
	if len(ps) != 1 {
		t.Fatalf("got agent processes %v, want exactly 1", ps)
	}
	// The executor's pid is the agent's sandbox (bwrap), whose tree the
	// agent is in.
	if pid, _ := w.executor(sid)["pid"].(float64); !descends(ps[0].pid, int(pid)) {
		t.Errorf("executor pid: got %v, want the agent %d or an ancestor of it", pid, ps[0].pid)
	}
}
