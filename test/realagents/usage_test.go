package realagents_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// TestUsageFromTheAgents (issue 33): what a real agent reports of a turn's
// usage, against the scripted model (which answers with token counts),
// shows in the turn's and the session's usage, from the log
// (usage.updated).
func TestUsageFromTheAgents(t *testing.T) {
	forEachAgent(t, func(t *testing.T, a agent) {
		w := prepareWorld(t, a, modelserver.Start(t, modelserver.Say("Done.")))
		w.start()
		t.Cleanup(w.stop)
		sid := w.createSession()
		w.prompt(sid, "Say done.", "p1")
		turn := w.waitTurn(sid, "p1")
		if turn["state"] != "completed" {
			t.Fatalf("the turn: got %v, want completed", turn["state"])
		}
		var reports []string
		for _, e := range w.log(sid) {
			if e.Type == "usage.updated" {
				b, _ := json.Marshal(e.Data["report"])
				reports = append(reports, string(b))
			}
		}
		t.Logf("%s's reports: %v", a.id, reports)
		var u struct {
			InputTokens, OutputTokens, TotalTokens int64
		}
		b, _ := json.Marshal(turn["usage"])
		if err := json.Unmarshal(b, &u); err != nil || u.InputTokens <= 0 && u.TotalTokens <= 0 {
			t.Errorf("the turn's usage: got %s, want its tokens", b)
		}
		_, s := w.do(http.MethodGet, "/session/"+sid, nil)
		var su struct {
			TotalTokens, ContextSize int64
			Cost                     *struct{ Currency string }
		}
		sb, _ := json.Marshal(s["usage"])
		if err := json.Unmarshal(sb, &su); err != nil || su.TotalTokens <= 0 {
			t.Errorf("the session's usage: got %s, want its tokens", sb)
		}
		// claude-agent-acp also reports its context window and the cost
		// (usage_update); qwen only tokens.
		if a.id == "claude" && (su.ContextSize <= 0 || su.Cost == nil || su.Cost.Currency != "USD") {
			t.Errorf("claude's session usage: got %s, want its context window and a cost in USD", sb)
		}
	})
}
