package crash_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAutoContinueAfterAgentCrash: a session that opted in to automatic
// continuation has its turn continued once by itself after the agent
// crashed (/crash: exit code 3 mid-turn), audited by one
// session.auto_continued naming the reason, with the continuation prompt
// the user would have had; a session that did not opt in waits for the
// user, and a cancelled turn is never continued.
func TestAutoContinueAfterAgentCrash(t *testing.T) {
	w := newWorld(t, profile{id: "demo"})
	w.start()
	create := func(auto bool) string {
		t.Helper()
		code, s := w.do(http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": t.TempDir(), "autoContinue": auto})
		if code != http.StatusCreated || (s["autoContinue"] == true) != auto {
			t.Fatalf("create: got %d %v", code, s)
		}
		return s["id"].(string)
	}
	auto, manual := create(true), create(false)
	for _, sid := range []string{auto, manual} {
		w.prompt(sid, "/crash", "p1")
		if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" || turn["interruptReason"] != "agent_exited" {
			t.Fatalf("turn p1: got %v, want interrupted by the agent's exit", turn)
		}
	}
	// The continuation is admitted once the interruption's report is
	// recorded, a moment after the interruption.
	w.waitFor("the automatic continuation", func() bool {
		code, _ := w.do(http.MethodGet, "/session/"+auto+"/turns/auto-continue:p1", nil)
		return code == http.StatusOK
	})
	cont := w.waitTurn(auto, "auto-continue:p1")
	if cont["state"] != "completed" || cont["kind"] != "continue" || cont["continuesPromptId"] != "p1" {
		t.Errorf("the automatic continuation: got %v, want a completed continue of p1", cont)
	}
	if said := w.agentText(auto)["auto-continue:p1"]; !strings.HasPrefix(said, continuationAnswer) {
		t.Errorf("the automatic continuation's answer: got %q, want the answer to a continuation prompt", said)
	}
	var audits []map[string]any
	for _, f := range w.replay(auto) {
		if f.Event == "session.auto_continued" {
			audits = append(audits, f.JSON(t))
		}
	}
	if len(audits) != 1 || audits[0]["promptId"] != "auto-continue:p1" || audits[0]["continuesPromptId"] != "p1" || audits[0]["reason"] != "agent_exited" {
		t.Errorf("session.auto_continued events: got %v, want one for p1, reason agent_exited", audits)
	}
	if rec := w.sessionContext(auto)["recovery"].(map[string]any); rec["kind"] != "clean" {
		t.Errorf("recovery after the automatic continuation: got %v, want clean", rec["kind"])
	}

	// Not opted in: the interruption waits for the user.
	time.Sleep(time.Second) // the report's lookup and a would-be continuation
	turns := list(w.transcript(manual), "turns")
	if len(turns) != 1 {
		t.Errorf("turns of the session that did not opt in: got %d, want only p1", len(turns))
	}
	if rec := w.sessionContext(manual)["recovery"].(map[string]any); rec["kind"] != "interrupted_turn" || rec["canContinue"] != true {
		t.Errorf("recovery without opt-in: got %v, want interrupted_turn, continuable", rec)
	}

	// A cancel is the user's doing: never continued by itself.
	w.prompt(auto, "/hang", "p2")
	w.waitFor("p2 to run", func() bool { return w.turn(auto, "p2")["state"] == "running" })
	if code, m := w.do(http.MethodPost, "/session/"+auto+"/cancel", nil); code != http.StatusOK {
		t.Fatalf("cancel: got %d %v", code, m)
	}
	if turn := w.waitTurn(auto, "p2"); turn["state"] != "cancelled" {
		t.Fatalf("p2: got %v, want cancelled", turn)
	}
	time.Sleep(time.Second)
	if code, _ := w.do(http.MethodGet, "/session/"+auto+"/turns/auto-continue:p2", nil); code != http.StatusNotFound {
		t.Errorf("a cancelled turn was continued automatically (GET its continuation: %d)", code)
	}
}
