package server_test

import (
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/sessions"
)

// agentProcesses counts the running demo agents whose command line names
// dir (the state dir of one demo-agent profile): the agents themselves,
// not the bubblewrap processes of their sandboxes.
func agentProcesses(t *testing.T, dir string) int {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", "^"+regexp.QuoteMeta(tetherdBinary(t))+" demo-agent .*"+regexp.QuoteMeta(dir)).Output()
	return len(strings.Fields(string(out)))
}

// sessionCount is how many sessions GET /sessions lists.
func (d *daemon) sessionCount() int {
	d.t.Helper()
	r := d.do("GET", "/sessions", nil)
	if r.Status != http.StatusOK {
		d.t.Fatalf("list sessions: got %d: %s", r.Status, r.Body)
	}
	return len(list(r.JSON(d.t), "sessions"))
}

// checkAgentLimit checks a refusal at an agent cap: 503 problem+json with
// code agent_limit_reached, the cap's scope and limit, and Retry-After.
func checkAgentLimit(t *testing.T, what string, r response, scope string, limit int) {
	t.Helper()
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("%s: got %d %s, want 503", what, r.Status, r.Body)
	}
	p := r.JSON(t)
	if p["code"] != "agent_limit_reached" || p["scope"] != scope || p["limit"] != float64(limit) {
		t.Errorf("%s: got code %v scope %v limit %v, want agent_limit_reached %s %d", what, p["code"], p["scope"], p["limit"], scope, limit)
	}
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("%s: no Retry-After header", what)
	}
}

// createRaw posts /session for a profile in a fresh directory.
func (d *daemon) createRaw(profile string, initial string) response {
	d.t.Helper()
	body := map[string]any{"agentProfileId": profile, "cwd": d.t.TempDir()}
	if initial != "" {
		body["initialPrompt"] = text(initial)
	}
	return d.do("POST", "/session", body)
}

func TestAgentCapRefusesNewSessionsAndLeavesNothing(t *testing.T) {
	tests := []struct {
		name      string
		daemonMax int
		capped    agentProfile
		scope     string
		limit     int
	}{
		{name: "daemon-wide cap (--max-agents 2)", daemonMax: 2, capped: agentProfile{id: "capped"}, scope: "daemon", limit: 2},
		{name: "per-profile cap (maxAgents: 2)", capped: agentProfile{id: "capped", maxAgents: 2}, scope: "profile", limit: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.capped.stateDir = t.TempDir()
			other := agentProfile{id: "other", stateDir: t.TempDir()}
			d := startDaemon(t, daemonOptions{leakCheck: true, sessions: sessions.Config{MaxAgents: tt.daemonMax},
				agentsYAML: profilesYAML(t, tt.capped, other)})
			s1, _ := d.createSession(map[string]any{"agentProfileId": "capped", "initialPrompt": text("/echo one")})
			s2, _ := d.createSession(map[string]any{"agentProfileId": "capped"})
			for _, sid := range []string{s1, s2} {
				d.waitFor("agent of "+sid, func() bool { return d.status(sid)["isAgentRunning"] == true })
			}
			before := d.sessionCount()

			for _, initial := range []string{"/echo three", ""} {
				checkAgentLimit(t, "third session, initial prompt "+initial, d.createRaw("capped", initial), tt.scope, tt.limit)
			}
			if got := d.sessionCount(); got != before {
				t.Errorf("sessions after the refusals: got %d, want %d (nothing created)", got, before)
			}
			if got := agentProcesses(t, tt.capped.stateDir); got != 2 {
				t.Errorf("agent processes: got %d, want 2", got)
			}
			if tt.scope == "profile" {
				// Another profile is not held back by this one's cap.
				if r := d.createRaw("other", "/echo other"); r.Status != http.StatusCreated {
					t.Errorf("session of another profile: got %d %s, want 201", r.Status, r.Body)
				}
			}

			// Closing a session gives its slot back.
			if r := d.do("DELETE", "/session/"+s2, nil); r.Status != http.StatusOK {
				t.Fatalf("close: got %d %s", r.Status, r.Body)
			}
			r := d.createRaw("capped", "/echo three")
			if r.Status != http.StatusCreated {
				t.Fatalf("after a close: got %d %s, want 201", r.Status, r.Body)
			}
			s3 := r.JSON(t)["id"].(string)
			tr := d.transcript(s3)
			turns := list(tr, "turns")
			if len(turns) != 1 {
				t.Fatalf("turns of the new session: got %d, want 1", len(turns))
			}
			if turn := d.waitTurn(s3, turns[0]["promptId"].(string)); turn["state"] != "completed" {
				t.Errorf("initial turn: got %v, want completed", turn["state"])
			}
		})
	}
}

func TestAgentCapRefusesPromptResumeAndContinueWithoutSideEffects(t *testing.T) {
	prof := agentProfile{id: "capped", stateDir: t.TempDir()}
	yaml := profilesYAML(t, prof)
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: yaml})
	s1, _ := d.createSession(map[string]any{"agentProfileId": "capped"})
	d.waitTurn(s1, d.prompt(s1, "/echo one", "a1"))
	s2, _ := d.createSession(map[string]any{"agentProfileId": "capped"})
	d.crashTurn(s2, "/crash-in-tool", "b1") // interrupted: continue would start an agent

	// The restarted daemon allows one agent: s1 takes it.
	d = d.restart(daemonOptions{agentsYAML: yaml, sessions: sessions.Config{MaxAgents: 1}})
	d.waitTurn(s1, d.prompt(s1, "/echo two", "a2"))
	before := d.transcript(s2)

	checkAgentLimit(t, "prompt", d.do("POST", "/session/"+s2+"/prompt", map[string]any{"prompt": text("/echo refused"), "promptId": "b2"}), "daemon", 1)
	checkAgentLimit(t, "resume", d.do("POST", "/session/"+s2+"/resume", nil), "daemon", 1)
	checkAgentLimit(t, "continue", d.continueSession(s2, map[string]any{"promptId": "b3"}), "daemon", 1)

	after := d.transcript(s2)
	if got, want := len(list(after, "turns")), len(list(before, "turns")); got != want {
		t.Errorf("turns after the refusals: got %d, want %d (nothing admitted)", got, want)
	}
	if got, want := len(list(after, "messages")), len(list(before, "messages")); got != want {
		t.Errorf("messages after the refusals: got %d, want %d", got, want)
	}
	if r := d.do("GET", "/session/"+s2+"/turns/b2", nil); r.Status != http.StatusNotFound {
		t.Errorf("refused prompt b2: got %d, want 404 (not stored)", r.Status)
	}
	if st := d.status(s2); st["isResumable"] != true || st["needsResume"] != true || st["isAgentRunning"] != false {
		t.Errorf("status of the refused session: got %v, want resumable, needing resume, no agent", st)
	}
	if got := agentProcesses(t, prof.stateDir); got != 1 {
		t.Errorf("agent processes: got %d, want 1", got)
	}

	// Closing s1 frees the slot: the same prompt id is now admitted and runs.
	if r := d.do("DELETE", "/session/"+s1, nil); r.Status != http.StatusOK {
		t.Fatalf("close: got %d %s", r.Status, r.Body)
	}
	if turn := d.waitTurn(s2, d.prompt(s2, "/echo admitted", "b2")); turn["state"] != "completed" {
		t.Errorf("prompt after the close: got %v, want completed", turn["state"])
	}
}

func TestEagerResumeRespectsAgentCap(t *testing.T) {
	prof := agentProfile{id: "capped", stateDir: t.TempDir()}
	yaml := profilesYAML(t, prof)
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: yaml})
	var sids []string
	for i := 0; i < 3; i++ {
		sid, _ := d.createSession(map[string]any{"agentProfileId": "capped"})
		d.waitTurn(sid, d.prompt(sid, "/echo hi", ""))
		sids = append(sids, sid)
	}

	d = d.restart(daemonOptions{agentsYAML: yaml, eager: 4, sessions: sessions.Config{MaxAgents: 1}})
	<-d.EagerDone
	running := 0
	for _, sid := range sids {
		st := d.status(sid)
		if st["isAgentRunning"] == true {
			running++
		} else if st["isResumable"] != true {
			t.Errorf("session %s after eager resume: got %v, want resumable", sid, st)
		}
	}
	if running != 1 {
		t.Errorf("agents restored eagerly: got %d, want 1 (the cap)", running)
	}
	if r := d.do("GET", "/health", nil); r.Status != http.StatusOK {
		t.Errorf("health after eager resume at the cap: got %d", r.Status)
	}
}

func TestIdleAgentIsStoppedAndRestoredByTheNextPrompt(t *testing.T) {
	prof := agentProfile{id: "idler", stateDir: t.TempDir()}
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof),
		sessions: sessions.Config{AgentIdleTimeout: 200 * time.Millisecond, MaxAgents: 1}})
	sid, _ := d.createSession(map[string]any{"agentProfileId": "idler"})
	d.waitTurn(sid, d.prompt(sid, "/echo before", "p1"))

	d.waitFor("the idle agent to stop", func() bool { return d.status(sid)["executorStatus"] == "stopped" })
	st := d.status(sid)
	if st["isAgentRunning"] != false || st["isResumable"] != true || st["needsResume"] != true || st["resumeReason"] != "agent_not_running" {
		t.Errorf("status after the idle stop: got %v, want stopped, resumable, agent_not_running", st)
	}
	if msg, _ := st["errorMessage"].(string); !strings.Contains(msg, "idle") {
		t.Errorf("executor message: got %q, want it to say idle", msg)
	}
	if st["state"] != "WAITING_FOR_INPUT" {
		t.Errorf("session state: got %v, want WAITING_FOR_INPUT", st["state"])
	}
	d.waitFor("the idle agent's process to exit", func() bool { return agentProcesses(t, prof.stateDir) == 0 })

	// The slot is free (MaxAgents 1) and the next prompt restores the
	// agent natively, with its context.
	if turn := d.waitTurn(sid, d.prompt(sid, "/echo after", "p2")); turn["state"] != "completed" {
		t.Fatalf("prompt after the idle stop: got %v, want completed", turn["state"])
	}
	if n := d.Sent.count(sid, "session/resume") + d.Sent.count(sid, "session/load"); n != 1 {
		t.Errorf("native restores after the idle stop: got %d, want 1 (%v)", n, d.Sent.methods(sid))
	}
	if got := d.Sent.count(sid, "session/new"); got != 1 {
		t.Errorf("session/new: got %d, want 1 (the context was restored, not recreated)", got)
	}
}
