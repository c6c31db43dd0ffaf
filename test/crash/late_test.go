package crash_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRemoteLongCutKeepsLateOutput (issue 28, item 5): a remote host's
// link is cut mid-turn for longer than --host-lost-after. The turn is
// interrupted (executor_lost) while the agent goes on on the host and
// finishes its reply there. When the link returns, what the host recorded
// is kept: the interrupted turn's transcript and log hold every chunk of
// the reply once, in order, after a system message that says it is late
// output; the agent is then stopped, and continue runs a new one. Before
// the fix the agent was stopped and its outbox dropped: the transcript
// kept only what arrived before the cut.
func TestRemoteLongCutKeepsLateOutput(t *testing.T) {
	const chunks = 120
	ns := newNetns(t)
	w := newWorld(t, profile{id: "demo"})
	far := w.newRemoteHost("far", net.JoinHostPort(ns.IP, "7778"), ns)
	far.start()
	w.setHosts(far.pinned())
	w.start(append([]string{"--host-lost-after", "2s"}, pingFlags...)...)
	w.waitHost("far", "connected", hostState("connected"))

	sid, _ := w.createSessionOn("demo", "far")
	fol := w.follow(sid)
	// 120 chunks, 10 at a time, 250 ms apart: about 3 s, most of it
	// during the cut.
	w.prompt(sid, fmt.Sprintf("/stream %d 10 250", chunks), "p1")
	w.waitSeen(fol, "the turn's first chunk", isChunkOf(t, "p1"))
	ns.SetLink(false)
	w.waitHost("far", "lost", hostState("lost"))
	if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" || turn["interruptReason"] != "executor_lost" {
		t.Fatalf("p1 during the cut: got %v (%v), want interrupted by executor_lost", turn["state"], turn["interruptReason"])
	}
	before := w.agentText(sid)["p1"]
	if strings.Count(before, "chunk ") >= chunks {
		t.Fatalf("the whole reply arrived before the cut (%q): the cut must land mid-turn", tail(before))
	}
	// The agent finishes on the host meanwhile (its outbox keeps it).
	time.Sleep(4 * time.Second)
	ns.SetLink(true)
	w.waitHost("far", "connected again", hostState("connected"))

	var want strings.Builder
	for i := 1; i <= chunks; i++ {
		fmt.Fprintf(&want, "chunk %d\n", i)
	}
	w.waitFor("the late output", func() bool { return w.agentText(sid)["p1"] == want.String() })
	if turn := w.turn(sid, "p1"); turn["state"] != "interrupted" {
		t.Errorf("p1 after the late output: got %v, want still interrupted", turn["state"])
	}
	tr := w.transcript(sid)
	if !hasSystemMessage(tr, "Late output") {
		t.Errorf("no system message opening the late output in %v", list(tr, "messages"))
	}
	// In the log too, each chunk once: the text the log's events add up to.
	var logged strings.Builder
	for _, f := range w.replay(sid) {
		if p := f.JSON(t); (f.Event == "message.added" || f.Event == "message.chunk") && p["promptId"] == "p1" && p["role"] == "agent" {
			logged.WriteString(p["text"].(string))
		}
	}
	if logged.String() != want.String() {
		t.Errorf("the log's agent text of p1: got %d bytes ending %q, want the %d chunks once each", logged.Len(), tail(logged.String()), chunks)
	}

	// The lost agent is stopped; continue starts a new one on the host.
	code, m := w.do(http.MethodPost, "/session/"+sid+"/continue", map[string]any{"promptId": "c1"})
	if code != http.StatusAccepted {
		t.Fatalf("continue: got %d %v, want 202", code, m)
	}
	if turn := w.waitTurn(sid, "c1"); turn["state"] != "completed" {
		t.Fatalf("continuation: got %v, want completed", turn)
	}
	if got := w.agentText(sid)["p1"]; got != want.String() {
		t.Errorf("p1's text changed after the continuation: %q", tail(got))
	}
}
