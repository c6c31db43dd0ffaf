package server_test

import (
	"net/http"
	"testing"

	"github.com/tether/tether/internal/events"
)

// TestAuthRequiredIsActionable: an agent that answers ACP -32000 (it needs
// credentials) gives the stable code agent_auth_required everywhere a client
// looks: the failed start's executor event and status, POST /resume, and
// the prompt's turn.failed.
func TestAuthRequiredIsActionable(t *testing.T) {
	prof := agentProfile{id: "locked", stateDir: t.TempDir(), flags: []string{"--auth-required"}}
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
	sid, _ := d.createSession(map[string]any{"agentProfileId": "locked"})
	d.waitFor("the start to fail", func() bool { return d.status(sid)["executorStatus"] == "error" })

	const want = "agent_auth_required"
	if st := d.status(sid); st["errorCode"] != want || st["isResumable"] != true {
		t.Errorf("status after the failed start: got errorCode %v resumable %v, want %s, resumable", st["errorCode"], st["isResumable"], want)
	}
	var codes []any
	for _, f := range ofType(d.sessionEvents(sid), events.SessionExecutorStatus) {
		if e := f.JSON(t); e["status"] == "error" {
			codes = append(codes, e["errorCode"])
		}
	}
	if len(codes) != 1 || codes[0] != want {
		t.Errorf("session.executor_status error events: got errorCodes %v, want one %s", codes, want)
	}

	if r := d.do("POST", "/session/"+sid+"/resume", nil); r.Status != http.StatusBadGateway || r.JSON(t)["code"] != want {
		t.Errorf("resume: got %d %s, want 502 %s", r.Status, r.Body, want)
	}

	pid := d.prompt(sid, "/echo hello", "")
	turn := d.waitTurn(sid, pid)
	if e, _ := turn["error"].(map[string]any); turn["state"] != "failed" || e["code"] != want {
		t.Errorf("prompt: got turn %v, want failed with code %s", turn, want)
	}
	var failed []any
	for _, f := range ofType(d.sessionEvents(sid), events.TurnFailed) {
		failed = append(failed, f.JSON(t)["code"])
	}
	if len(failed) != 1 || failed[0] != want {
		t.Errorf("turn.failed events: got codes %v, want one %s", failed, want)
	}
}
