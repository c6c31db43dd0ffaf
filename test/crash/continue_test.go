package crash_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Continuing after kill -9 (DESIGN.md section 6, docs/continue.md): the real
// tetherd binary and demo agent, killed mid-turn and restarted on the same
// data dir; GET /session/{id}/context says what was cut off and POST
// /session/{id}/continue picks it up exactly once.

// continuationAnswer opens the demo agent's answer to the prompt tetherd
// sends to continue an interrupted turn ("Continuing where I left off
// (interrupted by REASON)", naming the calls that were cut off): a reply
// that starts so was asked to continue.
const continuationAnswer = "Continuing where I left off"

// sessionContext fetches GET /session/{id}/context and checks the cursor
// belongs to the event epoch.
func (w *world) sessionContext(sid string) map[string]any {
	w.t.Helper()
	c := w.get("/session/" + sid + "/context")
	epoch, _ := c["eventEpoch"].(string)
	cursor, _ := c["cursor"].(string)
	if c["sessionId"] != sid || epoch == "" || !strings.HasPrefix(cursor, epoch+":") {
		w.t.Errorf("context: got sessionId %v eventEpoch %q cursor %q, want %s and a cursor of that epoch", c["sessionId"], epoch, cursor, sid)
	}
	return c
}

// recoveryWant is the part of a recovery summary a test pins down.
type recoveryWant struct {
	kind        string
	canContinue bool
	reason      string
	promptID    string
	interrupt   string
	dangling    []map[string]any // nil: empty
}

func checkRecoveryWant(t *testing.T, what string, got map[string]any, want recoveryWant) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: got no recovery", what)
		return
	}
	str := func(k string) string { s, _ := got[k].(string); return s }
	if str("kind") != want.kind || got["canContinue"] != want.canContinue || str("reason") != want.reason ||
		str("promptId") != want.promptID || str("interruptReason") != want.interrupt || str("notice") == "" {
		t.Errorf("%s: got %v, want kind %q canContinue %v reason %q promptId %q interruptReason %q and a notice",
			what, got, want.kind, want.canContinue, want.reason, want.promptID, want.interrupt)
	}
	dangling := want.dangling
	if dangling == nil {
		dangling = []map[string]any{}
	}
	g, _ := json.Marshal(got["danglingToolCalls"])
	wb, _ := json.Marshal(dangling)
	if string(g) != string(wb) {
		t.Errorf("%s: danglingToolCalls: got %s, want %s", what, g, wb)
	}
}

// answer is one HTTP answer received by a goroutine.
type answer struct {
	status int
	body   map[string]any
	raw    string
	err    error
}

// postAll sends n POST requests to path at once (released together) and
// returns the answers in order. Safe for goroutines: nothing fails the
// test until every answer is in.
func (w *world) postAll(path string, n int, body func(i int) any) []answer {
	w.t.Helper()
	out := make([]answer, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		var rd io.Reader
		var b any
		if body != nil {
			b = body(i)
		}
		if b != nil {
			buf, _ := json.Marshal(b)
			rd = bytes.NewReader(buf)
		}
		req, err := http.NewRequest("POST", "http://"+w.addr+path, rd)
		if err != nil {
			w.t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if b != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out[i].err = err
				return
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			out[i].status, out[i].raw = resp.StatusCode, string(raw)
			out[i].err = json.Unmarshal(raw, &out[i].body)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	for i, a := range out {
		if a.err != nil {
			w.t.Fatalf("POST %s #%d: %v (%s)", path, i, a.err, a.raw)
		}
	}
	return out
}

// checkDeclined409 checks a declined continue: 409 problem+json whose code
// is the reason, accepted false, with the recovery plan; it returns the
// reason.
func checkDeclined409(t *testing.T, what string, code int, p map[string]any) string {
	t.Helper()
	reason, _ := p["reason"].(string)
	if code != http.StatusConflict || p["accepted"] != false || reason == "" || p["code"] != reason || p["recovery"] == nil {
		t.Errorf("%s: got %d %v, want 409 with accepted false, code = reason and the recovery plan", what, code, p)
	}
	return reason
}

// userMessages lists the transcript's user messages as "promptId: text".
func userMessages(tr map[string]any) []string {
	var out []string
	for _, m := range list(tr, "messages") {
		if m["role"] == "user" {
			out = append(out, fmt.Sprint(m["promptId"], ": ", m["text"]))
		}
	}
	return out
}

// replyOf is the agent's text for one turn.
func replyOf(tr map[string]any, pid string) string {
	var b strings.Builder
	for _, m := range list(tr, "messages") {
		if m["promptId"] == pid && m["role"] == "agent" {
			b.WriteString(m["text"].(string))
		}
	}
	return b.String()
}

// checkContinued checks a continue turn that ran to the end after a
// restart: it continues pid, the transcript gained no user message, the
// agent got the continuation (or the original prompt), and the tool calls
// of the interrupted turn were not touched again.
func (w *world) checkContinued(sid, pid, cid string, usersBefore []string, dangling []string) {
	w.t.Helper()
	t := w.t
	turn := w.waitTurn(sid, cid)
	if turn["state"] != "completed" || turn["kind"] != "continue" || turn["continuesPromptId"] != pid {
		t.Errorf("continue turn: got %v, want completed, kind continue, continuing %s", turn, pid)
	}
	tr := w.transcript(sid)
	if got := userMessages(tr); !slices.Equal(got, usersBefore) {
		t.Errorf("user messages: got %q, want %q (continuing adds none)", got, usersBefore)
	}
	if n := len(list(tr, "turns")); n != 2 {
		t.Errorf("got %d turns, want 2 (the interrupted one and its continuation)", n)
	}
	log := w.replay(sid)
	counts := map[string]int{}
	for _, f := range log {
		p := f.JSON(t)
		if p["promptId"] != cid {
			continue
		}
		counts[f.Event]++
		if f.Event == "turn.queued" && (p["kind"] != "continue" || p["continuesPromptId"] != pid) {
			t.Errorf("turn.queued of %s: got %s, want kind continue continuing %s", cid, f.Data, pid)
		}
		if (f.Event == "tool_call.started" || f.Event == "tool_call.updated") && slices.Contains(dangling, fmt.Sprint(p["toolCallId"])) {
			t.Errorf("the continuation touched the interrupted tool call: %s %s", f.Event, f.Data)
		}
		if f.Event == "permission.requested" {
			t.Errorf("the continuation asked for a permission again: %s", f.Data)
		}
	}
	for _, typ := range []string{"turn.queued", "turn.started", "turn.completed"} {
		if counts[typ] != 1 {
			t.Errorf("got %d %s events for %s, want 1", counts[typ], typ, cid)
		}
	}
	for _, id := range dangling {
		n := 0
		for _, c := range list(tr, "toolCalls") {
			if c["id"] == id {
				n++
			}
		}
		if n != 1 {
			t.Errorf("got %d tool calls with id %s, want 1 (not run again)", n, id)
		}
	}
	checkRecoveryWant(t, "context after the continuation", w.sessionContext(sid)["recovery"].(map[string]any),
		recoveryWant{kind: "clean", reason: "nothing_to_continue"})
	if p := lastEvent(t, log, "session.recovery_changed"); p == nil || p["recovery"].(map[string]any)["kind"] != "clean" {
		t.Errorf("last session.recovery_changed: got %v, want kind clean", p)
	}
}

// TestContinueAfterKill9 kills the daemon mid-turn, restarts it, and
// continues: 64 clients ask at once, exactly one continuation runs, to
// the end, without a new user message and without running the cut-off
// tool again.
func TestContinueAfterKill9(t *testing.T) {
	editTool := []map[string]any{{"id": "tool-1", "title": "Edit demo.txt", "kind": "edit"}}
	cases := []struct {
		name    string
		profile string
		prompt  string
		// cut waits for the moment to kill the daemon.
		cut      func(w *world, rec *recorder)
		want     recoveryWant
		dangling []string
		// reply is what the continuation's answer must contain.
		reply string
	}{
		{
			name: "during /sleep after its first chunk", profile: "agent", prompt: "/sleep 30000",
			cut: func(w *world, rec *recorder) {
				w.waitSeen(rec, "the first chunk", func(f frame) bool { return agentSaid(f, "sleeping 30000 ms") })
			},
			want:  recoveryWant{kind: "interrupted_turn", canContinue: true, reason: "", promptID: "p1", interrupt: "daemon_restart"},
			reply: "Continuing where I left off (interrupted by daemon restart).",
		},
		{
			name: "while a permission is pending", profile: "agent", prompt: "/permission",
			cut: func(w *world, rec *recorder) {
				w.waitSeen(rec, "permission.requested", func(f frame) bool { return f.Event == "permission.requested" })
			},
			want:     recoveryWant{kind: "interrupted_turn", canContinue: true, promptID: "p1", interrupt: "daemon_restart", dangling: editTool},
			dangling: []string{"tool-1"},
			reply:    "Edit demo.txt (edit, id tool-1)",
		},
		{
			// The agent needs 3 s to start: the prompt is persisted,
			// never delivered. Continuing sends it again.
			name: "before the agent received the prompt", profile: "slow", prompt: "/echo never-delivered-prompt",
			cut: func(w *world, rec *recorder) {
				w.waitSeen(rec, "turn.queued", func(f frame) bool { return f.Event == "turn.queued" })
			},
			want:  recoveryWant{kind: "interrupted_prompt", canContinue: true, promptID: "p1", interrupt: "daemon_restart"},
			reply: "never-delivered-prompt",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, agentProfile, slowProfile)
			w.start()
			sid, cwd := w.createSession(tc.profile)
			rec := w.record(sid)
			w.prompt(sid, tc.prompt, "p1")
			tc.cut(w, rec)

			w.kill9()
			rec.stop()
			w.start()

			w.waitReportSettled(sid)
			c := w.sessionContext(sid)
			rec0, _ := c["recovery"].(map[string]any)
			checkRecoveryWant(t, "context after the restart", rec0, tc.want)
			// Reconciliation announced it: the last recovery_changed is it.
			if p := lastEvent(t, w.replay(sid), "session.recovery_changed"); p == nil {
				t.Errorf("no session.recovery_changed after the restart")
			} else if g, wnt := mustMarshal(p["recovery"]), mustMarshal(rec0); g != wnt {
				t.Errorf("last session.recovery_changed: got %s, want the context's %s", g, wnt)
			}
			usersBefore := userMessages(w.transcript(sid))

			answers := w.postAll("/session/"+sid+"/continue", 64, nil)
			dist := map[string]int{}
			var accepted []map[string]any
			for i, a := range answers {
				if a.status == http.StatusAccepted {
					dist["202"]++
					accepted = append(accepted, a.body)
					continue
				}
				reason := checkDeclined409(t, fmt.Sprintf("continue #%d", i), a.status, a.body)
				dist["409 "+reason]++
				if reason != "turn_active" && reason != "turn_queued" && reason != "nothing_to_continue" {
					t.Errorf("continue #%d: got reason %q, want turn_active, turn_queued or nothing_to_continue", i, reason)
				}
			}
			t.Logf("64 concurrent continues after kill -9 %s: %v", tc.name, dist)
			if len(accepted) != 1 {
				t.Fatalf("got %d continues accepted, want exactly 1 (%v)", len(accepted), dist)
			}
			a := accepted[0]
			cid, _ := a["promptId"].(string)
			if a["accepted"] != true || cid == "" || a["eventEpoch"] != c["eventEpoch"] ||
				!strings.HasPrefix(fmt.Sprint(a["cursor"]), fmt.Sprint(c["eventEpoch"])+":") {
				t.Errorf("accepted: got %v, want accepted, a promptId, the epoch and a cursor of it", a)
			}
			interruption, _ := a["interruption"].(map[string]any)
			checkRecoveryWant(t, "interruption", interruption, tc.want)

			w.checkContinued(sid, "p1", cid, usersBefore, tc.dangling)
			if got := replyOf(w.transcript(sid), cid); !strings.Contains(got, tc.reply) {
				t.Errorf("agent reply: got %q, want it to contain %q", got, tc.reply)
			}
			for _, id := range tc.dangling {
				w.checkSyntheticToolResult(sid, id, w.replay(sid))
			}
			if _, err := os.Stat(filepath.Join(cwd, "demo.txt")); err == nil {
				t.Errorf("demo.txt exists: the edit that was never permitted ran")
			}
			if n := len(w.agentsIn(cwd)); n != 1 {
				t.Errorf("got %d agent processes, want 1", n)
			}
			// A retry of the accepted continuation's id answers with it.
			code, again := w.do("POST", "/session/"+sid+"/continue", map[string]any{"promptId": cid})
			if code != http.StatusAccepted || again["promptId"] != cid || again["state"] != "completed" {
				t.Errorf("retry with the accepted promptId: got %d %v, want 202 with the same, completed turn", code, again)
			}
		})
	}
}

// TestContinueCancelledTurnStaysCleanAfterKill9: a cancel is the user's
// durable intent. A cancelled turn, or an interrupted turn the user then
// cancelled, is clean after kill -9 and a restart, and continue declines.
func TestContinueCancelledTurnStaysCleanAfterKill9(t *testing.T) {
	cases := []struct {
		name string
		// setup leaves p1 cancelled (or its interruption cancelled).
		setup func(w *world, sid string)
	}{
		{
			name: "a cancelled /hang",
			setup: func(w *world, sid string) {
				rec := w.record(sid)
				defer rec.stop()
				w.prompt(sid, "/hang", "p1")
				w.waitSeen(rec, "the turn running", func(f frame) bool { return agentSaid(f, "hanging") })
				if code, c := w.do("POST", "/session/"+sid+"/cancel", nil); code != http.StatusOK || c["promptId"] != "p1" || c["cancelled"] != true {
					w.t.Fatalf("cancel: got %d %v, want 200 cancelling p1", code, c)
				}
				if turn := w.waitTurn(sid, "p1"); turn["state"] != "cancelled" {
					w.t.Fatalf("turn: got %v, want cancelled", turn["state"])
				}
			},
		},
		{
			name: "an interrupted turn the user cancelled",
			setup: func(w *world, sid string) {
				rec := w.record(sid)
				w.prompt(sid, "/sleep 30000", "p1")
				w.waitSeen(rec, "the first chunk", func(f frame) bool { return agentSaid(f, "sleeping 30000 ms") })
				w.kill9()
				rec.stop()
				w.start()
				if st := w.turn(sid, "p1")["state"]; st != "interrupted" {
					w.t.Fatalf("turn after the first restart: got %v, want interrupted", st)
				}
				if code, c := w.do("POST", "/session/"+sid+"/cancel", nil); code != http.StatusOK || c["promptId"] != "p1" || c["cancelled"] != true {
					w.t.Fatalf("cancel: got %d %v, want 200 cancelling the interrupted p1", code, c)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, agentProfile, slowProfile)
			w.start()
			sid, cwd := w.createSession("agent")
			tc.setup(w, sid)
			w.waitFor("recovery clean", func() bool {
				p := lastEvent(t, w.replay(sid), "session.recovery_changed")
				return p != nil && p["recovery"].(map[string]any)["kind"] == "clean"
			})

			w.kill9()
			w.start()

			c := w.sessionContext(sid)
			checkRecoveryWant(t, "context after the restart", c["recovery"].(map[string]any),
				recoveryWant{kind: "clean", reason: "nothing_to_continue"})
			for i := range 3 {
				code, p := w.do("POST", "/session/"+sid+"/continue", nil)
				if reason := checkDeclined409(t, fmt.Sprintf("continue #%d", i), code, p); reason != "nothing_to_continue" {
					t.Errorf("continue #%d: got reason %q, want nothing_to_continue", i, reason)
				}
				if rec, _ := p["recovery"].(map[string]any); rec != nil {
					checkRecoveryWant(t, "declined recovery", rec, recoveryWant{kind: "clean", reason: "nothing_to_continue"})
				}
			}
			for _, turn := range list(w.transcript(sid), "turns") {
				if turn["kind"] == "continue" {
					t.Errorf("got continue turn %v, want none", turn)
				}
			}
			if n := len(w.agentsIn(cwd)); n != 0 {
				t.Logf("note: %d agent process(es) running after continue was declined: declined continues still restore the agent", n)
			}
		})
	}
}

// agentSaid reports whether f is agent text (a new message or a chunk)
// containing s.
func agentSaid(f frame, s string) bool {
	return (f.Event == "message.added" || f.Event == "message.chunk") && strings.Contains(f.Data, `"role":"agent"`) &&
		strings.Contains(f.Data, s)
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
