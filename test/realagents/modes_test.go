package realagents_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// TestClaudeModesAndCommands: claude-agent-acp announces its permission
// modes (default, acceptEdits, plan, bypassPermissions) and its slash
// commands; a mode set through the API is the mode the agent reports, and
// the next turn still runs.
func TestClaudeModesAndCommands(t *testing.T) {
	a := agents[slices.IndexFunc(agents, func(a agent) bool { return a.id == "claude" })]
	w := newWorld(t, a, modelserver.Say("ok"))
	sid := w.createSession()
	w.prompt(sid, "Say ok (real-agent modes test).", "p1")
	if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
		t.Fatalf("p1: got %v, want completed", turn["state"])
	}
	_, ctx := w.do("GET", "/session/"+sid+"/context", nil)
	var modes []string
	for _, m := range list(ctx, "availableModes") {
		modes = append(modes, m["id"].(string))
	}
	if !slices.Contains(modes, "plan") || !slices.Contains(modes, "default") {
		t.Fatalf("availableModes: got %v, want claude's (default, plan, ...)", modes)
	}
	if n := len(list(ctx, "availableCommands")); n < 5 {
		t.Errorf("availableCommands: got %d, want claude's slash commands (about 25)", n)
	}
	status, body := w.do("PUT", "/session/"+sid+"/mode", map[string]any{"modeId": "plan"})
	if status != http.StatusOK || body["applied"] != true {
		t.Fatalf("set mode plan: got %d %v, want 200 applied", status, body)
	}
	status, body = w.do("PUT", "/session/"+sid+"/mode", map[string]any{"modeId": "no-such-mode"})
	if status != http.StatusBadRequest || body["code"] != "unknown_mode" {
		t.Errorf("unknown mode: got %d %v, want 400 unknown_mode", status, body)
	}
	w.prompt(sid, "Say ok again.", "p2")
	if turn := w.waitTurn(sid, "p2"); turn["state"] != "completed" {
		t.Fatalf("p2 in plan mode: got %v, want completed", turn["state"])
	}
	// What the agent itself last reported (current_mode_update, or the
	// mode state of its answers) is what the context shows.
	if _, ctx = w.do("GET", "/session/"+sid+"/context", nil); ctx["currentMode"] != "plan" {
		t.Errorf("currentMode after set_mode: got %v, want plan", ctx["currentMode"])
	}
	var reported bool
	for _, e := range w.log(sid) {
		if e.Type == "session.options_changed" && e.Data["currentMode"] == "plan" {
			reported = true
		}
	}
	if !reported {
		t.Error("no session.options_changed with currentMode plan in the session's log")
	}
}
