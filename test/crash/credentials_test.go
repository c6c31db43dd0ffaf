package crash_test

import (
	"net/http"
	"strings"
	"testing"
)

// profileCredentials is the profile's `credentials` in GET /agents, nil
// when nothing was seen; probed says whether its capabilities are known.
func (w *world) profileCredentials(id string) (c map[string]any, probed bool) {
	w.t.Helper()
	for _, a := range list(w.get("/agents"), "agents") {
		if a["id"] == id {
			c, _ = a["credentials"].(map[string]any)
			return c, a["capabilities"] != nil
		}
	}
	w.t.Fatalf("GET /agents: no profile %q", id)
	return nil, false
}

// TestProbeKnowsCredentialsBeforeTheFirstSession: tetherd's capability
// probe at start-up asks an agent that announces auth methods for a
// session (never a prompt), so before any session ran GET /agents says
// which profile's agent needs credentials, with the hint, and the very
// first POST /session of it is refused (409 agent_auth_required, nothing
// created) while the same agent with its key set is created. On the
// detached executor, whose host reads agents.yaml again at every start, a
// key added to the file without restarting tetherd is not refused.
func TestProbeKnowsCredentialsBeforeTheFirstSession(t *testing.T) {
	const hint = "set DEMO_API_KEY in the profile's env"
	for _, executor := range []string{"standalone", "detached"} {
		t.Run(executor, func(t *testing.T) {
			keyless := profile{id: "keyless", flags: []string{"--auth-method", "demo-key"}}
			keyed := profile{id: "keyed", flags: []string{"--auth-method", "demo-key"}, env: map[string]string{"DEMO_API_KEY": "k"}}
			w := newWorld(t, keyless, keyed)
			w.start("--executor", executor)
			// A probe records what it saw of the credentials before the
			// capabilities.
			w.waitFor("the probes of both profiles", func() bool {
				_, a := w.profileCredentials("keyless")
				_, b := w.profileCredentials("keyed")
				return a && b
			})
			c, _ := w.profileCredentials("keyless")
			if c["status"] != "required" || c["stage"] != "start" || c["sessionId"] != nil {
				t.Errorf("keyless after its probe: got %v, want required at start, no session", c)
			}
			if msg, _ := c["message"].(string); !strings.Contains(msg, hint) {
				t.Errorf("keyless message: got %q, want it to say %q", msg, hint)
			}
			if c, _ := w.profileCredentials("keyed"); c["status"] != "ok" {
				t.Errorf("keyed after its probe: got %v, want ok", c)
			}

			code, m := w.do("POST", "/session", map[string]any{"agentProfileId": "keyless", "cwd": t.TempDir()})
			if code != http.StatusConflict || m["code"] != "agent_auth_required" {
				t.Fatalf("first keyless session: got %d %v, want 409 agent_auth_required", code, m)
			}
			if detail, _ := m["detail"].(string); !strings.Contains(detail, hint) {
				t.Errorf("refusal detail: got %q, want it to say %q", detail, hint)
			}
			if got := list(w.get("/sessions"), "sessions"); len(got) != 0 {
				t.Errorf("sessions after the refusal: got %d, want 0", len(got))
			}

			sid, _ := w.createSession("keyed")
			w.prompt(sid, "/echo hello", "p1")
			if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
				t.Fatalf("keyed turn: got %v, want completed", turn)
			}

			if executor != "detached" {
				return
			}
			keyless.env = map[string]string{"DEMO_API_KEY": "k"}
			w.setProfiles(keyless, keyed) // no restart: only the host reads it
			sid, _ = w.createSession("keyless")
			w.prompt(sid, "/echo fixed", "p1")
			if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
				t.Fatalf("keyless turn after the key was added to agents.yaml: got %v, want completed", turn)
			}
		})
	}
}
