package crash_test

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// TestCrashHoldsTheQueue (issue 28, item 1): a live agent, or the executor
// host it runs in, killed with SIGKILL mid-turn while prompts wait behind
// that turn. The queue is held exactly as after a daemon restart: the
// queued prompts stay queued and reach no agent by themselves, the plan
// says interrupted_turn with the queue held, /continue is accepted, and
// the continuation runs first, then the queued prompts in order. Before
// the fix, the first queued prompt ran at once on a fresh agent (never
// told its task was cut) and /continue answered 409 nothing_to_continue.
func TestCrashHoldsTheQueue(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	cases := []struct {
		name     string
		executor string
		kill     func(w *world, cwd string)
		reason   string
	}{
		{"standalone agent killed", "standalone", killAgentIn, "agent_exited"},
		{"detached agent killed", "detached", killAgentIn, "agent_exited"},
		{"detached host killed", "detached", func(w *world, _ string) {
			w.t.Helper()
			if err := syscall.Kill(w.detachedHostPID(), syscall.SIGKILL); err != nil {
				w.t.Fatal(err)
			}
		}, "executor_lost"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := hostedWorld(t)
			w.start()
			sid, cwd := w.createSessionOn("demo", tc.executor)
			fol := w.follow(sid)
			w.prompt(sid, "/hang", "p1")
			w.waitSeen(fol, "p1's first chunk", isChunkOf(t, "p1"))
			w.prompt(sid, "/echo first queued", "q1")
			w.prompt(sid, "/echo second queued", "q2")
			for _, q := range []string{"q1", "q2"} {
				if st := w.turn(sid, q)["state"]; st != "queued" {
					t.Fatalf("turn %s before the crash: got %v, want queued", q, st)
				}
			}

			tc.kill(w, cwd)
			if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" || turn["interruptReason"] != tc.reason {
				t.Fatalf("p1: got state %v reason %v, want interrupted, %s", turn["state"], turn["interruptReason"], tc.reason)
			}
			// The hold is written before the interruption: once p1 reads
			// interrupted, the plan shows it.
			rec := w.sessionContext(sid)["recovery"].(map[string]any)
			if rec["kind"] != "interrupted_turn" && rec["kind"] != "interrupted_prompt" || rec["canContinue"] != true ||
				rec["promptId"] != "p1" || rec["queueHeld"] != true {
				t.Fatalf("recovery after the crash: got %v, want p1 interrupted, continuable, with the queue held", rec)
			}
			// tetherd did not restart: the notice must not say it did.
			if notice := rec["notice"].(string); !strings.Contains(notice, "2 prompts queued behind the interrupted turn are waiting") {
				t.Errorf("recovery notice after the crash: got %q, want it to say 2 prompts queued behind the interrupted turn are waiting", notice)
			}
			for _, q := range []string{"q1", "q2"} {
				if st := w.turn(sid, q)["state"]; st != "queued" {
					t.Errorf("turn %s after the crash: got %v, want still queued (held)", q, st)
				}
			}
			if agents := w.agentsIn(cwd); len(agents) != 0 {
				t.Errorf("agents running after the crash with a held queue: %v, want none (nothing asked for one)", agents)
			}
			// The held queue, the plan and the status are the log's.
			w.checkOneTruth(sid)

			code, m := w.do(http.MethodPost, "/session/"+sid+"/continue", map[string]any{"promptId": "c1"})
			if code != http.StatusAccepted {
				t.Fatalf("continue: got %d %v, want 202", code, m)
			}
			for _, id := range []string{"c1", "q1", "q2"} {
				if turn := w.waitTurn(sid, id); turn["state"] != "completed" {
					t.Fatalf("turn %s: got %v, want completed", id, turn)
				}
			}
			// The stored log: c1 started before q1, q1 before q2, each once.
			var started []string
			for _, f := range w.replay(sid) {
				if f.Event == "turn.started" {
					started = append(started, f.JSON(t)["promptId"].(string))
				}
			}
			if got, want := strings.Join(started, ","), "p1,c1,q1,q2"; got != want {
				t.Errorf("turn.started order: got %s, want %s", got, want)
			}
			said := w.agentText(sid)
			if !strings.HasPrefix(said["c1"], continuationAnswer) {
				t.Errorf("continuation: agent said %q, want it asked to continue", said["c1"])
			}
			if said["q1"] != "first queued" || said["q2"] != "second queued" {
				t.Errorf("queued turns after the continuation: got %q, %q", said["q1"], said["q2"])
			}
			if rec := w.sessionContext(sid)["recovery"].(map[string]any); rec["kind"] != "clean" || rec["queueHeld"] == true {
				t.Errorf("recovery at the end: got %v, want clean", rec)
			}
			w.checkOneTruth(sid)
		})
	}
}

// killAgentIn kills the demo agent running in cwd with SIGKILL.
func killAgentIn(w *world, cwd string) {
	w.t.Helper()
	agents := w.agentsIn(cwd)
	if len(agents) != 1 {
		w.t.Fatalf("agents in %s: got %v, want one", cwd, agents)
	}
	if err := syscall.Kill(agents[0].pid, syscall.SIGKILL); err != nil {
		w.t.Fatal(err)
	}
}

// TestAgentLosesItsSession (issue 28, item 2): the agent answers a prompt,
// mid-tool, that it lost the session while its process lives on (the
// demo agent's /lose-session, shaped like claude-agent-acp when its Claude
// Code process dies), with a prompt queued behind. The turn is
// interrupted (agent_session_lost) with its tool call failed, the queue
// is held, the agent retired; continue restores the session in a new
// agent (the demo agent resumes it from its state dir), then the queued
// prompt runs. Before the fix the turn ended failed, the tool call stayed
// in progress, the queued prompt ran into "unknown session" and so did
// every later one.
func TestAgentLosesItsSession(t *testing.T) {
	for _, executor := range []string{"standalone", "detached"} {
		t.Run(executor, func(t *testing.T) {
			w := hostedWorld(t)
			w.start()
			sid, cwd := w.createSessionOn("demo", executor)
			w.prompt(sid, "/echo warm", "p0")
			w.waitTurn(sid, "p0")
			first := w.status(sid)["agentExecutionId"]
			w.prompt(sid, "/lose-session", "p1")
			w.prompt(sid, "/echo queued", "q1")
			turn := w.waitTurn(sid, "p1")
			if turn["state"] != "interrupted" || turn["interruptReason"] != "agent_session_lost" {
				t.Fatalf("p1: got state %v reason %v error %v, want interrupted, agent_session_lost", turn["state"], turn["interruptReason"], turn["error"])
			}
			if _, has := turn["exitCode"]; has {
				t.Errorf("p1: got exitCode %v, want none (the agent did not exit)", turn["exitCode"])
			}
			tr := w.transcript(sid)
			calls := list(tr, "toolCalls")
			if len(calls) != 1 || calls[0]["status"] != "failed" || calls[0]["interrupted"] != true {
				t.Errorf("tool calls: got %v, want one failed, interrupted", calls)
			}
			if !hasSystemMessage(tr, "lost its session") {
				t.Errorf("no system message saying the agent lost its session in %v", list(tr, "messages"))
			}
			rec := w.sessionContext(sid)["recovery"].(map[string]any)
			if rec["kind"] != "interrupted_turn" || rec["canContinue"] != true || rec["queueHeld"] != true || rec["interruptReason"] != "agent_session_lost" {
				t.Fatalf("recovery: got %v, want interrupted_turn, continuable, queue held", rec)
			}
			w.waitFor("the agent that lost the session to stop", func() bool { return len(w.agentsIn(cwd)) == 0 })
			if st := w.turn(sid, "q1")["state"]; st != "queued" {
				t.Errorf("q1 after the interruption: got %v, want queued", st)
			}
			w.checkOneTruth(sid)

			code, m := w.do(http.MethodPost, "/session/"+sid+"/continue", map[string]any{"promptId": "c1"})
			if code != http.StatusAccepted {
				t.Fatalf("continue: got %d %v, want 202", code, m)
			}
			for _, id := range []string{"c1", "q1"} {
				if turn := w.waitTurn(sid, id); turn["state"] != "completed" {
					t.Fatalf("turn %s: got %v, want completed", id, turn)
				}
			}
			if st := w.status(sid); st["agentExecutionId"] == first {
				t.Errorf("the continuation ran on the agent that lost the session (%v)", first)
			}
			var strategies []any
			for _, f := range w.replay(sid) {
				if f.Event == "session.resumed" {
					strategies = append(strategies, f.JSON(t)["strategy"])
				}
			}
			if len(strategies) != 1 || strategies[0] != "native_resume" {
				t.Errorf("session.resumed: got strategies %v, want one native_resume", strategies)
			}
			if said := w.agentText(sid)["q1"]; said != "queued" {
				t.Errorf("q1: agent said %q, want %q", said, "queued")
			}
			w.checkOneTruth(sid)
		})
	}
}

// TestReattachKeepsMessagesApart (issue 28, item 4): tetherd is killed
// between two messages of one turn on the detached host, told apart only
// by their ACP messageId; the second arrives while tetherd is down. After
// the re-attach the transcript and the log hold two messages, as without a
// restart. Before the fix the daemon forgot the first message's messageId
// and glued the second onto it ("first messagesecond message").
func TestReattachKeepsMessagesApart(t *testing.T) {
	w := hostedWorld(t)
	w.start()
	sid, _ := w.createSessionOn("demo", "detached")
	fol := w.follow(sid)
	w.prompt(sid, "/message-ids 1500", "p1")
	w.waitSeen(fol, "the first message's last chunk", func(f frame) bool {
		p := f.JSON(t)
		return f.Event == "message.chunk" && p["promptId"] == "p1" && p["text"] == "message"
	})
	w.kill9()
	w.start()
	if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
		t.Fatalf("p1: got %v, want completed", turn)
	}
	r := w.agentReplies(sid)["p1"]
	if r.messages != 2 || r.text != "first messagesecond message" {
		t.Errorf("p1's agent messages: got %d reading %q, want 2 (first message, second message)", r.messages, r.text)
	}
	var added []string
	for _, f := range w.replay(sid) {
		if p := f.JSON(t); f.Event == "message.added" && p["role"] == "agent" {
			added = append(added, p["text"].(string))
			if id, _ := p["agentMessageId"].(string); id == "" {
				t.Errorf("message.added %s carries no agentMessageId", f.Data)
			}
		}
	}
	if len(added) != 2 || added[0] != "first " || added[1] != "second " {
		t.Errorf("agent message.added events: got %q, want the first and the second message's first chunks", added)
	}
	w.checkOneTruth(sid)
}
