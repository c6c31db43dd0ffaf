package realagents_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// TestQueuedBehindStallSurviveKill9 (issue 11 item 2.1): two prompts queued
// behind a turn the model stalls, kill -9 of tetherd, restart, continue.
// The model must see the continuation, then each queued prompt exactly
// once, in order; nothing before the user continued.
func TestQueuedBehindStallSurviveKill9(t *testing.T) {
	const one, two = "QUEUED-ONE: please say one.", "QUEUED-TWO: please say two."
	forEachAgent(t, func(t *testing.T, a agent) {
		gate := modelserver.NewGate()
		t.Cleanup(gate.Release)
		w := newWorld(t, a, modelserver.Stall("Thinking about it, slowly and at length.", 3, gate))
		sid := w.createSession()
		w.prompt(sid, "Explain it slowly.", "p1")
		waitStalled(t, gate)
		w.prompt(sid, one, "q1")
		w.prompt(sid, two, "q2")
		w.kill9()
		w.model.SetScript(modelserver.Say("FINAL: done."))
		before := len(mainRequests(w.model))
		w.start()

		code, ctx := w.do("GET", "/session/"+sid+"/context", nil)
		rec, _ := ctx["recovery"].(map[string]any)
		if code != http.StatusOK || rec["promptId"] != "p1" || rec["canContinue"] != true ||
			!reflect.DeepEqual(rec["queuedPromptIds"], []any{"q1", "q2"}) {
			t.Fatalf("context after the restart: got %d %v, want p1 continuable with q1, q2 queued", code, rec)
		}
		if got := len(mainRequests(w.model)); got != before {
			t.Errorf("model requests after the restart, before continue: got %d more, want none", got-before)
		}
		if code, m := w.do("POST", "/session/"+sid+"/continue", map[string]any{"promptId": "c1"}); code != http.StatusAccepted {
			t.Fatalf("continue: got %d %v, want 202", code, m)
		}
		for _, pid := range []string{"c1", "q1", "q2"} {
			if turn := w.waitTurn(sid, pid); turn["state"] != "completed" {
				t.Fatalf("turn %s: got %v, want completed: %v", pid, turn["state"], turn)
			}
		}

		// What the model was asked after the restart, by the newest user
		// message of each main request: the continuation, then one, then two.
		asked := askedSince(w.model, before, map[string]string{one: "q1", two: "q2"})
		if want := []string{"continuation", "q1", "q2"}; !reflect.DeepEqual(asked, want) {
			t.Errorf("model requests after the restart: got %v, want %v", asked, want)
		}
		if _, ctx := w.do("GET", "/session/"+sid+"/context", nil); ctx["recovery"].(map[string]any)["kind"] != "clean" {
			t.Errorf("recovery once all ran: got %v, want clean", ctx["recovery"])
		}
	})
}

// askedSince names the main requests the model got after the first before,
// by the newest user message of each: the name of the marker it holds
// (marks: marker → name), else "continuation".
func askedSince(m *modelserver.Server, before int, marks map[string]string) []string {
	var asked []string
	for _, r := range mainRequests(m)[before:] {
		name := "continuation"
		for mark, n := range marks {
			if strings.Contains(r.LastUser().Text(), mark) {
				name = n
			}
		}
		asked = append(asked, name)
	}
	return asked
}
