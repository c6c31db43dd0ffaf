package server_test

import (
	"testing"

	"github.com/tether/tether/internal/events"
)

// TestAgentExecutionIDPerExecution starts a session's agent three times (a
// first prompt, a restart after the agent crashed, a restart after the
// daemon restarted) and checks that every execution has its own
// agentExecutionId and that status names the current one.
func TestAgentExecutionIDPerExecution(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid := d.promptedSession("demo", "hello")
	var seen []string
	current := func(d *daemon, when string) {
		t.Helper()
		st := d.status(sid)
		id, _ := st["agentExecutionId"].(string)
		if st["isAgentRunning"] != true || id == "" {
			t.Fatalf("%s: status got running %v, agentExecutionId %q; want a running agent with an id", when, st["isAgentRunning"], id)
		}
		for _, prev := range seen {
			if id == prev {
				t.Fatalf("%s: agentExecutionId %q repeats an earlier execution's (all so far: %q)", when, id, seen)
			}
		}
		seen = append(seen, id)
	}
	current(d, "first execution")

	d.crashTurn(sid, "/crash", "crash")
	d.waitTurn(sid, d.prompt(sid, "/echo again", ""))
	current(d, "after the agent crashed")

	d = d.restart(daemonOptions{})
	d.waitTurn(sid, d.prompt(sid, "/echo after restart", ""))
	current(d, "after a daemon restart")

	// The log tells the same story: each execution's ready event carries
	// its own id, the last one the id status shows.
	var ready []string
	for _, f := range ofType(d.sessionEvents(sid), events.SessionExecutorStatus) {
		if p := f.JSON(t); p["status"] == "ready" {
			id, _ := p["agentExecutionId"].(string)
			ready = append(ready, id)
		}
	}
	if len(ready) != len(seen) {
		t.Fatalf("ready events carry agentExecutionIds %q, want one per execution %q", ready, seen)
	}
	for i := range seen {
		if ready[i] != seen[i] {
			t.Errorf("ready event %d: got agentExecutionId %q, want %q", i, ready[i], seen[i])
		}
	}
}
