package realagents_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// agentByID is the real agent of the suite with that id.
func agentByID(t *testing.T, id string) agent {
	t.Helper()
	for _, a := range agents {
		if a.id == id {
			return a
		}
	}
	t.Fatalf("no real agent %q in the suite", id)
	return agent{}
}

// TestHandoffBetweenAgents hands a session from one real agent to the
// other (claude → qwen, qwen → claude), both against the scripted model:
// the new agent's first model call holds the transcript (the resume
// context, with the first agent's question and answer) exactly once,
// the calls after it do not, and the new session works in the same
// directory.
func TestHandoffBetweenAgents(t *testing.T) {
	const first = "Noted: the code word is heron."
	const second = "FINAL: the word was heron."
	for _, pair := range [][2]string{{"claude", "qwen"}, {"qwen", "claude"}} {
		t.Run(pair[0]+"_to_"+pair[1], func(t *testing.T) {
			t.Parallel()
			from, to := agentByID(t, pair[0]), agentByID(t, pair[1])
			w := prepareWorld(t, from, modelserver.Start(t, modelserver.Say(first)))
			w.writeProfiles(from.command(t), to)
			w.start()
			t.Cleanup(w.stop)
			sid := w.createSession()
			w.prompt(sid, "Remember the code word heron.", "p1")
			if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
				t.Fatalf("first turn: got %v, want completed", turn["state"])
			}
			code, h := w.do(http.MethodPost, "/session/"+sid+"/handoff", map[string]any{"agentProfileId": to.id})
			if code != http.StatusCreated {
				t.Fatalf("hand-off: got %d %v", code, h)
			}
			hid := h["id"].(string)
			if h["cwd"] != w.cwd || h["agentProfileId"] != to.id {
				t.Errorf("hand-off: got cwd %v agent %v, want %s and %s", h["cwd"], h["agentProfileId"], w.cwd, to.id)
			}
			before := len(w.model.Requests())
			w.model.SetScript(modelserver.Say(second))
			w.prompt(hid, "What was the code word?", "h1")
			if turn := w.waitTurn(hid, "h1"); turn["state"] != "completed" {
				t.Fatalf("the new agent's first turn: got %v, want completed: %v", turn["state"], turn)
			}
			w.prompt(hid, "And now?", "h2")
			if turn := w.waitTurn(hid, "h2"); turn["state"] != "completed" {
				t.Fatalf("the new agent's second turn: got %v, want completed", turn["state"])
			}
			if got := agentText(w.transcript(hid), "h1"); !strings.Contains(got, second) {
				t.Errorf("the new agent's reply: got %q, want %q", got, second)
			}
			// The new agent's calls: the briefing once, in the first.
			var briefed, calls int
			for _, r := range w.model.Requests()[before:] {
				if len(r.Tools) == 0 || r.API != agentAPI(to) {
					continue
				}
				calls++
				last := r.LastUser().Text()
				if strings.Contains(last, "RESUME CONTEXT FOR CONTINUING TASK") {
					briefed++
					for _, want := range []string{"Remember the code word heron.", first, "What was the code word?"} {
						if !strings.Contains(last, want) {
							t.Errorf("the briefing: want it to hold %q, got %q", want, last)
						}
					}
				}
			}
			if calls < 2 || briefed != 1 {
				t.Errorf("the new agent's model calls: %d, %d of them briefed; want at least 2, exactly 1 briefed", calls, briefed)
			}
		})
	}
}

// agentAPI is the model API the agent speaks.
func agentAPI(a agent) modelserver.API {
	if a.id == "claude" {
		return modelserver.Anthropic
	}
	return modelserver.OpenAI
}
