package crash_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"
)

// webhookOf is what delivery d's body says: its type, and its log
// event's payload.
func webhookOf(t *testing.T, d delivery) (typ string, event map[string]any) {
	t.Helper()
	var body struct {
		Type string `json:"type"`
		Data struct {
			Event map[string]any `json:"event"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(d.body), &body); err != nil {
		t.Fatalf("delivery %s: %v", d.id, err)
	}
	return body.Type, body.Data.Event
}

// TestBudgetOnEveryRuntime (issue 33): on a standalone and a detached
// agent, a token budget stops a looping demo-agent turn (cancelled,
// error budget_exceeded) and a webhook hears budget.exceeded; the stop
// and the refusal of new work outlive a kill -9 of tetherd; raised, the
// budget lets the stopped turn be continued; the stall watchdog's
// turn.stalled reaches the webhook. On the detached host a turn that
// runs on through a kill -9 is still stopped when its time is up.
func TestBudgetOnEveryRuntime(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	for _, rt := range []string{"standalone", "detached"} {
		t.Run(rt, func(t *testing.T) {
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			rec := newReceiver(t)
			rec.secret = "whsec_" + base64.StdEncoding.EncodeToString(key)
			w := hostedWorld(t)
			w.start()
			if code, m := w.do("POST", "/webhooks", map[string]any{"url": rec.srv.URL, "secret": rec.secret,
				"events": []string{"budget.exceeded", "turn.stalled"}}); code != http.StatusCreated {
				t.Fatalf("create webhook: got %d %v", code, m)
			}
			sid, _ := w.createSessionOn("demo", rt)
			if code, m := w.do("PATCH", "/session/"+sid, map[string]any{"budget": map[string]any{"maxTokens": 1000, "stallSeconds": 1}}); code != http.StatusOK {
				t.Fatalf("PATCH budget: got %d %v", code, m)
			}
			w.prompt(sid, "/loop 0 10", "loop")
			stopped := func(when string) {
				t.Helper()
				turn := w.waitTurn(sid, "loop")
				errOf, _ := turn["error"].(map[string]any)
				if turn["state"] != "cancelled" || errOf["code"] != "budget_exceeded" {
					t.Fatalf("%s: the looping turn: got %v, want cancelled with error budget_exceeded", when, turn)
				}
				code, p := w.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text("/echo more")})
				if code != http.StatusConflict || p["code"] != "budget_exceeded" {
					t.Errorf("%s: a prompt over the budget: got %d %v, want 409 budget_exceeded", when, code, p)
				}
			}
			stopped("after the stop")
			// Its report says what it changed in the workspace, as an
			// interrupted turn's does (the Web Shell waits for it).
			w.waitFor("the stopped turn's workspace report", func() bool {
				rec, _ := w.get("/session/" + sid + "/context")["recovery"].(map[string]any)
				rep, _ := rec["report"].(map[string]any)
				return rep["workspace"] != nil
			})
			w.waitFor("budget.exceeded delivered", func() bool { return len(rec.deliveries()) >= 1 })
			if typ, ev := webhookOf(t, rec.deliveries()[0]); typ != "budget.exceeded" || ev["limit"] != "tokens" || ev["promptId"] != "loop" {
				t.Errorf("the first delivery: got %s %v, want budget.exceeded of turn loop, limit tokens", typ, ev)
			}
			w.kill9()
			w.start()
			stopped("after kill -9")

			if code, m := w.do("PATCH", "/session/"+sid, map[string]any{"budget": map[string]any{"maxTokens": 1000000, "stallSeconds": 1}}); code != http.StatusOK {
				t.Fatalf("raise the budget: got %d %v", code, m)
			}
			if code, m := w.do("POST", "/session/"+sid+"/continue", map[string]any{"promptId": "more"}); code != http.StatusAccepted {
				t.Fatalf("continue once raised: got %d %v", code, m)
			}
			if turn := w.waitTurn(sid, "more"); turn["state"] != "completed" {
				t.Errorf("the continuation: got %v, want completed", turn)
			}

			// A turn that never answers stalls; the webhook hears it.
			w.prompt(sid, "/wait", "mute")
			w.waitFor("turn.stalled delivered", func() bool {
				return slices.ContainsFunc(rec.deliveries(), func(d delivery) bool { typ, _ := webhookOf(t, d); return typ == "turn.stalled" })
			})
			if code, m := w.do("POST", "/session/"+sid+"/cancel", nil); code != http.StatusOK {
				t.Fatalf("cancel: got %d %v", code, m)
			}
			w.waitTurn(sid, "mute")
			if bad := rec.problems(); len(bad) > 0 {
				t.Fatalf("deliveries that did not verify: %v", bad)
			}
			if rt != "detached" {
				return
			}
			// On the host the turn runs on through a kill -9; its clock
			// runs from its start.
			if code, m := w.do("PATCH", "/session/"+sid, map[string]any{"budget": map[string]any{"maxTokens": 1000000, "maxTurnSeconds": 3}}); code != http.StatusOK {
				t.Fatalf("PATCH budget: got %d %v", code, m)
			}
			w.prompt(sid, "/loop 0 100", "long")
			w.waitFor("the long turn to work", func() bool { return w.turn(sid, "long")["state"] == "running" })
			started, err := time.Parse(time.RFC3339Nano, w.turn(sid, "long")["startedAt"].(string))
			if err != nil {
				t.Fatal(err)
			}
			w.kill9()
			// Its time is up while tetherd is down: the clock rings as
			// tetherd attaches the host again, before the turn is taken
			// up, and the cancel must still reach the agent.
			time.Sleep(time.Until(started.Add(3500 * time.Millisecond)))
			w.start()
			turn := w.waitTurn(sid, "long")
			if errOf, _ := turn["error"].(map[string]any); turn["state"] != "cancelled" || errOf["code"] != "budget_exceeded" {
				t.Fatalf("the long turn after kill -9: got %v, want cancelled for its budget", turn)
			}
			var limits []any
			for _, d := range rec.deliveries() {
				if typ, ev := webhookOf(t, d); typ == "budget.exceeded" {
					limits = append(limits, ev["limit"])
				}
			}
			if len(limits) < 2 || limits[len(limits)-1] != "turnDuration" {
				t.Errorf("budget.exceeded deliveries: got limits %v, want tokens then turnDuration", limits)
			}
		})
	}
}

// problems are the requests that did not verify.
func (r *receiver) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bad)
}
