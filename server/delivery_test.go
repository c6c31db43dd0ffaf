package server_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/events"
)

// TestContinueDeliveredPrompt: the daemon stops after the agent received a
// prompt and before it answered anything (the demo agent records a prompt
// on receipt, as claude-agent-acp does). The turn records the delivery,
// the plan says so, and the continuation asks the agent to answer the
// request it holds without sending it again: the agent never gets the same
// request as a second user turn. (The prompt the agent never received is
// sent again: TestContinueInterruptedPrompt.)
func TestContinueDeliveredPrompt(t *testing.T) {
	cases := []struct {
		name     string
		flags    []string
		strategy string
	}{
		{"restored by session/resume", nil, "native_resume"},
		{"restored by session/load, whose replay holds the prompt", []string{"--no-resume"}, "native_load"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stateDir := t.TempDir()
			yaml := profilesYAML(t, agentProfile{id: "held", stateDir: stateDir, flags: tc.flags})
			d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: yaml})
			sid, _ := d.createSession(map[string]any{"agentProfileId": "held"})
			d.prompt(sid, "/wait", "p1")
			d.waitFor("the prompt delivered to the agent", func() bool { return d.turn(sid, "p1")["deliveredAt"] != nil })
			// Delivered is written to the agent's stdin; the case is an
			// agent that also read and recorded it before the daemon
			// stopped (one stopped before it read it replays no such
			// prompt, and the history goes with the continuation).
			d.waitFor("the agent to record the prompt", func() bool { return dirHolds(t, stateDir, `/wait`) })
			d = d.restart(daemonOptions{agentsYAML: yaml})

			rec := recoveryOf(t, d.recoveryContext(sid), "recovery")
			checkRecovery(t, "context", rec, wantRecovery{kind: "interrupted_prompt", canContinue: true, promptID: "p1", interrupt: "daemon_restart"})
			if rec["promptDelivered"] != true || !strings.Contains(rec["notice"].(string), "after the agent received it") {
				t.Errorf("plan: got promptDelivered %v notice %q, want true and a notice saying the agent received it", rec["promptDelivered"], rec["notice"])
			}
			before := len(d.sentPrompts(sid))
			checkAccepted(t, "continue", d.continueSession(sid, map[string]any{"promptId": "c1"}), d.recoveryContext(sid)["eventEpoch"].(string))
			d.waitFor("the continuation sent to the agent", func() bool { return len(d.sentPrompts(sid)) > before })
			sent := d.sentPrompts(sid)[before:]
			if len(sent) != 1 || strings.Contains(sent[0], "/wait") || !strings.Contains(sent[0], "not repeated here") {
				t.Fatalf("prompts sent to the agent by the continuation: got %q, want one that asks for the answer without repeating %q", sent, "/wait")
			}
			if turn := d.waitTurn(sid, "c1"); turn["state"] != "completed" || turn["continuesPromptId"] != "p1" {
				t.Errorf("continuation: got %v, want completed, continuing p1", turn)
			}
			var strategies []any
			for _, f := range ofType(d.sessionEvents(sid), events.SessionResumed) {
				strategies = append(strategies, f.JSON(t)["strategy"])
			}
			if len(strategies) != 1 || strategies[0] != tc.strategy {
				t.Errorf("session.resumed strategies: got %v, want [%s]", strategies, tc.strategy)
			}
		})
	}
}

// dirHolds reports whether a file under dir contains s.
func dirHolds(t *testing.T, dir, s string) bool {
	t.Helper()
	found := false
	_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || found {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), s) {
			found = true
		}
		return nil
	})
	return found
}
