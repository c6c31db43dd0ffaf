package server_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tether/tether/internal/events"
)

// heldQueue leaves a session the way a crash does: turn p1 running (after
// output) with q1 and q2 queued behind it, then restarts the daemon on the
// same data directory. The turn rows stay as the dying daemon left them.
func heldQueue(t *testing.T) (*daemon, string) {
	t.Helper()
	d := startDaemon(t, daemonOptions{leakCheck: true})
	sid, _ := d.createSession(nil)
	d.prompt(sid, "/echo before", "p0")
	d.waitTurn(sid, "p0")
	d.prompt(sid, "/hang", "p1")
	d.waitFor("the agent to answer p1", func() bool {
		for _, m := range list(d.transcript(sid), "messages") {
			if m["promptId"] == "p1" && m["role"] == "agent" {
				return true
			}
		}
		return false
	})
	for _, q := range []struct{ id, text string }{{"q1", "/echo queued one"}, {"q2", "/echo queued two"}} {
		r := d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text(q.text), "promptId": q.id})
		if r.Status != http.StatusAccepted || r.JSON(t)["state"] != "queued" {
			t.Fatalf("prompt %s: got %d %s, want 202 queued", q.id, r.Status, r.Body)
		}
	}
	return d.restart(daemonOptions{}), sid
}

// queuedIDs lists the transcript's queued turns in order.
func queuedIDs(tr map[string]any) []string {
	var out []string
	for _, t := range list(tr, "turns") {
		if t["state"] == "queued" {
			out = append(out, t["promptId"].(string))
		}
	}
	return out
}

// TestQueuedPromptsSurviveRestart: prompts queued behind a turn that a
// restart interrupted are neither lost nor run by themselves: the
// interrupted turn stays the continuation target, the queue stays queued in
// order (transcript and /context), and it runs, in order, after the
// continuation or, without one, before a new prompt.
func TestQueuedPromptsSurviveRestart(t *testing.T) {
	cases := []struct {
		name string
		// release continues the session (or prompts it) and returns the
		// prompt texts the agent must receive, in order.
		release func(t *testing.T, d *daemon, sid string) []string
		// turns are the prompt ids that must end completed.
		turns []string
		// again restarts the daemon once more before checking: a held
		// queue stays whole.
		again bool
	}{
		{
			name: "continue_runs_the_continuation_then_the_queue",
			release: func(t *testing.T, d *daemon, sid string) []string {
				a := checkAccepted(t, "continue", d.continueSession(sid, nil), d.recoveryContext(sid)["eventEpoch"].(string))
				if of := recoveryOf(t, a, "interruption"); of["promptId"] != "p1" {
					t.Errorf("continuation continues %v, want p1", of["promptId"])
				}
				d.waitTurn(sid, a["promptId"].(string))
				return []string{continuationOpening, "/echo queued one", "/echo queued two"}
			},
			turns: []string{"q1", "q2"},
		},
		{
			name: "a_second_restart_keeps_the_queue_held",
			release: func(t *testing.T, d *daemon, sid string) []string {
				a := checkAccepted(t, "continue", d.continueSession(sid, nil), d.recoveryContext(sid)["eventEpoch"].(string))
				d.waitTurn(sid, a["promptId"].(string))
				return []string{continuationOpening, "/echo queued one", "/echo queued two"}
			},
			turns: []string{"q1", "q2"},
			again: true,
		},
		{
			name: "a_new_prompt_runs_after_the_queue_without_continuing",
			release: func(t *testing.T, d *daemon, sid string) []string {
				d.prompt(sid, "/echo new", "n1")
				return []string{"/echo queued one", "/echo queued two", "/echo new"}
			},
			turns: []string{"q1", "q2", "n1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, sid := heldQueue(t)
			if tc.again {
				d = d.restart(daemonOptions{})
			}

			plan := recoveryOf(t, d.recoveryContext(sid), "recovery")
			checkRecovery(t, "plan after the restart", plan, wantRecovery{kind: "interrupted_turn", canContinue: true,
				promptID: "p1", interrupt: "daemon_restart"})
			if got := plan["queuedPromptIds"]; !reflect.DeepEqual(got, []any{"q1", "q2"}) || plan["queueHeld"] != true {
				t.Errorf("plan after the restart: got queuedPromptIds %v queueHeld %v, want [q1 q2] true", got, plan["queueHeld"])
			}
			if got := queuedIDs(d.transcript(sid)); !reflect.DeepEqual(got, []string{"q1", "q2"}) {
				t.Errorf("queued turns in the transcript: got %v, want [q1 q2]", got)
			}
			if p1 := d.turn(sid, "p1"); p1["state"] != "interrupted" {
				t.Errorf("p1 after the restart: got %v, want interrupted", p1["state"])
			}

			// Restoring the agent runs nothing: the queue waits for the user.
			if r := d.do("POST", "/session/"+sid+"/resume", nil); r.Status != http.StatusOK {
				t.Fatalf("resume: got %d %s, want 200", r.Status, r.Body)
			}
			if got := queuedIDs(d.transcript(sid)); !reflect.DeepEqual(got, []string{"q1", "q2"}) {
				t.Errorf("queued turns after the agent was restored: got %v, want [q1 q2]", got)
			}
			if sent := d.sentPrompts(sid); len(sent) != 0 {
				t.Errorf("prompts sent before the user acted: got %q, want none", sent)
			}

			want := tc.release(t, d, sid)
			for _, id := range tc.turns {
				if turn := d.waitTurn(sid, id); turn["state"] != "completed" {
					t.Errorf("turn %s: got %v, want completed", id, turn)
				}
			}
			d.waitIdle(sid)
			sent := d.sentPrompts(sid)
			if len(sent) != len(want) {
				t.Fatalf("prompts the agent received: got %q, want %q", sent, want)
			}
			for i := range want {
				if !strings.Contains(sent[i], want[i]) {
					t.Errorf("prompt %d the agent received: got %q, want one containing %q (all: %q)", i, sent[i], want[i], sent)
				}
			}
			checkRecovery(t, "plan once all ran", recoveryOf(t, d.recoveryContext(sid), "recovery"),
				wantRecovery{kind: "clean", reason: "nothing_to_continue"})
		})
	}
}

// TestWithdrawTurn: only a queued turn can be withdrawn; it ends cancelled
// with stop reason withdrawn (turn.cancelled{reason: withdrawn}) and never
// reaches the agent.
func TestWithdrawTurn(t *testing.T) {
	d, sid := heldQueue(t)
	cases := []struct {
		name, promptID string
		status         int
		code           string
	}{
		{name: "queued_turn_is_withdrawn", promptID: "q1", status: http.StatusOK},
		{name: "withdrawn_turn_again_is_not_queued", promptID: "q1", status: http.StatusConflict, code: "turn_not_queued"},
		{name: "interrupted_turn_is_not_queued", promptID: "p1", status: http.StatusConflict, code: "turn_not_queued"},
		{name: "completed_turn_is_not_queued", promptID: "p0", status: http.StatusConflict, code: "turn_not_queued"},
		{name: "unknown_turn_is_not_found", promptID: "nope", status: http.StatusNotFound, code: "turn_not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := d.do("DELETE", "/session/"+sid+"/turns/"+tc.promptID, nil)
			if r.Status != tc.status {
				t.Fatalf("withdraw %s: got %d %s, want %d", tc.promptID, r.Status, r.Body, tc.status)
			}
			got := r.JSON(t)
			if tc.code != "" {
				if got["code"] != tc.code {
					t.Errorf("withdraw %s: got code %v, want %s", tc.promptID, got["code"], tc.code)
				}
				return
			}
			if got["state"] != "cancelled" || got["stopReason"] != "withdrawn" {
				t.Errorf("withdrawn turn: got %v, want cancelled with stopReason withdrawn", got)
			}
		})
	}
	var withdrawn []map[string]any
	for _, f := range ofType(d.sessionEvents(sid), events.TurnCancelled) {
		if p := f.JSON(t); p["promptId"] == "q1" {
			withdrawn = append(withdrawn, p)
		}
	}
	if len(withdrawn) != 1 || withdrawn[0]["reason"] != "withdrawn" {
		t.Errorf("turn.cancelled events of q1: got %v, want one with reason withdrawn", withdrawn)
	}
	plan := recoveryOf(t, d.recoveryContext(sid), "recovery")
	if !reflect.DeepEqual(plan["queuedPromptIds"], []any{"q2"}) || plan["promptId"] != "p1" || plan["canContinue"] != true {
		t.Errorf("plan after withdrawing q1: got %v, want p1 continuable with q2 queued", plan)
	}
	// Continuing runs the continuation and q2 only.
	a := checkAccepted(t, "continue", d.continueSession(sid, nil), d.recoveryContext(sid)["eventEpoch"].(string))
	d.waitTurn(sid, a["promptId"].(string))
	d.waitTurn(sid, "q2")
	d.waitIdle(sid)
	if sent := d.sentPrompts(sid); len(sent) != 2 || !strings.Contains(sent[0], continuationOpening) || sent[1] != "/echo queued two" {
		t.Errorf("prompts the agent received: got %q, want the continuation then /echo queued two", sent)
	}
}

// POST /cancel?keepQueue=true stops the running turn only: the prompts
// queued behind it stay queued (the Web Shell's Esc) and the next one runs
// once the cancelled turn has ended.
func TestCancelKeepQueueCancelsOnlyTheRunningTurn(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	first := d.prompt(sid, "/hang", "first")
	d.waitTurnState(sid, first, "running")
	if got := d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text("/echo second"), "promptId": "second"}).JSON(t)["state"]; got != "queued" {
		t.Fatalf("second prompt: got %v, want queued", got)
	}
	r := d.do("POST", "/session/"+sid+"/cancel?keepQueue=true", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("cancel: got %d: %s", r.Status, r.Body)
	}
	if res := r.JSON(t); res["cancelled"] != true || res["promptId"] != first || res["dequeued"] != nil {
		t.Errorf("cancel: got %v, want the running turn cancelled and nothing dequeued", res)
	}
	if turn := d.waitTurn(sid, first); turn["state"] != "cancelled" {
		t.Errorf("running turn: got %v, want cancelled", turn["state"])
	}
	second := d.waitTurn(sid, "second")
	if second["state"] != "completed" || second["cancelRequested"] == true {
		t.Errorf("queued turn: got %v, want it run to completion after the cancel", second)
	}
}
