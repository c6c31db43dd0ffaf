package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// frameData is an event frame's payload.
func frameData(t *testing.T, f sseFrame) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(f.Data), &m); err != nil {
		t.Fatalf("event %s: %v", f.Event, err)
	}
	return m
}

// inboxKinds is the kinds of the inbox's items of session sid.
func (d *daemon) inboxKinds(sid string) []string {
	d.t.Helper()
	items, _ := d.inbox(50)
	var kinds []string
	for _, it := range items {
		if s, _ := it["session"].(map[string]any); s["id"] == sid {
			kinds = append(kinds, it["kind"].(string))
		}
	}
	return kinds
}

// TestBudget (issue 33): a session's token budget stops a looping turn:
// budget.exceeded, the turn cancelled with reason budget_exceeded, an
// inbox item; nothing new runs (prompt and continue refused with
// budget_exceeded) until the budget is raised, then the stopped turn is
// continued. A turn past its time is stopped the same way. The budget
// outlives a restart, and every view is the log's projection.
func TestBudget(t *testing.T) {
	opts := daemonOptions{agentsYAML: profilesYAML(t, agentProfile{id: "capped", stateDir: t.TempDir()}) +
		"    budget:\n      maxTokens: 5000\n      stallSeconds: 300\n"}
	d := startDaemon(t, opts)
	agents := list(d.do("GET", "/agents", nil).JSON(t), "agents")
	for _, a := range agents {
		if a["id"] == "capped" {
			if got, _ := json.Marshal(a["budget"]); string(got) != `{"maxTokens":5000,"stallSeconds":300}` {
				t.Errorf("the capped profile's budget: got %s", got)
			}
		}
	}
	// The session's own budget over its profile's.
	sid, _ := d.createSession(map[string]any{"agentProfileId": "capped", "budget": map[string]any{"maxTokens": 1000}})
	if got, _ := json.Marshal(d.session(sid)["budget"]); string(got) != `{"maxTokens":1000,"stallSeconds":300}` {
		t.Errorf("the session's budget: got %s, want its own maxTokens over its profile's", got)
	}
	turn := d.waitTurn(sid, d.prompt(sid, "/loop 0 10", "loop1"))
	errOf, _ := turn["error"].(map[string]any)
	if turn["state"] != "cancelled" || errOf["code"] != "budget_exceeded" || !strings.Contains(errOf["message"].(string), "of its budget of 1000") {
		t.Fatalf("the looping turn: got %v, want cancelled with error budget_exceeded", turn)
	}
	usage, _ := d.session(sid)["usage"].(map[string]any)
	if tokens, _ := usage["totalTokens"].(float64); tokens < 1000 || tokens > 1000+10*120 {
		t.Errorf("the session's tokens when stopped: got %v, want 1000 to 2200 (stopped at the report that reached 1000)", usage["totalTokens"])
	}
	frames := d.sessionEvents(sid)
	exceeded := ofType(frames, "budget.exceeded")
	if len(exceeded) != 1 {
		t.Fatalf("budget.exceeded events: got %d, want 1", len(exceeded))
	}
	if p := frameData(t, exceeded[0]); p["limit"] != "tokens" || p["promptId"] != "loop1" {
		t.Errorf("budget.exceeded: got %v, want limit tokens of turn loop1", p)
	}
	if c := ofType(frames, "turn.cancelled"); len(c) != 1 || frameData(t, c[0])["reason"] != "budget_exceeded" {
		t.Errorf("turn.cancelled: got %v, want one with reason budget_exceeded", c)
	}
	if got := d.inboxKinds(sid); len(got) != 1 || got[0] != "budget_exceeded" {
		t.Errorf("inbox: got %v, want the budget_exceeded item", got)
	}
	// Nothing new runs while the session is over its budget.
	r := d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": []map[string]any{{"type": "text", "text": "/echo more"}}})
	if p := r.JSON(t); r.Status != http.StatusConflict || p["code"] != "budget_exceeded" || p["limit"] != "tokens" {
		t.Errorf("a prompt over the budget: got %d %s, want 409 budget_exceeded", r.Status, r.Body)
	}
	if st := d.status(sid); st["overBudget"] != "tokens" || st["budget"] == nil {
		t.Errorf("/status over the budget: got overBudget %v budget %v, want tokens and the budget", st["overBudget"], st["budget"])
	}
	if reason := checkDeclined(t, "continue over the budget", d.continueSession(sid, nil)); reason != "budget_exceeded" {
		t.Errorf("continue over the budget: got reason %q, want budget_exceeded", reason)
	}
	if ctx := recoveryOf(t, d.recoveryContext(sid), "recovery"); ctx["reason"] != "budget_exceeded" || ctx["promptId"] != "loop1" || ctx["interruptReason"] != "budget_exceeded" {
		t.Errorf("the recovery plan over the budget: got %v", ctx)
	}
	// The plan pushed says the same as the one asked for.
	if pushed := lastRecoveryEvent(t, d.sessionEvents(sid), sid); pushed["reason"] != "budget_exceeded" || pushed["canContinue"] != false {
		t.Errorf("the recovery plan pushed over the budget: got %v, want reason budget_exceeded", pushed)
	}

	// Raised, the stopped turn is continued.
	r = d.do("PATCH", "/session/"+sid, map[string]any{"budget": map[string]any{"maxTokens": 100000, "maxTurnSeconds": 1}})
	if got, _ := json.Marshal(r.JSON(t)["budget"]); r.Status != http.StatusOK || string(got) != `{"maxTokens":100000,"maxTurnSeconds":1}` {
		t.Fatalf("PATCH the budget: got %d %s", r.Status, r.Body)
	}
	if got := d.inboxKinds(sid); len(got) != 1 || got[0] != "budget_exceeded" {
		t.Errorf("inbox once raised: got %v, want the stopped turn still waiting to be continued", got)
	}
	if st := d.status(sid); st["overBudget"] != nil {
		t.Errorf("/status once raised: got overBudget %v, want none", st["overBudget"])
	}
	d.waitFor("the plan pushed once raised to allow the continuation", func() bool {
		return lastRecoveryEvent(t, d.sessionEvents(sid), sid)["canContinue"] == true
	})
	r = d.continueSession(sid, map[string]any{"promptId": "more"})
	if r.Status != http.StatusAccepted {
		t.Fatalf("continue once raised: got %d %s, want 202", r.Status, r.Body)
	}
	if got := d.waitTurn(sid, "more"); got["state"] != "completed" || got["continuesPromptId"] != "loop1" {
		t.Errorf("the continuation: got %v, want completed, continuing loop1", got)
	}
	if got := d.inboxKinds(sid); len(got) != 0 {
		t.Errorf("inbox after the continuation: got %v, want nothing", got)
	}

	// A turn that runs past its time is stopped for it.
	turn = d.waitTurn(sid, d.prompt(sid, "/loop 0 50", "long"))
	if errOf, _ := turn["error"].(map[string]any); turn["state"] != "cancelled" || errOf["code"] != "budget_exceeded" {
		t.Fatalf("the long turn: got %v, want cancelled for its budget", turn)
	}
	exceeded = ofType(d.sessionEvents(sid), "budget.exceeded")
	if len(exceeded) != 2 || frameData(t, exceeded[1])["limit"] != "turnDuration" {
		t.Errorf("budget.exceeded: got %v, want a second one for the turn's duration", exceeded)
	}
	// Its time is the turn's: the next turn runs.
	if got := d.waitTurn(sid, d.prompt(sid, "/echo next", "")); got["state"] != "completed" {
		t.Errorf("the turn after: got %v, want completed", got)
	}
	d.checkOneTruth(sid)

	d = d.restart(opts)
	if got, _ := json.Marshal(d.session(sid)["budget"]); string(got) != `{"maxTokens":100000,"maxTurnSeconds":1}` {
		t.Errorf("after a restart, the session's budget: got %s", got)
	}
	// Lowered below what was used, nothing new runs.
	d.do("PATCH", "/session/"+sid, map[string]any{"budget": map[string]any{"maxTokens": 10}})
	if r := d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": []map[string]any{{"type": "text", "text": "/echo more"}}}); r.Status != http.StatusConflict {
		t.Errorf("a prompt over a lowered budget: got %d %s, want 409", r.Status, r.Body)
	}
	for _, bad := range []map[string]any{{"maxTokens": -1}, {"maxCost": map[string]any{"amount": 1, "currency": "dollars"}}, {"maxCost": map[string]any{"amount": 0, "currency": "USD"}}, {"maxTurns": 3}} {
		if r := d.do("PATCH", "/session/"+sid, map[string]any{"budget": bad}); r.Status != http.StatusBadRequest {
			t.Errorf("PATCH budget %v: got %d %s, want 400", bad, r.Status, r.Body)
		}
	}
	if r := d.do("POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": t.TempDir(), "budget": map[string]any{"stallSeconds": -5}}); r.Status != http.StatusBadRequest {
		t.Errorf("a session with a negative budget: got %d %s, want 400", r.Status, r.Body)
	}
	d.checkOneTruth(sid)
}

// TestStallWatchdog (issue 33): a running turn silent for the session's
// stallSeconds gets turn.stalled (once; it stops nothing) and an inbox
// item; its agent's output ends the stall (turn.stall_ended), and a
// cancel ends the stalled turn.
func TestStallWatchdog(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(map[string]any{"budget": map[string]any{"stallSeconds": 1}})
	// A chunk, 2.5 s of silence, a chunk.
	if got := d.waitTurn(sid, d.prompt(sid, "/stream 2 1 2500", "quiet")); got["state"] != "completed" {
		t.Fatalf("the quiet turn: got %v, want completed (the watchdog stops nothing)", got)
	}
	var seq []string
	for _, f := range d.sessionEvents(sid) {
		switch f.Event {
		case "turn.stalled", "turn.stall_ended", "turn.completed":
			seq = append(seq, f.Event)
			if f.Event == "turn.stalled" {
				if p := frameData(t, f); p["seconds"] != float64(1) || p["promptId"] != "quiet" {
					t.Errorf("turn.stalled: got %v", p)
				}
			}
		}
	}
	if strings.Join(seq, " ") != "turn.stalled turn.stall_ended turn.completed" {
		t.Errorf("events: got %v, want turn.stalled once, then turn.stall_ended, then turn.completed", seq)
	}
	// A turn that never answers: stalled, in the inbox until cancelled.
	pid := d.prompt(sid, "/wait", "mute")
	d.waitFor("turn.stalled", func() bool {
		return len(ofType(d.sessionEvents(sid), "turn.stalled")) == 2
	})
	if got := d.inboxKinds(sid); len(got) != 1 || got[0] != "stalled_turn" {
		t.Errorf("inbox: got %v, want the stalled turn", got)
	}
	if r := d.do("POST", "/session/"+sid+"/cancel", nil); r.Status != http.StatusOK {
		t.Fatalf("cancel: got %d %s", r.Status, r.Body)
	}
	if got := d.waitTurn(sid, pid); got["state"] != "cancelled" {
		t.Errorf("the stalled turn: got %v, want cancelled", got)
	}
	if got := d.inboxKinds(sid); len(got) != 0 {
		t.Errorf("inbox after the cancel: got %v, want nothing", got)
	}
	d.checkOneTruth(sid)
}
