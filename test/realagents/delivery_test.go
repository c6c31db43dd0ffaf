package realagents_test

import (
	"strings"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// userTurnsWith counts the occurrences of s in the user turns of the
// model's request (text parts, so tool results do not count).
func userTurnsWith(r modelserver.Request, s string) int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "user" {
			n += strings.Count(m.Text(), s)
		}
	}
	return n
}

// TestKillDaemonBeforeFirstTokenThenContinue: kill -9 of tetherd after the
// prompt reached the agent (and the model) but before the first token.
// The agent already holds the prompt (claude-agent-acp persists it on
// receipt), so the continuation asks it to answer without repeating the
// request: the model's last request holds the prompt's text exactly once
// as a user turn.
func TestKillDaemonBeforeFirstTokenThenContinue(t *testing.T) {
	const promptText = "Summarize the release plan in one line (delivery test)."
	const rest = "FINAL: the plan in one line."
	forEachAgent(t, func(t *testing.T, a agent) {
		gate := modelserver.NewGate()
		t.Cleanup(gate.Release)
		w := newWorld(t, a, modelserver.Stall("never streamed", 0, gate))
		sid := w.createSession()
		w.prompt(sid, promptText, "p1")
		waitStalled(t, gate)
		w.waitFor("the prompt's delivery recorded", func() bool {
			_, turn := w.do("GET", "/session/"+sid+"/turns/p1", nil)
			return turn["deliveredAt"] != nil
		})
		w.kill9()
		w.model.SetScript(modelserver.Say(rest))
		w.start()

		if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" {
			t.Fatalf("turn after the restart: got %v, want interrupted", turn["state"])
		}
		before := len(mainRequests(w.model))
		m := w.continueTurn(sid, "c1")
		if rec, _ := m["interruption"].(map[string]any); rec["kind"] != "interrupted_prompt" || rec["promptDelivered"] != true {
			t.Errorf("interruption: got %v, want interrupted_prompt with promptDelivered", rec)
		}
		if got := agentText(w.transcript(sid), "c1"); !strings.Contains(got, rest) {
			t.Errorf("continuation's agent text: got %q, want %q", got, rest)
		}
		reqs := mainRequests(w.model)
		if len(reqs) <= before {
			t.Fatalf("the continuation reached no model request")
		}
		last := reqs[len(reqs)-1]
		if n := userTurnsWith(last, promptText); n != 1 {
			var users []string
			for _, m := range last.Messages {
				if m.Role == "user" {
					users = append(users, m.Text())
				}
			}
			t.Errorf("the prompt's text in the model's last request: got %d times as a user turn, want once; user turns: %q", n, users)
		}
	})
}
