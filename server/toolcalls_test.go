package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestToolCallIDsAcrossACPSessions runs two turns of one tether session
// on two ACP sessions of the demo agent (a restart restores it by history
// injection: neither session/load nor session/resume, so the agent opens
// a fresh ACP session and numbers its tool calls from tool-1 again). ACP
// only promises tool call ids unique within one ACP session: each turn's
// tool-1 is a call of its own, in the transcript served live and after a
// daemon restart, and the transcript is what the log says.
func TestToolCallIDsAcrossACPSessions(t *testing.T) {
	prof := agentProfile{id: "agent", stateDir: t.TempDir(), flags: []string{"--no-load", "--no-resume"}}
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
	sid, _ := d.createSession(map[string]any{"agentProfileId": "agent"})
	first := d.prompt(sid, "/tool fail", "")
	if turn := d.waitTurn(sid, first); turn["state"] != "completed" {
		t.Fatalf("first turn: got %v, want completed", turn)
	}
	token := d.resumeToken(sid)

	d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
	if r := d.do("POST", "/session/"+sid+"/resume", nil); r.Status != http.StatusOK {
		t.Fatalf("resume: got %d, want 200: %s", r.Status, r.Body)
	}
	if got := d.resumeToken(sid); got == token || got == "" {
		t.Fatalf("ACP session after the restore: got %q, want a new one (was %q)", got, token)
	}
	// A plain-text prompt (as the injected history makes any): the demo
	// agent reads README.md in a tool call.
	second := d.prompt(sid, "what does the readme say?", "")
	if turn := d.waitTurn(sid, second); turn["state"] != "completed" {
		t.Fatalf("second turn: got %v, want completed", turn)
	}

	want := []toolCallSeen{
		{promptID: first, id: "tool-1", title: "Run failing tool", status: "failed", output: "demo tool failed: simulated error"},
		{promptID: second, id: "tool-1", title: "Read README.md", status: "completed", output: "# Fixture\nhello from the fixture\n"},
	}
	d.checkToolCalls(sid, "live", want)
	d.checkOneTruth(sid)

	d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
	d.checkToolCalls(sid, "after a daemon restart", want)
	d.checkOneTruth(sid)
}

// toolCallSeen is what a test checks of a transcript's tool call.
type toolCallSeen struct {
	promptID, id, title, status, output string
}

// checkToolCalls compares the tool calls of sid's transcript with want,
// in order; when names the moment.
func (d *daemon) checkToolCalls(sid, when string, want []toolCallSeen) {
	d.t.Helper()
	calls := list(d.transcript(sid), "toolCalls")
	got := make([]toolCallSeen, 0, len(calls))
	for _, c := range calls {
		s := toolCallSeen{id: str(c["id"]), title: str(c["title"]), status: str(c["status"]), promptID: str(c["promptId"])}
		var content []struct {
			Content struct{ Text string } `json:"content"`
		}
		b, _ := json.Marshal(c["content"])
		if err := json.Unmarshal(b, &content); err != nil {
			d.t.Errorf("%s: tool call %s content %s: %v", when, s.id, b, err)
		}
		for _, b := range content {
			s.output += b.Content.Text
		}
		got = append(got, s)
	}
	if len(got) != len(want) {
		d.t.Fatalf("%s: got %d tool calls %+v, want %d %+v", when, len(got), got, len(want), want)
	}
	for i := range want {
		if got[i] != want[i] {
			d.t.Errorf("%s: tool call %d: got %+v, want %+v", when, i, got[i], want[i])
		}
	}
}

// str is v as a string ("" when it is none).
func str(v any) string {
	s, _ := v.(string)
	return s
}
