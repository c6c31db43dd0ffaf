package crash_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent retired because it lost its session (issue 28 item 2) is
// stopped off the session's actor: it may take its whole stop grace to
// exit, as an agent that finishes its work on SIGTERM does. What comes
// meanwhile (a continue, a resume, a daemon restart) must not fall into
// that stopping agent.

// lingeringWorld is a world whose demo agent lingers after it is told to
// stop (lingeringEntry).
func lingeringWorld(t *testing.T) *world {
	t.Helper()
	w := hostedWorld(t)
	w.writeAgentsYAML("agents:\n" + w.lingeringEntry("demo"))
	return w
}

// lingeringEntry is the agents.yaml entry of profile id, a demo agent
// that lingers after it is told to stop: its shell goes on when the agent
// ends on stdin's end, and ignores SIGTERM, so the agent's stop takes its
// grace, until SIGKILL.
func (w *world) lingeringEntry(id string) string {
	script := "trap '' TERM; " + w.bin + " demo-agent --state-dir " + w.stateDir(id) + "; sleep 60"
	args, _ := json.Marshal([]string{"-c", script, "lingering-agent"})
	// The wrapper runs tetherd: its sandbox must show it (the state dir
	// is the agent's own, as the harness's profiles have it).
	sb, _ := json.Marshal(map[string][]string{"writable": {w.stateDir(id)}, "readable": {w.bin}})
	return "  - id: " + id + "\n    command: /bin/sh\n    args: " + string(args) + "\n    sandbox: " + string(sb) + "\n"
}

// writeAgentsYAML replaces the daemon's agents.yaml with yaml; the next
// daemon start reads it.
func (w *world) writeAgentsYAML(yaml string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.dir, "agents.yaml"), []byte(yaml), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// demoAgentsIn lists the demo agents themselves (not their lingering
// shells) running in cwd.
func (w *world) demoAgentsIn(cwd string) []procInfo {
	var out []procInfo
	for _, p := range w.agentsIn(cwd) {
		if strings.HasPrefix(p.cmd, w.bin+" demo-agent") {
			out = append(out, p)
		}
	}
	return out
}

// TestRetiredAgentStillStopping: on the detached host, the agent loses its
// session mid-tool with a prompt queued behind (/lose-session); the
// session retires it, and the agent's stop is under way (its stdin is
// closed, the demo agent ended, its shell lingers for the grace) when the
// user continues, resumes or prompts, at once or after tetherd was killed.
// The continuation and the queued prompts complete on a new agent, in
// order. Before the fix, a continue or resume at once answered 502
// agent_start_failed ("already has an agent on executor host"); after a
// kill -9 the next daemon attached to the stopping agent and sent it the
// continuation and the queued prompt, which both failed ("file already
// closed").
func TestRetiredAgentStillStopping(t *testing.T) {
	t.Parallel() // it mostly waits (a grace, a cut): beside the others
	for _, tc := range []struct {
		name    string
		restart bool
		// next is what the user does: continue, resume then continue, or
		// prompt (which runs the held queue first).
		next string
		// order is the turns started after the interrupted p1.
		order string
	}{
		{"continue at once", false, "continue", "c1,q1"},
		{"resume at once", false, "resume", "c1,q1"},
		{"continue after kill -9", true, "continue", "c1,q1"},
		{"resume after kill -9", true, "resume", "c1,q1"},
		{"prompt after kill -9", true, "prompt", "q1,c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := lingeringWorld(t)
			w.start()
			sid, cwd := w.createSessionOn("demo", "detached")
			fol := w.follow(sid)
			w.prompt(sid, "/echo warm", "p0")
			w.waitTurn(sid, "p0")
			// The capability probe's agent lingers too; it is gone before
			// anything is killed, so that no daemon leaves it behind.
			w.waitFor("the probe's agent to end", func() bool {
				for _, p := range w.processes("demo-agent") {
					if p.cwd != cwd {
						return false
					}
				}
				return true
			})
			w.prompt(sid, "/lose-session", "p1")
			w.prompt(sid, "/echo queued", "q1")
			if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" || turn["interruptReason"] != "agent_session_lost" {
				t.Fatalf("p1: got state %v reason %v, want interrupted, agent_session_lost", turn["state"], turn["interruptReason"])
			}
			// The stop has reached the agent: it ended, its shell lingers.
			w.waitFor("the retired demo agent to end", func() bool { return len(w.demoAgentsIn(cwd)) == 0 })
			if len(w.agentsIn(cwd)) == 0 {
				t.Fatal("the retired agent's shell is gone already; the test needs it still stopping")
			}
			if tc.restart {
				w.kill9()
				w.start()
			}
			switch tc.next {
			case "resume":
				if code, m := w.do(http.MethodPost, "/session/"+sid+"/resume", nil); code != http.StatusOK {
					t.Fatalf("resume: got %d %v, want 200", code, m)
				}
				fallthrough
			case "continue":
				if code, m := w.do(http.MethodPost, "/session/"+sid+"/continue", map[string]any{"promptId": "c1"}); code != http.StatusAccepted {
					t.Fatalf("continue: got %d %v, want 202", code, m)
				}
			case "prompt":
				w.prompt(sid, "/echo new", "c1")
			}
			for _, id := range []string{"c1", "q1"} {
				if turn := w.waitTurn(sid, id); turn["state"] != "completed" {
					t.Errorf("turn %s: got state %v error %v, want completed", id, turn["state"], turn["error"])
				}
			}
			var started []string
			for _, f := range w.replay(sid) {
				if f.Event == "turn.started" {
					started = append(started, f.JSON(t)["promptId"].(string))
				}
			}
			if got, want := strings.Join(started, ","), "p0,p1,"+tc.order; got != want {
				t.Errorf("turn.started order: got %s, want %s", got, want)
			}
			if said := w.agentText(sid)["q1"]; said != "queued" {
				t.Errorf("q1: agent said %q, want %q", said, "queued")
			}
			checkNoErrorLogged(t, "tetherd", w.daemonLog())
			w.checkFollowed(fol, sid)
		})
	}
}
