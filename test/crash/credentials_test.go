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

// TestDetachedCredentialsCheckedOnTheHost: the detached executor host's
// agents get the environment of the tetherd that started the host. A
// tetherd restarted with the key in its own environment (passed through)
// while the old host runs on: the host's agent still lacks it. The check
// at create runs where the session would run, on that host, so once the
// agent asked there, the next create is refused (409) rather than created
// to fail a moment later; a host started by this tetherd (the old one
// stopped) gets the key, and the session is created and works. Before,
// the check ran as tetherd's own child with tetherd's environment, said
// ok, and every create answered 201 and failed with agent_auth_required.
func TestDetachedCredentialsCheckedOnTheHost(t *testing.T) {
	keyless := profile{id: "keyless", flags: []string{"--auth-method", "demo-key"}, passthrough: []string{"DEMO_API_KEY"}}
	w := newWorld(t, profile{id: "demo"}, keyless)
	w.start("--executor", "detached")
	// The host starts with tetherd's environment, without the key.
	demo, _ := w.createSession("demo")
	w.prompt(demo, "/echo host up", "p1")
	w.waitTurn(demo, "p1")
	w.waitFor("the probe", func() bool { c, _ := w.profileCredentials("keyless"); return c["status"] == "required" })
	code, m := w.do("POST", "/session", map[string]any{"agentProfileId": "keyless", "cwd": t.TempDir()})
	if code != http.StatusConflict || m["code"] != "agent_auth_required" {
		t.Fatalf("create without the key: got %d %v, want 409 agent_auth_required", code, m)
	}
	w.term() // the host runs on, with the environment it was started with
	w.env = append(w.env, "DEMO_API_KEY=k")
	w.start("--executor", "detached")

	// With the key in tetherd's environment the profile's fingerprint
	// changed: nothing is known of its credentials, the first create is
	// let through, and its agent, on the old host, asks for them.
	w.waitFor("the profile to be probed", func() bool { _, probed := w.profileCredentials("keyless"); return probed })
	if c, _ := w.profileCredentials("keyless"); c["status"] == "required" {
		t.Fatalf("credentials after the restart with the key: got %v, want none seen yet or ok", c)
	}
	sid, _ := w.createSession("keyless")
	w.waitFor("the session's agent to ask for credentials on the host", func() bool {
		return w.status(sid)["errorCode"] == "agent_auth_required"
	})
	code, m = w.do("POST", "/session", map[string]any{"agentProfileId": "keyless", "cwd": t.TempDir()})
	if code != http.StatusConflict || m["code"] != "agent_auth_required" {
		t.Fatalf("create while the host lacks the key: got %d %v, want 409 agent_auth_required", code, m)
	}

	// A host this tetherd starts has the key.
	w.stopHosts()
	w.waitFor("the old host to end", func() bool { return len(w.processes(" host ")) == 0 })
	sid, _ = w.createSession("keyless")
	w.prompt(sid, "/echo with the key", "p1")
	if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
		t.Fatalf("a turn on a host started with the key: got %v, want completed", turn)
	}
}
