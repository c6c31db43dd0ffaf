package server_test

import (
	"net/http"
	"strings"
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

	r := d.do("POST", "/session/"+sid+"/resume", nil)
	if r.Status != http.StatusConflict || r.JSON(t)["code"] != want {
		t.Fatalf("resume: got %d %s, want 409 %s", r.Status, r.Body, want)
	}
	// The problem says what to do, with the methods the agent announced.
	const hint = "set authMethod: demo-login in the profile's agents.yaml entry (Demo login)"
	p := r.JSON(t)
	if detail, _ := p["detail"].(string); !strings.Contains(detail, "needs credentials: "+hint) {
		t.Errorf("resume problem detail: got %q, want it to say %q", detail, hint)
	}
	if ms, _ := p["authMethods"].([]any); len(ms) != 1 || ms[0].(map[string]any)["id"] != "demo-login" || ms[0].(map[string]any)["hint"] != hint {
		t.Errorf("resume problem authMethods: got %v, want demo-login with its hint", p["authMethods"])
	}
	if msg, _ := d.status(sid)["errorMessage"].(string); !strings.Contains(msg, hint) {
		t.Errorf("status errorMessage: got %q, want it to say %q", msg, hint)
	}
	// GET /agents shows them too: the failed start recorded the handshake.
	var methods []any
	for _, a := range list(d.do("GET", "/agents", nil).JSON(t), "agents") {
		if a["id"] == "locked" {
			caps, _ := a["capabilities"].(map[string]any)
			methods, _ = caps["authMethods"].([]any)
		}
	}
	if len(methods) != 1 || methods[0].(map[string]any)["id"] != "demo-login" || methods[0].(map[string]any)["hint"] != hint {
		t.Errorf("GET /agents authMethods of locked: got %v, want demo-login with its hint", methods)
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

// TestProfileAuthMethod: an agent that reads its credentials only after
// ACP authenticate (codex's api-key; here demo-agent --auth-method) fails
// with agent_auth_required and a hint naming the key variable until the
// profile sets that variable in its env (tetherd then picks the method
// itself) or names the method in authMethod; then tetherd authenticates
// after initialize and the session works. A method the agent does not know
// fails visibly.
func TestProfileAuthMethod(t *testing.T) {
	const hint = "set DEMO_API_KEY in the profile's env"
	key := map[string]string{"DEMO_API_KEY": "k"}
	tests := []struct {
		name       string
		authMethod string
		env        map[string]string
		wantCode   string // "" = the turn completes
		wantDetail string
	}{
		{"neither: actionable auth failure", "", nil, "agent_auth_required", hint},
		{"named: authenticated, the session works", "demo-key", nil, "", ""},
		{"key in env, method not named: chosen automatically", "", key, "", ""},
		{"key set empty: not chosen", "", map[string]string{"DEMO_API_KEY": ""}, "agent_auth_required", hint},
		{"unknown method: a visible start failure", "nope", key, "agent_start_failed", `authenticate with method "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prof := agentProfile{id: "keyed", stateDir: t.TempDir(), flags: []string{"--auth-method", "demo-key"}, authMethod: tc.authMethod, env: tc.env}
			d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
			for _, a := range list(d.do("GET", "/agents", nil).JSON(t), "agents") {
				if got, _ := a["authMethod"].(string); a["id"] == "keyed" && got != tc.authMethod {
					t.Errorf("GET /agents authMethod: got %q, want %q", got, tc.authMethod)
				}
			}
			sid, _ := d.createSession(map[string]any{"agentProfileId": "keyed"})
			pid := d.prompt(sid, "/echo hello", "")
			turn := d.waitTurn(sid, pid)
			if tc.wantCode == "" {
				if turn["state"] != "completed" {
					t.Fatalf("prompt: got %v, want completed", turn)
				}
				if n := d.Sent.count(sid, "authenticate"); n != 1 {
					t.Errorf("got %d authenticate requests, want 1", n)
				}
				return
			}
			if e, _ := turn["error"].(map[string]any); turn["state"] != "failed" || e["code"] != tc.wantCode {
				t.Errorf("prompt: got %v, want failed %s", turn, tc.wantCode)
			}
			st := d.status(sid)
			if msg, _ := st["errorMessage"].(string); st["errorCode"] != tc.wantCode || !strings.Contains(msg, tc.wantDetail) {
				t.Errorf("status: got %v %q, want %s mentioning %q", st["errorCode"], msg, tc.wantCode, tc.wantDetail)
			}
		})
	}
}

// TestEagerResumeSkipsKnownAuthFailure: in eager mode a session whose agent
// asked for credentials is not started again at every start-up while its
// profile is unchanged; the failure's code survives the restart; the user
// can still ask (POST /resume), and a changed profile is tried again.
func TestEagerResumeSkipsKnownAuthFailure(t *testing.T) {
	prof := agentProfile{id: "locked", stateDir: t.TempDir(), flags: []string{"--auth-required"}}
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
	sid, _ := d.createSession(map[string]any{"agentProfileId": "locked"})
	d.waitFor("the start to fail", func() bool { return d.status(sid)["executorStatus"] == "error" })

	d = d.restart(daemonOptions{eager: 2, agentsYAML: profilesYAML(t, prof)})
	<-d.EagerDone
	if n := d.Sent.count(sid, "initialize"); n != 0 {
		t.Errorf("eager start-up with the same profile: got %d agent starts, want 0", n)
	}
	if st := d.status(sid); st["errorCode"] != "agent_auth_required" || st["isResumable"] != true {
		t.Errorf("status after the restart: got errorCode %v resumable %v, want agent_auth_required, resumable", st["errorCode"], st["isResumable"])
	}
	if r := d.do("POST", "/session/"+sid+"/resume", nil); r.Status != http.StatusConflict || r.JSON(t)["code"] != "agent_auth_required" {
		t.Errorf("resume asked by the user: got %d %s, want 409 agent_auth_required", r.Status, r.Body)
	}
	if n := d.Sent.count(sid, "initialize"); n != 1 {
		t.Errorf("resume asked by the user: got %d agent starts, want 1", n)
	}

	prof.flags = nil // the user fixed the profile
	d = d.restart(daemonOptions{eager: 2, agentsYAML: profilesYAML(t, prof)})
	<-d.EagerDone
	if n := d.Sent.count(sid, "initialize"); n != 1 {
		t.Errorf("eager start-up with a changed profile: got %d agent starts, want 1", n)
	}
	if st := d.status(sid); st["isAgentRunning"] != true || st["errorCode"] != nil {
		t.Errorf("status after the changed profile: got running %v errorCode %v, want running, no errorCode", st["isAgentRunning"], st["errorCode"])
	}
}
