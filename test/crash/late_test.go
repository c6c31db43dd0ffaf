package crash_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// lostAfterWorld is a world with the remote host "far" in a network
// namespace, which the daemon gives up on after a 2 s cut.
func lostAfterWorld(t *testing.T) (*world, *netns) {
	t.Helper()
	return netnsWorld(t, "--host-lost-after", "2s")
}

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
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	const chunks = 120
	w, ns := lostAfterWorld(t)
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

// TestRemoteLateOutputWithToolCalls (issue 28, item 5, tried from
// outside): the agent cut off on a remote host goes on running tools
// (/steps: each an execute tool call that takes a while, then a chunk),
// and is stopped in its last tool once the link is back. What it did is
// kept as the turn's late output, and the record agrees with itself:
//   - the transcript opens the late output with its system message, as
//     the log does, before the first late message;
//   - a late tool call the agent never finished (its last one, cut by the
//     stop) gets the synthetic failed result, as the interruption gives
//     the others, and is not left in progress in an ended turn;
//   - a tool call the interruption marked failed that the late output
//     shows completed is no longer named to the agent as failed: the
//     recovery plan's dangling calls are the last step alone.
//
// Before the fix the transcript put the late messages before the notice,
// the last step stayed in_progress for good while the plan said it was
// recorded as failed, and the step cut in flight stayed dangling though
// it had completed.
func TestRemoteLateOutputWithToolCalls(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	const steps = 6
	w, ns := lostAfterWorld(t)
	sid, _ := w.createSessionOn("demo", "far")
	fol := w.follow(sid)
	w.prompt(sid, fmt.Sprintf("/steps %d 400 hang", steps), "p1")
	w.waitSeen(fol, "step 1's chunk", func(f frame) bool {
		p := f.JSON(t)
		return (f.Event == "message.added" || f.Event == "message.chunk") && p["promptId"] == "p1" && p["text"] == "step 1\n"
	})
	// Step 2's tool call is in flight: the cut lands inside it.
	ns.SetLink(false)
	w.waitHost("far", "lost", hostState("lost"))
	if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" || turn["interruptReason"] != "executor_lost" {
		t.Fatalf("p1 during the cut: got %v (%v), want interrupted by executor_lost", turn["state"], turn["interruptReason"])
	}
	// Every step finishes on the host meanwhile (about 2.4 s).
	time.Sleep(4 * time.Second)
	ns.SetLink(true)
	w.waitHost("far", "connected again", hostState("connected"))

	tool := func(title string) map[string]any {
		for _, c := range list(w.transcript(sid), "toolCalls") {
			if c["title"] == title {
				return c
			}
		}
		return nil
	}
	w.waitFor("the last step to be recorded as failed", func() bool {
		c := tool("Last step")
		return c != nil && c["status"] != "in_progress" && c["status"] != "pending"
	})
	if c := tool("Last step"); c["status"] != "failed" || c["interrupted"] != true {
		t.Errorf("the late tool call the stop cut: got status %v interrupted %v, want failed, interrupted", c["status"], c["interrupted"])
	}
	for i := 1; i <= steps; i++ {
		if c := tool(fmt.Sprintf("Step %d", i)); c == nil || c["status"] != "completed" {
			t.Errorf("step %d: got %v, want completed", i, c)
		}
	}

	// The transcript: the late output follows its notice, as in the log.
	var order []string
	for _, m := range list(w.transcript(sid), "messages") {
		switch text := m["text"].(string); {
		case m["role"] == "system" && strings.HasPrefix(text, "Late output"):
			order = append(order, "late notice")
		case m["role"] == "system":
			order = append(order, "interrupted")
		case m["role"] == "agent":
			order = append(order, strings.TrimSpace(text))
		}
	}
	want := []string{"step 1", "interrupted", "late notice"}
	for i := 2; i <= steps; i++ {
		want = append(want, fmt.Sprintf("step %d", i))
	}
	if got := strings.Join(order, ", "); got != strings.Join(want, ", ") {
		t.Errorf("p1's messages in the transcript: got %s, want %s", got, strings.Join(want, ", "))
	}
	var logged []string
	for _, f := range w.replay(sid) {
		if p := f.JSON(t); f.Event == "message.added" && p["promptId"] == "p1" && p["role"] == "system" {
			logged = append(logged, strings.SplitN(p["text"].(string), ":", 2)[0])
		}
	}
	if got := strings.Join(logged, "|"); got != "Turn interrupted|Late output" {
		t.Errorf("p1's system messages in the log: got %s", got)
	}

	rec := w.sessionContext(sid)["recovery"].(map[string]any)
	var dangling []string
	for _, d := range rec["danglingToolCalls"].([]any) {
		dangling = append(dangling, d.(map[string]any)["title"].(string))
	}
	if got := strings.Join(dangling, ", "); got != "Last step" {
		t.Errorf("the plan's dangling tool calls: got %q, want only the last step (the others completed, late)", got)
	}
	code, m := w.do(http.MethodPost, "/session/"+sid+"/continue", map[string]any{"promptId": "c1"})
	if code != http.StatusAccepted {
		t.Fatalf("continue: got %d %v, want 202", code, m)
	}
	if turn := w.waitTurn(sid, "c1"); turn["state"] != "completed" {
		t.Fatalf("continuation: got %v, want completed", turn)
	}
}

// TestRetriesAgainstALostHostWriteNothing: a client that retries continue
// against a remote host lost past --host-lost-after is refused (503
// executor_unavailable) every time, and the session's log does not grow
// with the retries: at most the first refusal records the executor's
// error. Before, each refused continue recorded a start and its failure
// (executor starting and error, the session STARTING and back: 4 events),
// so a client retrying every 10 ms wrote about 80 events in 0.2 s.
func TestRetriesAgainstALostHostWriteNothing(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	w, ns := lostAfterWorld(t)
	sid, _ := w.createSessionOn("demo", "far")
	fol := w.follow(sid)
	w.prompt(sid, "/hang", "p1")
	w.waitSeen(fol, "the turn's first chunk", isChunkOf(t, "p1"))
	ns.SetLink(false)
	w.waitHost("far", "lost", hostState("lost"))
	if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" {
		t.Fatalf("p1: got %v, want interrupted", turn["state"])
	}
	// The first refusal may record the executor's error; the retries add
	// nothing.
	if code, m := w.do(http.MethodPost, "/session/"+sid+"/continue", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("continue on a lost host: got %d %v, want 503", code, m)
	}
	before := len(w.replay(sid))
	for i := range 20 {
		code, m := w.do(http.MethodPost, "/session/"+sid+"/continue", nil)
		if code != http.StatusServiceUnavailable || m["code"] != "executor_unavailable" {
			t.Fatalf("retry %d: got %d %v, want 503 executor_unavailable", i, code, m)
		}
	}
	if after := len(w.replay(sid)); after != before {
		t.Errorf("the session's log grew by %d events over 20 refused retries, want 0", after-before)
	}
	if rec := w.sessionContext(sid)["recovery"].(map[string]any); rec["canContinue"] != true {
		t.Errorf("recovery after the retries: got %v, want still continuable", rec)
	}
	// Back: continue works.
	ns.SetLink(true)
	w.waitHost("far", "connected again", hostState("connected"))
	code, m := w.do(http.MethodPost, "/session/"+sid+"/continue", map[string]any{"promptId": "c1"})
	if code != http.StatusAccepted {
		t.Fatalf("continue once the host is back: got %d %v, want 202", code, m)
	}
	if turn := w.waitTurn(sid, "c1"); turn["state"] != "completed" {
		t.Fatalf("c1: got %v, want completed", turn)
	}
}
