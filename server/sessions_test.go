package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tether/tether/internal/sessions"
)

func TestPromptRecordsStreamedReplyToolCallAndPlan(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	pid := d.prompt(sid, "hello there", "p1")
	if pid != "p1" {
		t.Fatalf("got promptId %q, want p1", pid)
	}
	turn := d.waitTurn(sid, pid)
	if turn["state"] != "completed" || turn["stopReason"] != "end_turn" {
		t.Fatalf("got turn %v, want completed/end_turn", turn)
	}
	tr := d.transcript(sid)
	msgs := list(tr, "messages")
	if len(msgs) < 2 {
		t.Fatalf("got %d messages, want user + agent: %v", len(msgs), msgs)
	}
	if msgs[0]["role"] != "user" || msgs[0]["text"] != "hello there" {
		t.Errorf("got first message %v, want the user's prompt", msgs[0])
	}
	agent := msgs[len(msgs)-1]
	if agent["role"] != "agent" || !strings.Contains(agent["text"].(string), "You said: hello there") {
		t.Errorf("got agent message %v, want the aggregated streamed reply", agent)
	}
	calls := list(tr, "toolCalls")
	if len(calls) != 1 || calls[0]["kind"] != "read" || calls[0]["status"] != "completed" || calls[0]["promptId"] != "p1" {
		t.Fatalf("got tool calls %v, want one completed read for p1", calls)
	}
	if !strings.Contains(string(mustJSON(t, calls[0]["content"])), "hello from the fixture") {
		t.Errorf("got tool content %v, want the README's text", calls[0]["content"])
	}
	plan := list(tr, "plan")
	if len(plan) == 0 {
		t.Fatal("got no plan, want the agent's plan")
	}
	for _, e := range plan {
		if e["status"] != "completed" {
			t.Errorf("got plan entry %v, want completed", e)
		}
	}
	// The session settles after the turn's terminal event; the task follows.
	var s map[string]any
	d.waitFor("session WAITING_FOR_INPUT", func() bool {
		s = d.do("GET", "/session/"+sid, nil).JSON(t)
		return s["state"] == "WAITING_FOR_INPUT"
	})
	task := d.do("GET", "/tasks/"+s["taskId"].(string), nil).JSON(t)
	if task["state"] != "REVIEW" {
		t.Errorf("got task state %v, want REVIEW after the turn", task["state"])
	}
}

func TestInitialPromptRunsAsFirstTurn(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(map[string]any{"initialPrompt": text("/echo first"), "promptId": "init"})
	turn := d.waitTurn(sid, "init")
	if turn["kind"] != "initial" || turn["state"] != "completed" {
		t.Fatalf("got %v, want a completed initial turn", turn)
	}
}

func TestCancelHangingTurnEndsCancelledWithAgentStopReason(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	pid := d.prompt(sid, "/hang", "hang")
	d.waitTurnState(sid, pid, "running")
	d.waitFor("the agent to start hanging", func() bool {
		for _, m := range list(d.transcript(sid), "messages") {
			if m["role"] == "agent" {
				return true
			}
		}
		return false
	})
	r := d.do("POST", "/session/"+sid+"/cancel", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("cancel: got %d: %s", r.Status, r.Body)
	}
	if got := r.JSON(t); got["cancelled"] != true || got["promptId"] != "hang" {
		t.Errorf("got cancel result %v, want cancelled hang", got)
	}
	turn := d.waitTurn(sid, pid)
	if turn["state"] != "cancelled" || turn["stopReason"] != "cancelled" || turn["cancelRequested"] != true {
		t.Fatalf("got %v, want cancelled with the agent's stopReason cancelled", turn)
	}
	// The session stays usable.
	next := d.prompt(sid, "/echo after cancel", "")
	if got := d.waitTurn(sid, next)["state"]; got != "completed" {
		t.Fatalf("got %v after cancel, want completed", got)
	}
}

func TestPermissionRoundTrip(t *testing.T) {
	cases := []struct {
		name        string
		reply       map[string]any
		wantState   string
		wantMessage string
	}{
		{"selected", map[string]any{"optionId": "allow_once"}, "selected", "Permission outcome: selected allow_once"},
		{"cancelled", map[string]any{"outcome": "cancelled"}, "cancelled", "Permission outcome: cancelled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, daemonOptions{})
			sid, _ := d.createSession(nil)
			pid := d.prompt(sid, "/permission", "perm")
			var req map[string]any
			d.waitFor("a pending permission", func() bool {
				p := list(d.transcript(sid), "pendingPermissions")
				if len(p) == 1 {
					req = p[0]
				}
				return len(p) == 1
			})
			if req["promptId"] != "perm" || len(list(req, "options")) != 3 {
				t.Fatalf("got permission %v, want 3 options for perm", req)
			}
			path := "/session/" + sid + "/permission/" + req["id"].(string)
			if r := d.do("POST", path, map[string]any{"optionId": "no_such_option"}); r.Status != http.StatusBadRequest {
				t.Errorf("unknown option: got %d, want 400", r.Status)
			}
			r := d.do("POST", path, tc.reply)
			if r.Status != http.StatusOK || r.JSON(t)["state"] != tc.wantState {
				t.Fatalf("answer: got %d %s, want 200 %s", r.Status, r.Body, tc.wantState)
			}
			if r := d.do("POST", path, tc.reply); r.Status != http.StatusConflict || r.JSON(t)["code"] != "permission_already_resolved" {
				t.Errorf("second answer: got %d %s, want 409 permission_already_resolved", r.Status, r.Body)
			}
			d.waitTurn(sid, pid)
			found := false
			for _, m := range list(d.transcript(sid), "messages") {
				found = found || strings.Contains(m["text"].(string), tc.wantMessage)
			}
			if !found {
				t.Errorf("got no agent message %q", tc.wantMessage)
			}
		})
	}
}

func TestCancelAnswersPendingPermissionCancelled(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	pid := d.prompt(sid, "/permission", "perm")
	var reqID string
	d.waitFor("a pending permission", func() bool {
		p := list(d.transcript(sid), "pendingPermissions")
		if len(p) == 1 {
			reqID = p[0]["id"].(string)
		}
		return reqID != ""
	})
	d.do("POST", "/session/"+sid+"/cancel", nil)
	if got := d.waitTurn(sid, pid)["state"]; got != "cancelled" {
		t.Fatalf("got turn %v, want cancelled", got)
	}
	r := d.do("POST", "/session/"+sid+"/permission/"+reqID, map[string]any{"optionId": "allow_once"})
	if r.Status != http.StatusConflict {
		t.Fatalf("answer after cancel: got %d, want 409", r.Status)
	}
	if got := r.JSON(t)["state"]; got != "cancelled" {
		t.Errorf("got permission state %v, want cancelled", got)
	}
}

func TestQueueingAndMultitask(t *testing.T) {
	d := startDaemon(t, daemonOptions{sessions: sessions.Config{QueueLimit: 1}})
	sid, _ := d.createSession(nil)
	first := d.prompt(sid, "/hang", "first")
	d.waitTurnState(sid, first, "running")

	r := d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text("/echo second"), "promptId": "second"})
	if r.Status != http.StatusAccepted || r.JSON(t)["state"] != "queued" {
		t.Fatalf("second prompt: got %d %s, want 202 queued", r.Status, r.Body)
	}
	r = d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text("/echo third"), "promptId": "third"})
	if r.Status != http.StatusServiceUnavailable || r.JSON(t)["code"] != "prompt_queue_full" {
		t.Fatalf("third prompt: got %d %s, want 503 prompt_queue_full", r.Status, r.Body)
	}
	r = d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text("/echo x"), "multitask": "reject"})
	if r.Status != http.StatusConflict || r.JSON(t)["code"] != "turn_active" {
		t.Fatalf("reject policy: got %d %s, want 409 turn_active", r.Status, r.Body)
	}
	// Cancelling the running turn also drops the queued one.
	res := d.do("POST", "/session/"+sid+"/cancel", nil).JSON(t)
	if q, _ := res["dequeued"].([]any); len(q) != 1 || q[0] != "second" {
		t.Fatalf("got dequeued %v, want [second]", res["dequeued"])
	}
	if got := d.waitTurn(sid, "second")["state"]; got != "cancelled" {
		t.Errorf("got queued turn %v, want cancelled", got)
	}
	d.waitTurn(sid, first)

	// Without a cancel, queued prompts run in order.
	a := d.prompt(sid, "/sleep 300", "a")
	b := d.prompt(sid, "/echo b", "b")
	ta, tb := d.waitTurn(sid, a), d.waitTurn(sid, b)
	if ta["state"] != "completed" || tb["state"] != "completed" {
		t.Fatalf("got %v and %v, want both completed", ta["state"], tb["state"])
	}
	if ta["endedAt"].(string) > tb["startedAt"].(string) {
		t.Errorf("turn b started at %v before a ended at %v", tb["startedAt"], ta["endedAt"])
	}
}

func TestPromptIDIsIdempotent(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	body := map[string]any{"prompt": text("/echo once"), "promptId": "same"}
	var wg sync.WaitGroup
	statuses := make([]int, 5)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = d.do("POST", "/session/"+sid+"/prompt", body).Status
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusAccepted {
			t.Errorf("request %d: got %d, want 202", i, s)
		}
	}
	d.waitTurn(sid, "same")
	r := d.do("POST", "/session/"+sid+"/prompt", body)
	if r.Status != http.StatusAccepted || r.JSON(t)["state"] != "completed" {
		t.Errorf("repeat after completion: got %d %s, want 202 completed", r.Status, r.Body)
	}
	tr := d.transcript(sid)
	if n := len(list(tr, "turns")); n != 1 {
		t.Errorf("got %d turns, want 1", n)
	}
	users := 0
	for _, m := range list(tr, "messages") {
		if m["role"] == "user" {
			users++
		}
	}
	if users != 1 {
		t.Errorf("got %d user messages, want 1", users)
	}
	r = d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text("/echo other"), "promptId": "same"})
	if r.Status != http.StatusConflict || r.JSON(t)["code"] != "prompt_id_conflict" {
		t.Errorf("same id, other prompt: got %d %s, want 409 prompt_id_conflict", r.Status, r.Body)
	}
}

func TestAgentCrashInterruptsTurnAndSessionStaysUsable(t *testing.T) {
	cases := []struct {
		name     string
		prompt   string
		wantCode float64
		wantTool bool
	}{
		{"crash mid-turn", "/crash", 3, false},
		{"crash in tool", "/crash-in-tool", 4, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, daemonOptions{})
			sid, _ := d.createSession(nil)
			pid := d.prompt(sid, tc.prompt, "boom")
			turn := d.waitTurn(sid, pid)
			if turn["state"] != "interrupted" || turn["interruptReason"] != "agent_exited" || turn["exitCode"] != tc.wantCode {
				t.Fatalf("got %v, want interrupted/agent_exited/exit %v", turn, tc.wantCode)
			}
			var s map[string]any
			d.waitFor("the session to settle", func() bool {
				s = d.do("GET", "/session/"+sid, nil).JSON(t)
				return s["state"] == "WAITING_FOR_INPUT"
			})
			ex := s["executor"].(map[string]any)
			if s["state"] != "WAITING_FOR_INPUT" || ex["status"] != "stopped" || ex["exitCode"] != tc.wantCode {
				t.Errorf("got session %v executor %v, want WAITING_FOR_INPUT/stopped/exit %v", s["state"], ex, tc.wantCode)
			}
			if tc.wantTool {
				calls := list(d.transcript(sid), "toolCalls")
				if len(calls) != 1 || calls[0]["status"] != "failed" || calls[0]["interrupted"] != true {
					t.Fatalf("got tool calls %v, want one failed interrupted call", calls)
				}
				if !strings.Contains(string(mustJSON(t, calls[0]["content"])), "interrupted by agent exited") {
					t.Errorf("got content %v, want the synthetic failure text", calls[0]["content"])
				}
			}
			next := d.prompt(sid, "/echo back", "")
			if got := d.waitTurn(sid, next)["state"]; got != "completed" {
				t.Fatalf("prompt after crash: got %v, want completed (agent restarted)", got)
			}
			ex = d.do("GET", "/session/"+sid, nil).JSON(t)["executor"].(map[string]any)
			if ex["status"] != "ready" {
				t.Errorf("got executor %v after restart, want ready", ex["status"])
			}
		})
	}
}

func TestAgentErrorFailsTurn(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	pid := d.prompt(sid, "/error -32603 model overloaded", "")
	turn := d.waitTurn(sid, pid)
	e, _ := turn["error"].(map[string]any)
	if turn["state"] != "failed" || e == nil || !strings.Contains(e["message"].(string), "model overloaded") {
		t.Fatalf("got %v, want failed with the agent's message", turn)
	}
}

func TestCloseStopsAgentAndIsIdempotent(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	pid := d.prompt(sid, "/hang", "")
	d.waitTurnState(sid, pid, "running")
	for i := 0; i < 2; i++ {
		r := d.do("DELETE", "/session/"+sid, nil)
		s := r.JSON(t)
		if r.Status != http.StatusOK || s["state"] != "COMPLETED" || s["closedAt"] == nil {
			t.Fatalf("close #%d: got %d %v, want 200 COMPLETED with closedAt", i+1, r.Status, s["state"])
		}
		if ex := s["executor"].(map[string]any); ex["status"] != "stopped" {
			t.Errorf("close #%d: got executor %v, want stopped", i+1, ex["status"])
		}
	}
	if got := d.turn(sid, pid)["state"]; got != "cancelled" {
		t.Errorf("got running turn %v after close, want cancelled", got)
	}
	r := d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text("hi")})
	if r.Status != http.StatusConflict || r.JSON(t)["code"] != "session_terminal" {
		t.Errorf("prompt after close: got %d %s, want 409 session_terminal", r.Status, r.Body)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
