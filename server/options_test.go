package server_test

import (
	"net/http"
	"testing"
)

// TestSessionModeAndConfig sets a mode and a config option through the API
// on the demo agent, checks the agent itself holds them, and that they
// survive a daemon restart (a fresh agent process starts in its defaults)
// by being reapplied after session/resume or session/load; a choice made
// while no agent runs is stored and applied at the next start.
func TestSessionModeAndConfig(t *testing.T) {
	cases := []struct {
		name    string
		flags   []string
		restore string // the ACP method that restores the session
	}{
		{"resume", nil, "session/resume"},
		{"load", []string{"--no-resume"}, "session/load"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prof := agentProfile{id: "modes", stateDir: t.TempDir(), flags: tc.flags}
			d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
			sid, _ := d.createSession(map[string]any{"agentProfileId": "modes"})
			d.waitTurn(sid, d.prompt(sid, "/echo hi", "p1"))

			ctx := d.do("GET", "/session/"+sid+"/context", nil).JSON(t)
			if ctx["currentMode"] != "default" || len(list(ctx, "availableModes")) != 3 {
				t.Fatalf("context before: got currentMode %v, availableModes %v; want default and 3 modes", ctx["currentMode"], ctx["availableModes"])
			}
			commands := map[string]bool{}
			for _, c := range list(ctx, "availableCommands") {
				commands[c["name"].(string)] = true
			}
			if !commands["options"] || !commands["echo"] {
				t.Errorf("availableCommands: got %v, want the demo agent's (echo, options, ...)", ctx["availableCommands"])
			}
			if got := currentValue(t, ctx, "model"); got != "demo-fast" {
				t.Fatalf("model before: got %v, want demo-fast", got)
			}

			for _, bad := range []struct {
				name, path string
				body       map[string]any
				code       string
			}{
				{"unknown mode", "/mode", map[string]any{"modeId": "nope"}, "unknown_mode"},
				{"unknown option", "/config/bogus", map[string]any{"value": "x"}, "unknown_config_option"},
				{"value not offered", "/config/model", map[string]any{"value": "nope"}, "invalid_config_value"},
				{"wrong type", "/config/model", map[string]any{"value": true}, "invalid_config_value"},
			} {
				r := d.do("PUT", "/session/"+sid+bad.path, bad.body)
				if r.Status != http.StatusBadRequest || r.JSON(t)["code"] != bad.code {
					t.Errorf("%s: got %d %s, want 400 %s", bad.name, r.Status, r.Body, bad.code)
				}
			}

			events := d.stream("/session/"+sid+"/events?cursor="+ctx["cursor"].(string), nil)
			r := d.do("PUT", "/session/"+sid+"/mode", map[string]any{"modeId": "plan"})
			if r.Status != http.StatusOK || r.JSON(t)["applied"] != true {
				t.Fatalf("set mode: got %d %s, want 200 applied", r.Status, r.Body)
			}
			if got := r.JSON(t)["context"].(map[string]any)["currentMode"]; got != "plan" {
				t.Errorf("set mode: context currentMode got %v, want plan", got)
			}
			changed := events.Until(func(f sseFrame) bool {
				return f.Event == "session.options_changed" && f.JSON(t)["currentMode"] == "plan"
			})
			if len(changed) == 0 {
				t.Error("no session.options_changed with currentMode plan on the stream")
			}
			events.Close()
			r = d.do("PUT", "/session/"+sid+"/config/model", map[string]any{"value": "demo-smart"})
			if r.Status != http.StatusOK || r.JSON(t)["applied"] != true {
				t.Fatalf("set model: got %d %s, want 200 applied", r.Status, r.Body)
			}
			if got := currentValue(t, r.JSON(t)["context"].(map[string]any), "model"); got != "demo-smart" {
				t.Errorf("set model: context model got %v, want demo-smart", got)
			}
			if got := agentReply(t, d, sid, d.waitTurnID(sid, d.prompt(sid, "/options", "p2"))); got != "mode=plan model=demo-smart" {
				t.Fatalf("agent after set: got %q, want mode=plan model=demo-smart", got)
			}

			// A new agent process knows nothing of the choice: the daemon
			// gives it again after the restore, before the prompt runs.
			d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
			if got := agentReply(t, d, sid, d.waitTurnID(sid, d.prompt(sid, "/options", "p3"))); got != "mode=plan model=demo-smart" {
				t.Fatalf("agent after restore: got %q, want mode=plan model=demo-smart", got)
			}
			if n := d.Sent.count(sid, tc.restore); n != 1 {
				t.Errorf("%s sent %d times, want 1", tc.restore, n)
			}
			if d.Sent.count(sid, "session/set_mode") != 1 || d.Sent.count(sid, "session/set_config_option") != 1 {
				t.Errorf("after restore: sent %v, want one set_mode and one set_config_option", d.Sent.methods(sid))
			}

			// Chosen while no agent runs: stored, applied at the next start.
			d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
			r = d.do("PUT", "/session/"+sid+"/mode", map[string]any{"modeId": "auto"})
			if r.Status != http.StatusOK || r.JSON(t)["applied"] != false {
				t.Fatalf("set mode while stopped: got %d %s, want 200 applied false", r.Status, r.Body)
			}
			choices := r.JSON(t)["context"].(map[string]any)["choices"].(map[string]any)
			if choices["mode"] != "auto" || choices["config"].(map[string]any)["model"] != "demo-smart" {
				t.Errorf("choices: got %v, want mode auto and model demo-smart", choices)
			}
			if got := agentReply(t, d, sid, d.waitTurnID(sid, d.prompt(sid, "/options", "p4"))); got != "mode=auto model=demo-smart" {
				t.Fatalf("agent after a choice made while stopped: got %q, want mode=auto model=demo-smart", got)
			}

			if r := d.do("DELETE", "/session/"+sid, nil); r.Status >= 300 {
				t.Fatalf("close: got %d %s", r.Status, r.Body)
			}
			if r := d.do("PUT", "/session/"+sid+"/mode", map[string]any{"modeId": "plan"}); r.Status != http.StatusConflict || r.JSON(t)["code"] != "session_terminal" {
				t.Errorf("set mode on a closed session: got %d %s, want 409 session_terminal", r.Status, r.Body)
			}
		})
	}
}

// waitTurnID waits for the turn to end and returns its prompt id.
func (d *daemon) waitTurnID(sid, pid string) string {
	d.t.Helper()
	if turn := d.waitTurn(sid, pid); turn["state"] != "completed" {
		d.t.Fatalf("turn %s: got %v, want completed", pid, turn["state"])
	}
	return pid
}

// currentValue returns the currentValue of a config option in a context.
func currentValue(t *testing.T, ctx map[string]any, id string) any {
	t.Helper()
	for _, o := range list(ctx, "configOptions") {
		if o["id"] == id {
			return o["currentValue"]
		}
	}
	t.Fatalf("no config option %q in %v", id, ctx["configOptions"])
	return nil
}
