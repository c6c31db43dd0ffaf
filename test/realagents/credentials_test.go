package realagents_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// qwenAgent is the suite's qwen profile, with or without its key.
func qwenAgent(t *testing.T, withKey bool) agent {
	t.Helper()
	for _, a := range agents {
		if a.id != "qwen" {
			continue
		}
		if !withKey {
			env := a.env
			a.env = func(m *modelserver.Server, home string) map[string]string {
				e := env(m, home)
				delete(e, "OPENAI_API_KEY")
				return e
			}
		}
		return a
	}
	t.Fatal("no qwen in the suite")
	return agent{}
}

// qwenProfile is the qwen profile of GET /agents once its capability probe
// is done (it records the credentials it saw before the capabilities).
func (w *world) qwenProfile() map[string]any {
	w.t.Helper()
	var qwen map[string]any
	w.waitFor("qwen's capability probe", func() bool {
		_, m := w.do("GET", "/agents", nil)
		as, _ := m["agents"].([]any)
		for _, x := range as {
			if a, _ := x.(map[string]any); a["id"] == "qwen" && a["capabilities"] != nil {
				qwen = a
				return true
			}
		}
		return false
	})
	return qwen
}

// openaiHint is the hint of qwen's `openai` method in a problem or a
// credentials object.
func openaiHint(m map[string]any) string {
	ms, _ := m["authMethods"].([]any)
	for _, x := range ms {
		if mm, _ := x.(map[string]any); mm["id"] == "openai" {
			h, _ := mm["hint"].(string)
			return h
		}
	}
	return ""
}

// TestQwenCredentials: qwen-code 0.15.10 announces its `openai` method as
// a terminal login (_meta type terminal, args --auth-type=openai) though
// what it needs is OPENAI_API_KEY, which its description names; tetherd's
// hint says to set OPENAI_API_KEY. Without the key, qwen answers
// session/new with -32000: the capability probe at start-up sees it, GET
// /agents reports it with that hint, and the first POST /session is
// refused (409 agent_auth_required). With the key, nothing is reported and
// the session is created.
func TestQwenCredentials(t *testing.T) {
	const hint = "set OPENAI_API_KEY in the profile's env"
	t.Run("without OPENAI_API_KEY", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, qwenAgent(t, false), nil)
		qwen := w.qwenProfile()
		caps, _ := qwen["capabilities"].(map[string]any)
		if got := openaiHint(caps); got != hint {
			t.Errorf("GET /agents capabilities: openai hint %q, want %q", got, hint)
		}
		c, _ := qwen["credentials"].(map[string]any)
		if c["status"] != "required" || c["stage"] != "start" {
			t.Fatalf("GET /agents credentials: got %v, want required at start", qwen["credentials"])
		}
		if got := openaiHint(c); got != hint {
			t.Errorf("GET /agents credentials: openai hint %q, want %q", got, hint)
		}
		if msg, _ := c["message"].(string); !strings.Contains(msg, "OPENAI_API_KEY") {
			t.Errorf("GET /agents credentials message: got %q, want it to name OPENAI_API_KEY", msg)
		}

		code, p := w.do("POST", "/session", map[string]any{"agentProfileId": "qwen", "cwd": w.cwd})
		if code != http.StatusConflict || p["code"] != "agent_auth_required" {
			t.Fatalf("create: got %d %v, want 409 agent_auth_required", code, p)
		}
		if got := openaiHint(p); got != hint {
			t.Errorf("create problem: openai hint %q, want %q", got, hint)
		}
		if detail, _ := p["detail"].(string); !strings.Contains(detail, hint) {
			t.Errorf("create problem detail: got %q, want it to say %q", detail, hint)
		}
		_, m := w.do("GET", "/sessions", nil)
		if got, _ := m["sessions"].([]any); len(got) != 0 {
			t.Errorf("sessions after the refusal: got %d, want 0", len(got))
		}
	})
	t.Run("with OPENAI_API_KEY", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, qwenAgent(t, true), nil)
		qwen := w.qwenProfile()
		if c, _ := qwen["credentials"].(map[string]any); c["status"] != "ok" {
			t.Errorf("GET /agents credentials: got %v, want ok", qwen["credentials"])
		}
		code, s := w.do("POST", "/session", map[string]any{"agentProfileId": "qwen", "cwd": w.cwd})
		if code != http.StatusCreated {
			t.Fatalf("create: got %d %v, want 201", code, s)
		}
		if c, _ := s["credentials"].(map[string]any); c["status"] == "required" {
			t.Errorf("create answer: got credentials %v, want none required", c)
		}
		sid, _ := s["id"].(string)
		w.waitFor("the session's agent to be ready", func() bool {
			_, st := w.do("GET", "/session/"+sid+"/status", nil)
			return st["executorStatus"] == "ready"
		})
	})
}

// TestClaudeCredentialsAtAPrompt: claude-agent-acp announces no auth
// methods and starts without a key, so nothing is known before a prompt
// and nothing is refused; its first prompt asks for credentials, after
// which GET /agents says so (required at prompt) and the next POST
// /session is created (201) with the same credentials in its answer.
func TestClaudeCredentialsAtAPrompt(t *testing.T) {
	var claude agent
	for _, a := range agents {
		if a.id == "claude" {
			claude = a
		}
	}
	env := claude.env
	claude.env = func(m *modelserver.Server, home string) map[string]string {
		e := env(m, home)
		delete(e, "ANTHROPIC_API_KEY")
		return e
	}
	w := newWorld(t, claude, modelserver.Say("never asked"))
	sid := w.createSession()
	w.prompt(sid, "hello", "p1")
	turn := w.waitTurn(sid, "p1")
	if e, _ := turn["error"].(map[string]any); turn["state"] != "failed" || e["code"] != "agent_auth_required" {
		t.Fatalf("first prompt without a key: got %v, want failed agent_auth_required", turn)
	}
	_, m := w.do("GET", "/agents", nil)
	var c map[string]any
	as, _ := m["agents"].([]any)
	for _, x := range as {
		if a, _ := x.(map[string]any); a["id"] == "claude" {
			c, _ = a["credentials"].(map[string]any)
		}
	}
	if c["status"] != "required" || c["stage"] != "prompt" || c["sessionId"] != sid {
		t.Errorf("GET /agents credentials after the prompt: got %v, want required at prompt in %s", c, sid)
	}
	code, s := w.do("POST", "/session", map[string]any{"agentProfileId": "claude", "cwd": w.cwd})
	if code != http.StatusCreated {
		t.Fatalf("second create: got %d %v, want 201 (a start cannot tell)", code, s)
	}
	if c, _ := s["credentials"].(map[string]any); c["status"] != "required" || c["stage"] != "prompt" {
		t.Errorf("second create answer: got credentials %v, want required at prompt", s["credentials"])
	}
}
