package realagents_test

import (
	"strings"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// TestRemoteLongCutKeepsLateOutput (issue 28, item 5, with real agents):
// the link to the remote host is cut while the model streams a reply,
// for longer than --host-lost-after: the turn is interrupted
// (executor_lost). The model, which the host still reaches, finishes the
// reply meanwhile. When the link is back, what the agent wrote on the host
// is kept as the interrupted turn's late output: the stored transcript
// holds the whole reply once, after a system message saying it is late
// output; continue then runs on a new agent, and the model sees the
// continuation.
func TestRemoteLongCutKeepsLateOutput(t *testing.T) {
	const reply = "This reply goes on while the link to the host is cut, and all of it is kept: LATE-END."
	forEachAgentOn(t, []string{remote}, func(t *testing.T, a agent, _ string) {
		gate := modelserver.NewGate()
		t.Cleanup(gate.Release)
		w := newWorldOn(t, a, remote, modelserver.Stall(reply, 3, gate), "--host-lost-after", "2s")
		sid := w.createSession()
		w.prompt(sid, "Explain it at length.", "p1")
		waitStalled(t, gate)
		w.far.ns.SetLink(false)
		w.waitFor("the host to be lost", func() bool { return w.hostState("far") == "lost" })
		if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" || turn["interruptReason"] != "executor_lost" {
			t.Fatalf("p1 during the cut: got %v (%v), want interrupted by executor_lost", turn["state"], turn["interruptReason"])
		}
		before := len(mainRequests(w.model))
		gate.Release()
		// The host stops the agent once the link is back: let it finish
		// first, its last words in the host's outbox.
		w.waitFor("the agent to finish its reply on the host", func() bool { return w.far.holds("LATE-END.") })
		w.model.SetScript(modelserver.Say("FINAL: picked up."))
		w.far.ns.SetLink(true)
		w.waitFor("the host to be connected again", func() bool { return w.hostState("far") == "connected" })
		w.waitFor("the late output", func() bool { return agentText(w.transcript(sid), "p1") == reply })
		notice, last := -1, -1
		for i, m := range list(w.transcript(sid), "messages") {
			switch {
			case m["promptId"] != "p1":
			case m["role"] == "system" && strings.HasPrefix(m["text"].(string), "Late output"):
				notice = i
			case m["role"] == "agent":
				last = i
			}
		}
		if notice < 0 || notice > last {
			t.Errorf("the stored transcript: late output notice at %d, last agent message of p1 at %d; want the notice before the late text", notice, last)
		}
		var logged strings.Builder
		for _, e := range w.log(sid) {
			if (e.Type == "message.added" || e.Type == "message.chunk") && e.Data["promptId"] == "p1" && e.Data["role"] == "agent" {
				logged.WriteString(e.Data["text"].(string))
			}
		}
		if logged.String() != reply {
			t.Errorf("the log's agent text of p1: got %q, want the reply once: %q", logged.String(), reply)
		}
		w.continueTurn(sid, "c1")
		if asked := askedSince(w.model, before, nil); len(asked) != 1 || asked[0] != "continuation" {
			t.Errorf("model requests after the cut: got %v, want the continuation alone", asked)
		}
		if got := agentText(w.transcript(sid), "p1"); got != reply {
			t.Errorf("p1's text after the continuation: got %q, want %q", got, reply)
		}
	})
}
