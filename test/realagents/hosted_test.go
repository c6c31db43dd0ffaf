package realagents_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/modelserver"
)

// TestDetachedKillDaemonMidReplyModelNeverSees (issue 13): with the
// detached runtime the agent runs in an executor host that outlives
// tetherd. tetherd is killed while the model is stalled mid-reply and
// restarted; the model then finishes the reply. The turn completes as if
// nothing happened: no interruption, the whole reply once in the
// transcript, and the model was asked exactly once (never told of a
// cancel, an interruption or a continuation).
func TestDetachedKillDaemonMidReplyModelNeverSees(t *testing.T) {
	const reply = "Here is the whole answer, streamed slowly across a restart of tetherd."
	forEachAgent(t, func(t *testing.T, a agent) {
		gate := modelserver.NewGate()
		t.Cleanup(gate.Release)
		w := newWorld(t, a, modelserver.Stall(reply, 3, gate), "--executor", "detached")
		// Runs before the world's own cleanup: the daemon goes first (it
		// could start a host again), then the hosts with their agents,
		// and only then may the temp dirs (the agent's HOME) go.
		t.Cleanup(func() { w.stop(); stopHosts(t, w.dir) })
		sid := w.createSession()
		w.prompt(sid, "Explain it slowly.", "p1")
		waitStalled(t, gate)
		w.kill9()
		w.start()
		gate.Release()

		if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
			t.Fatalf("turn after the restart: got %v, want completed", turn)
		}
		tr := w.transcript(sid)
		if got := agentText(tr, "p1"); got != reply {
			t.Errorf("agent text: got %q, want the whole reply once: %q", got, reply)
		}
		n := 0
		for _, m := range list(tr, "messages") {
			if m["promptId"] == "p1" && m["role"] == "agent" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("got the reply in %d agent messages, want one: the restart must not cut it in two", n)
		}
		for _, e := range w.log(sid) {
			if e.Type == "turn.interrupted" || e.Type == "session.resumed" {
				t.Errorf("got %s %v: the restart must not reach the session", e.Type, e.Data)
			}
		}
		if reqs := mainRequests(w.model); len(reqs) != 1 {
			t.Errorf("the model was asked %d times, want once (it must never learn of the restart)", len(reqs))
		}
	})
}

// stopHosts ends the executor host of a data dir (it outlives every
// daemon on purpose), with its agents, and waits until they are gone: a
// host stops its agents before it exits, and an agent still running would
// write into its HOME while the test removes it.
func stopHosts(t *testing.T, dataDir string) {
	t.Helper()
	pid := host.Running(filepath.Join(dataDir, "host"))
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	end := time.Now().Add(deadline)
	for running(pid) {
		if time.Now().After(end) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("executor host %d still running %s after SIGTERM (killed now)", pid, deadline)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// running reports whether pid is a live process. A zombie is not: a host
// whose daemon was killed belongs to init, which may be slow to reap it.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// TestKillDaemonKeepsMessagesApart (issue 28, item 4, with real agents):
// tetherd is killed with SIGKILL while the model is stalled in the first
// of two messages of a turn (text, a read of a file, more text: two model
// replies, each with an id of its own); the agent finishes the turn on
// its executor host while tetherd is down. After the re-attach the
// stored transcript and the log hold one message per ACP messageId, each
// whole, never glued, and the text is exactly what the model streamed.
func TestKillDaemonKeepsMessagesApart(t *testing.T) {
	const preface = "Let me read the notes file first, slowly."
	const final = "FINAL: the notes say hello."
	forEachAgentOn(t, []string{detached, remote}, func(t *testing.T, a agent, rt string) {
		gate := modelserver.NewGate()
		t.Cleanup(gate.Release)
		w := newWorldOn(t, a, rt, nil)
		path := filepath.Join(w.cwd, "notes.txt")
		if err := os.WriteFile(path, []byte("hello\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		w.model.SetScript(modelserver.StallThenReadFile(path, preface, 3, gate, final))
		sid := w.createSession()
		w.prompt(sid, "What do the notes say?", "p1")
		waitStalled(t, gate)
		w.kill9()
		gate.Release()
		w.start()
		if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
			t.Fatalf("turn after the restart: got %v (%v), want completed", turn["state"], turn["error"])
		}
		var texts []string
		for _, m := range list(w.transcript(sid), "messages") {
			if m["promptId"] == "p1" && m["role"] == "agent" {
				texts = append(texts, strings.TrimSpace(m["text"].(string)))
			}
		}
		if want := []string{preface, final}; !slices.Equal(texts, want) {
			t.Errorf("stored agent messages of p1: got %q, want %q", texts, want)
		}
		var order []string // agentMessageId of each message.added
		byMessage := map[float64]string{}
		for _, e := range w.log(sid) {
			if e.Data["promptId"] != "p1" || e.Data["role"] != "agent" {
				continue
			}
			id, _ := e.Data["messageId"].(float64)
			switch e.Type {
			case "message.added":
				order = append(order, fmt.Sprint(e.Data["agentMessageId"]))
				byMessage[id] = e.Data["text"].(string)
			case "message.chunk":
				byMessage[id] += e.Data["text"].(string)
			}
		}
		// claude-agent-acp gives each message the model's id; qwen gives
		// none, and its tool call parts the two.
		if len(order) != 2 || (a.id == "claude" && (order[0] == "<nil>" || order[0] == order[1])) {
			t.Errorf("message.added of p1 by agentMessageId: got %v, want two, each its own", order)
		}
		var logged []string
		for _, text := range byMessage {
			logged = append(logged, strings.TrimSpace(text))
		}
		slices.Sort(logged)
		if want := []string{final, preface}; !slices.Equal(logged, want) {
			t.Errorf("the log's agent messages of p1: got %q, want %q", logged, want)
		}
		if n := len(mainRequests(w.model)); n != 2 {
			t.Errorf("the model was asked %d times, want twice (the turn and the tool's result)", n)
		}
	})
}
