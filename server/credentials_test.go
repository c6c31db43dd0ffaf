package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// credentials is the profile's `credentials` in GET /agents, nil when
// nothing was seen.
func (d *daemon) credentials(profile string) map[string]any {
	d.t.Helper()
	for _, a := range list(d.do("GET", "/agents", nil).JSON(d.t), "agents") {
		if a["id"] == profile {
			c, _ := a["credentials"].(map[string]any)
			return c
		}
	}
	d.t.Fatalf("GET /agents: no profile %q", profile)
	return nil
}

// methodHints maps each auth method of a problem or a credentials object
// to its hint.
func methodHints(m map[string]any) map[string]string {
	out := map[string]string{}
	ms, _ := m["authMethods"].([]any)
	for _, x := range ms {
		if mm, ok := x.(map[string]any); ok {
			id, _ := mm["id"].(string)
			out[id], _ = mm["hint"].(string)
		}
	}
	return out
}

// checkRefused checks a POST /session refused for want of credentials:
// 409 agent_auth_required whose detail and authMethods say what to do.
func checkRefused(t *testing.T, r response, method, hint string) {
	t.Helper()
	if r.Status != http.StatusConflict {
		t.Fatalf("create: got %d %s, want 409 agent_auth_required", r.Status, r.Body)
	}
	p := r.JSON(t)
	if p["code"] != "agent_auth_required" {
		t.Errorf("create: got code %v, want agent_auth_required", p["code"])
	}
	if detail, _ := p["detail"].(string); !strings.Contains(detail, "needs credentials: "+hint) {
		t.Errorf("create: got detail %q, want it to say %q", detail, hint)
	}
	if got := methodHints(p)[method]; got != hint {
		t.Errorf("create: got authMethods %v, want %s with hint %q", p["authMethods"], method, hint)
	}
}

// TestCreateRefusedWhileTheAgentAsksForCredentials: once a profile's agent
// asked for credentials at its start, GET /agents says so (with the
// methods and hints) and POST /session answers 409 agent_auth_required at
// once, creating nothing; the same agent with its key set is never
// refused. What was seen survives a restart and is dropped when the
// profile changes (the key set).
func TestCreateRefusedWhileTheAgentAsksForCredentials(t *testing.T) {
	const hint = "set DEMO_API_KEY in the profile's env"
	keyless := agentProfile{id: "keyless", stateDir: t.TempDir(), flags: []string{"--auth-method", "demo-key"}}
	keyed := agentProfile{id: "keyed", stateDir: t.TempDir(), flags: []string{"--auth-method", "demo-key"}, env: map[string]string{"DEMO_API_KEY": "k"}}
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, keyless, keyed)})

	// Nothing is known of an agent that never ran: the first session is
	// created and its start fails.
	if c := d.credentials("keyless"); c != nil {
		t.Fatalf("keyless before any start: got credentials %v, want none", c)
	}
	r := d.createRaw("keyless", "")
	if r.Status != http.StatusCreated {
		t.Fatalf("first create: got %d %s, want 201", r.Status, r.Body)
	}
	first := r.JSON(t)["id"].(string)
	d.waitFor("the first start to fail", func() bool { return d.status(first)["errorCode"] == "agent_auth_required" })

	c := d.credentials("keyless")
	if c["status"] != "required" || c["stage"] != "start" || c["sessionId"] != first {
		t.Errorf("keyless after the failed start: got credentials %v, want required at start in session %s", c, first)
	}
	if msg, _ := c["message"].(string); !strings.Contains(msg, hint) {
		t.Errorf("keyless credentials message: got %q, want it to say %q", msg, hint)
	}
	if got := methodHints(c)["demo-key"]; got != hint {
		t.Errorf("keyless credentials authMethods: got %v, want demo-key with hint %q", c["authMethods"], hint)
	}

	// The next create is refused, and nothing of it exists.
	sessions, tasks := d.sessionCount(), len(list(d.do("GET", "/tasks", nil).JSON(t), "tasks"))
	checkRefused(t, d.createRaw("keyless", "hello"), "demo-key", hint)
	if got := d.sessionCount(); got != sessions {
		t.Errorf("sessions after the refusal: got %d, want %d", got, sessions)
	}
	if got := len(list(d.do("GET", "/tasks", nil).JSON(t), "tasks")); got != tasks {
		t.Errorf("tasks after the refusal: got %d, want %d", got, tasks)
	}

	// The same agent with its key: created, started, seen to work.
	r = d.createRaw("keyed", "")
	if r.Status != http.StatusCreated {
		t.Fatalf("keyed create: got %d %s, want 201", r.Status, r.Body)
	}
	sid := r.JSON(t)["id"].(string)
	d.waitFor("the keyed agent to be ready", func() bool { return d.status(sid)["executorStatus"] == "ready" })
	if c := d.credentials("keyed"); c["status"] != "ok" || c["stage"] != "start" {
		t.Errorf("keyed after its start: got credentials %v, want ok at start", c)
	}
	r = d.createRaw("keyed", "")
	if r.Status != http.StatusCreated {
		t.Fatalf("second keyed create: got %d %s, want 201", r.Status, r.Body)
	}
	if c, _ := r.JSON(t)["credentials"].(map[string]any); c["status"] != "ok" {
		t.Errorf("second keyed create: got credentials %v, want ok", c)
	}

	// A restart keeps what was seen under the same configuration.
	d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, keyless, keyed)})
	if c := d.credentials("keyless"); c["status"] != "required" {
		t.Errorf("keyless after a restart: got credentials %v, want required", c)
	}
	checkRefused(t, d.createRaw("keyless", ""), "demo-key", hint)

	// The key set in the profile: a new configuration, nothing known, the
	// session created and working.
	keyless.env = map[string]string{"DEMO_API_KEY": "k"}
	d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, keyless, keyed)})
	if c := d.credentials("keyless"); c != nil {
		t.Errorf("keyless with its key set: got credentials %v, want none", c)
	}
	r = d.createRaw("keyless", "")
	if r.Status != http.StatusCreated {
		t.Fatalf("keyless with its key: got %d %s, want 201", r.Status, r.Body)
	}
	sid = r.JSON(t)["id"].(string)
	d.waitFor("the fixed agent to be ready", func() bool { return d.status(sid)["executorStatus"] == "ready" })
}

// TestCredentialsSetOutsideTetherdAreNeverRefused: an agent keeps its
// login where tetherd cannot see it (a file written by a login in a
// terminal: demo-agent --auth-file). While it is missing, a session is
// refused with the hint to log in; once the user logged in, with nothing
// changed in tetherd's configuration, the next session is created and
// works: a refusal is decided by starting the agent again, never from what
// was seen before.
func TestCredentialsSetOutsideTetherdAreNeverRefused(t *testing.T) {
	login := filepath.Join(t.TempDir(), "login")
	hint := "run `touch " + login + "` once in a terminal to log in"
	p := agentProfile{id: "login", stateDir: t.TempDir(), flags: []string{"--auth-file", login}, readable: []string{filepath.Dir(login)}}
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, p)})

	r := d.createRaw("login", "")
	if r.Status != http.StatusCreated {
		t.Fatalf("first create: got %d %s, want 201", r.Status, r.Body)
	}
	first := r.JSON(t)["id"].(string)
	d.waitFor("the first start to fail", func() bool { return d.status(first)["errorCode"] == "agent_auth_required" })
	checkRefused(t, d.createRaw("login", ""), "demo-file-login", hint)

	// The user logs in, in a terminal.
	if err := os.WriteFile(login, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = d.createRaw("login", "")
	if r.Status != http.StatusCreated {
		t.Fatalf("create after the login: got %d %s, want 201", r.Status, r.Body)
	}
	sid := r.JSON(t)["id"].(string)
	pid := d.prompt(sid, "/echo hello", "")
	if turn := d.waitTurn(sid, pid); turn["state"] != "completed" {
		t.Fatalf("prompt after the login: got %v, want completed", turn)
	}
	if c := d.credentials("login"); c["status"] != "ok" {
		t.Errorf("after the login: got credentials %v, want ok", c)
	}
}

// TestCredentialsAskedAtAPrompt: an agent that announces no auth methods
// and asks for credentials only at a prompt (claude-agent-acp; here
// demo-agent --auth-required --auth-at-prompt) starts fine, so nothing can
// be checked without a prompt: GET /agents says its last prompt asked for
// credentials, and the next POST /session is created (201) with that in
// its `credentials`, never refused. A start that works does not hide it.
func TestCredentialsAskedAtAPrompt(t *testing.T) {
	const hint = "set the agent's credentials (e.g. its API key variable) in the profile's env in agents.yaml"
	p := agentProfile{id: "prompted", stateDir: t.TempDir(), flags: []string{"--auth-required", "--auth-at-prompt"}}
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, p)})

	r := d.createRaw("prompted", "")
	if r.Status != http.StatusCreated {
		t.Fatalf("first create: got %d %s, want 201", r.Status, r.Body)
	}
	first := r.JSON(t)["id"].(string)
	pid := d.prompt(first, "/echo hello", "")
	if turn := d.waitTurn(first, pid); turn["state"] != "failed" || turn["error"].(map[string]any)["code"] != "agent_auth_required" {
		t.Fatalf("prompt: got %v, want failed agent_auth_required", turn)
	}
	c := d.credentials("prompted")
	if c["status"] != "required" || c["stage"] != "prompt" || c["sessionId"] != first {
		t.Errorf("after the failed prompt: got credentials %v, want required at prompt in session %s", c, first)
	}
	if msg, _ := c["message"].(string); !strings.Contains(msg, hint) {
		t.Errorf("credentials message: got %q, want it to say %q", msg, hint)
	}

	r = d.createRaw("prompted", "")
	if r.Status != http.StatusCreated {
		t.Fatalf("create after the failed prompt: got %d %s, want 201 (a start cannot tell)", r.Status, r.Body)
	}
	s := r.JSON(t)
	if c, _ := s["credentials"].(map[string]any); c["status"] != "required" || c["stage"] != "prompt" {
		t.Errorf("create answer: got credentials %v, want required at prompt", s["credentials"])
	}
	sid := s["id"].(string)
	d.waitFor("the second agent to be ready", func() bool { return d.status(sid)["executorStatus"] == "ready" })
	if c := d.credentials("prompted"); c["status"] != "required" || c["stage"] != "prompt" {
		t.Errorf("after a start that worked: got credentials %v, want still required at prompt", c)
	}
}
