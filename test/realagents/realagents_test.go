package realagents_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// forEachAgent runs scenario as a subtest on every real agent.
func forEachAgent(t *testing.T, scenario func(t *testing.T, a agent)) {
	for _, a := range agents {
		t.Run(a.id, func(t *testing.T) {
			t.Parallel()
			scenario(t, a)
		})
	}
}

// mainRequests are the model calls that offered tools: the agent's turn,
// not a side request such as a title.
func mainRequests(m *modelserver.Server) []modelserver.Request {
	var out []modelserver.Request
	for _, r := range m.Requests() {
		if len(r.Tools) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// TestChat: a prompt goes to the model, the scripted reply streams back
// over SSE and is the turn's agent message; the turn ends end_turn.
func TestChat(t *testing.T) {
	const reply = "Hello from the scripted model, streamed word by word."
	const promptText = "Please greet me (real-agent chat test)."
	forEachAgent(t, func(t *testing.T, a agent) {
		w := newWorld(t, a, modelserver.Say(reply))
		sid := w.createSession()
		events := w.follow(sid)
		w.prompt(sid, promptText, "p1")
		turn := w.waitTurn(sid, "p1")
		if turn["state"] != "completed" || turn["stopReason"] != "end_turn" {
			t.Fatalf("turn: got state %v stopReason %v, want completed end_turn: %v", turn["state"], turn["stopReason"], turn)
		}
		if got := agentText(w.transcript(sid), "p1"); got != reply {
			t.Errorf("agent message: got %q, want %q", got, reply)
		}
		w.waitFor("turn.completed on the live stream", func() bool { return events.count("turn.completed") > 0 })
		if n := events.count("message.chunk"); n < 2 {
			t.Errorf("message.chunk events on the live stream: got %d, want the reply streamed in several", n)
		}
		reqs := mainRequests(w.model)
		if len(reqs) == 0 {
			t.Fatalf("model saw no request with tools; all: %d", len(w.model.Requests()))
		}
		if got := reqs[len(reqs)-1].LastUser().Text(); !strings.Contains(got, promptText) {
			t.Errorf("model's last user message: got %q, want it to hold %q", got, promptText)
		}
	})
}

// TestReadTool: the model asks the agent's own read tool for a file in
// the session's cwd; the agent reads it (claude itself, qwen through the
// daemon's fs/read_text_file), the model sees its contents in the tool
// result and answers with the final text.
func TestReadTool(t *testing.T) {
	const contents = "The secret word is periwinkle-42.\n"
	const preface = "Let me read that file."
	const final = "FINAL: the file says periwinkle-42."
	forEachAgent(t, func(t *testing.T, a agent) {
		w := newWorld(t, a, nil)
		path := filepath.Join(w.cwd, "notes.txt")
		if err := os.WriteFile(path, []byte(contents), 0o644); err != nil {
			t.Fatal(err)
		}
		w.model.SetScript(modelserver.ReadFile(path, preface, final))
		sid := w.createSession()
		w.prompt(sid, "What does notes.txt say?", "p1")
		turn := w.waitTurn(sid, "p1")
		if turn["state"] != "completed" || turn["stopReason"] != "end_turn" {
			t.Fatalf("turn: got state %v stopReason %v, want completed end_turn: %v", turn["state"], turn["stopReason"], turn)
		}
		tr := w.transcript(sid)
		// Text before and after the tool call are two messages (the agent
		// sends a messageId for each), never glued into one.
		var texts []string
		for _, m := range list(tr, "messages") {
			if m["promptId"] == "p1" && m["role"] == "agent" {
				texts = append(texts, strings.TrimSpace(m["text"].(string)))
			}
		}
		if len(texts) != 2 || texts[0] != preface || texts[1] != final {
			t.Errorf("agent messages: got %q, want [%q %q]", texts, preface, final)
		}
		var calls []map[string]any
		for _, c := range list(tr, "toolCalls") {
			if c["promptId"] == "p1" {
				calls = append(calls, c)
			}
		}
		if len(calls) != 1 || calls[0]["status"] != "completed" {
			t.Errorf("tool calls of p1: got %v, want one completed", calls)
		}
		var seen bool
		for _, r := range w.model.Requests() {
			if res, ok := r.HasToolResult(modelserver.ReadCallID); ok && strings.Contains(res.Text, strings.TrimSpace(contents)) {
				seen = true
			}
		}
		if !seen {
			t.Errorf("the model never saw a tool result with %q", contents)
		}
	})
}

// TestCancelDuringStall: the model stalls mid-reply; a cancel through the
// API ends the turn cancelled, and the session takes the next prompt.
func TestCancelDuringStall(t *testing.T) {
	const after = "Back again after the cancel."
	forEachAgent(t, func(t *testing.T, a agent) {
		gate := modelserver.NewGate()
		w := newWorld(t, a, modelserver.Stall("Thinking about it slowly, word by word.", 2, gate))
		sid := w.createSession()
		events := w.follow(sid)
		w.prompt(sid, "Take your time.", "p1")
		waitStalled(t, gate)
		w.waitFor("the first words on the live stream", func() bool { return events.count("message.chunk") > 0 })
		if code, m := w.do("POST", "/session/"+sid+"/cancel", nil); code/100 != 2 {
			t.Fatalf("cancel: got %d, want 2xx: %v", code, m)
		}
		turn := w.waitTurn(sid, "p1")
		if turn["state"] != "cancelled" {
			t.Fatalf("turn: got state %v, want cancelled: %v", turn["state"], turn)
		}
		w.model.SetScript(modelserver.Say(after))
		w.prompt(sid, "Are you still there?", "p2")
		if turn := w.waitTurn(sid, "p2"); turn["state"] != "completed" {
			t.Fatalf("turn after the cancel: got state %v, want completed: %v", turn["state"], turn)
		}
		if got := agentText(w.transcript(sid), "p2"); got != after {
			t.Errorf("agent message after the cancel: got %q, want %q", got, after)
		}
		reqs := mainRequests(w.model)
		if got := reqs[len(reqs)-1].LastUser().Text(); !strings.Contains(got, "Are you still there?") {
			t.Errorf("model's last user message: got %q, want the second prompt", got)
		}
	})
}

// TestWritePermission: the model asks the agent's write tool for a file;
// the agent asks permission, which the test answers through the API. Once
// allowed the file is written; once rejected it is not; either way the
// model gets the tool's result and the turn ends with its final text.
func TestWritePermission(t *testing.T) {
	const content = "written by the agent\n"
	const preface = "I will write the file."
	const final = "FINAL: done with the file."
	cases := []struct {
		name, kind string // kind of the option the user picks
		written    bool
	}{
		{"allowed", "allow_once", true},
		{"rejected", "reject_once", false},
	}
	forEachAgent(t, func(t *testing.T, a agent) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				w := newWorld(t, a, nil)
				path := filepath.Join(w.cwd, "out.txt")
				w.model.SetScript(modelserver.WriteFile(path, content, preface, final))
				sid := w.createSession()
				w.prompt(sid, "Write out.txt please.", "p1")
				var req map[string]any
				w.waitFor("the agent's permission request", func() bool {
					if p := list(w.transcript(sid), "pendingPermissions"); len(p) == 1 {
						req = p[0]
					}
					return req != nil
				})
				option := ""
				for _, o := range list(req, "options") {
					if o["kind"] == tc.kind && option == "" {
						option, _ = o["optionId"].(string)
					}
				}
				if option == "" {
					t.Fatalf("no %s option in %v", tc.kind, req["options"])
				}
				if st, body := w.do("POST", "/session/"+sid+"/permission/"+req["id"].(string), map[string]any{"optionId": option}); st != http.StatusOK {
					t.Fatalf("answer: got %d %v, want 200", st, body)
				}
				turn := w.waitTurn(sid, "p1")
				if turn["state"] != "completed" {
					t.Fatalf("turn: got %v, want completed: %v", turn["state"], turn)
				}
				b, err := os.ReadFile(path)
				if got := err == nil && string(b) == content; got != tc.written {
					t.Errorf("file written with the content: got %v (%q, %v), want %v", got, b, err, tc.written)
				}
				seen := false
				for _, r := range w.model.Requests() {
					_, ok := r.HasToolResult(modelserver.WriteCallID)
					seen = seen || ok
				}
				if !seen {
					t.Error("the model never got the write tool's result")
				}
				if got := agentText(w.transcript(sid), "p1"); !strings.HasSuffix(strings.TrimSpace(got), final) {
					t.Errorf("agent text: got %q, want it to end with %q", got, final)
				}
			})
		}
	})
}

// TestKillDaemonMidReplyThenContinue: kill -9 of tetherd while the model
// is streaming; after the restart the turn is interrupted, the agent is
// restored natively (session/resume or session/load, never a new session),
// and one continue completes the work, the model told what the user saw.
func TestKillDaemonMidReplyThenContinue(t *testing.T) {
	const partial = "Here is the first part of the answer, then more words follow."
	const rest = "FINAL: continued after the restart."
	forEachAgent(t, func(t *testing.T, a agent) {
		gate := modelserver.NewGate()
		t.Cleanup(gate.Release)
		w := newWorld(t, a, modelserver.Stall(partial, 3, gate))
		sid := w.createSession()
		live := w.follow(sid)
		w.prompt(sid, "Explain it slowly.", "p1")
		waitStalled(t, gate)
		w.waitFor("the first words on the live stream", func() bool { return live.count("message.chunk") > 0 })
		w.kill9()
		w.model.SetScript(modelserver.Say(rest))
		w.start()

		if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" {
			t.Fatalf("turn after the restart: got %v, want interrupted", turn["state"])
		}
		w.continueTurn(sid, "c1")
		if got := agentText(w.transcript(sid), "c1"); !strings.Contains(got, rest) {
			t.Errorf("continuation's agent text: got %q, want %q", got, rest)
		}
		// The model learns what the user saw of the cut reply, whatever
		// the agent kept of it (Claude Code keeps "No response requested.").
		saw := agentText(w.transcript(sid), "p1")
		if reqs := mainRequests(w.model); saw == "" || !strings.Contains(reqs[len(reqs)-1].LastUser().Text(), saw) {
			t.Errorf("the model's last user turn: got %q, want it to quote the partial reply the user saw %q", reqs[len(reqs)-1].LastUser().Text(), saw)
		}
		var strategies []any
		for _, e := range w.log(sid) {
			if e.Type == "session.resumed" {
				strategies = append(strategies, e.Data["strategy"])
			}
		}
		if len(strategies) != 1 || (strategies[0] != "native_resume" && strategies[0] != "native_load") {
			t.Errorf("session.resumed strategies: got %v, want one native_resume or native_load", strategies)
		}
		if code, ctx := w.do("GET", "/session/"+sid+"/context", nil); code != http.StatusOK {
			t.Errorf("context: got %d", code)
		} else if rec, _ := ctx["recovery"].(map[string]any); rec["kind"] != "clean" {
			t.Errorf("recovery after the continuation: got %v, want clean", rec)
		}
	})
}

// TestKillAgentMidTurnThenContinue: kill -9 of the agent's process group
// while the model is streaming; the daemon notices the exit, the turn is
// interrupted, and one continue starts the agent again and completes.
func TestKillAgentMidTurnThenContinue(t *testing.T) {
	const partial = "Working on it, one word at a time, slowly."
	const rest = "FINAL: continued after the agent died."
	forEachAgent(t, func(t *testing.T, a agent) {
		gate := modelserver.NewGate()
		t.Cleanup(gate.Release)
		w := newWorld(t, a, modelserver.Stall(partial, 3, gate))
		sid := w.createSession()
		w.prompt(sid, "Do the slow thing.", "p1")
		waitStalled(t, gate)
		_, sess := w.do("GET", "/session/"+sid, nil)
		exec, _ := sess["executor"].(map[string]any)
		pid, _ := exec["pid"].(float64)
		if pid <= 1 {
			t.Fatalf("no agent pid in %v", exec)
		}
		// The agent leads its own process group: kill all of it, as an OOM
		// killer or a crash would.
		if err := syscall.Kill(-int(pid), syscall.SIGKILL); err != nil {
			t.Fatalf("kill agent group %d: %v", int(pid), err)
		}
		if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" {
			t.Fatalf("turn after the agent died: got %v, want interrupted", turn["state"])
		}
		w.model.SetScript(modelserver.Say(rest))
		w.continueTurn(sid, "c1")
		if got := agentText(w.transcript(sid), "c1"); !strings.Contains(got, rest) {
			t.Errorf("continuation's agent text: got %q, want %q", got, rest)
		}
		_, sess = w.do("GET", "/session/"+sid, nil)
		if exec, _ := sess["executor"].(map[string]any); exec["pid"] == pid {
			t.Errorf("the continuation ran on pid %v, the killed agent's", pid)
		}
	})
}

// TestWipedAgentStoreGetsHistoryInjection: the agent's own session store is
// wiped while tetherd is down, so the agent no longer knows the session;
// the daemon falls back to a new agent session and injects the history
// once, so the model still sees the earlier conversation.
func TestWipedAgentStoreGetsHistoryInjection(t *testing.T) {
	const first = "Noted: the code word is heron."
	const second = "FINAL: the word was heron."
	forEachAgent(t, func(t *testing.T, a agent) {
		w := newWorld(t, a, modelserver.Say(first))
		sid := w.createSession()
		w.prompt(sid, "Remember the code word heron.", "p1")
		if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
			t.Fatalf("first turn: got %v, want completed", turn["state"])
		}
		w.stop()
		if err := os.RemoveAll(w.home); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(w.home, 0o700); err != nil {
			t.Fatal(err)
		}
		w.model.SetScript(modelserver.Say(second))
		w.start()
		w.prompt(sid, "What was the code word?", "p2")
		if turn := w.waitTurn(sid, "p2"); turn["state"] != "completed" {
			t.Fatalf("turn after the wipe: got %v, want completed: %v", turn["state"], turn)
		}
		reqs := mainRequests(w.model)
		last := reqs[len(reqs)-1].LastUser().Text()
		for _, want := range []string{"RESUME CONTEXT FOR CONTINUING TASK", "Remember the code word heron.", first, "What was the code word?"} {
			if !strings.Contains(last, want) {
				t.Errorf("model's last user message: want it to hold %q, got %q", want, last)
			}
		}
		var resumed []map[string]any
		for _, e := range w.log(sid) {
			if e.Type == "session.resumed" {
				resumed = append(resumed, e.Data)
			}
		}
		if len(resumed) != 1 || resumed[0]["strategy"] != "history_injection" {
			t.Errorf("session.resumed: got %v, want one history_injection", resumed)
		}
		// Injected once: the next prompt goes to the agent as it is.
		w.prompt(sid, "And now?", "p3")
		if turn := w.waitTurn(sid, "p3"); turn["state"] != "completed" {
			t.Fatalf("third turn: got %v, want completed", turn["state"])
		}
		reqs = mainRequests(w.model)
		if last := reqs[len(reqs)-1].LastUser().Text(); strings.Contains(last, "RESUME CONTEXT") || !strings.Contains(last, "And now?") {
			t.Errorf("model's last user message after the injection: got %q, want the plain prompt", last)
		}
	})
}
