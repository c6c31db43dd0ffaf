package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/sessions"
)

// Continuing an interrupted turn (DESIGN.md section 6, docs/continue.md):
// GET /session/{id}/context, POST /session/{id}/continue and the
// session.recovery_changed events, over real HTTP with the real demo agent.

// continuationOpening opens the text an agent receives to continue an
// interrupted turn (session.ContinuationPrompt).
const continuationOpening = "Your previous turn was interrupted"

// wantRecovery is the recovery summary a test expects.
type wantRecovery struct {
	kind        string
	canContinue bool
	reason      string // "" when none
	promptID    string // "" when none
	interrupt   string // interruptReason, "" when none
	// dangling is the exact danglingToolCalls list (nil: empty).
	dangling []map[string]any
}

// checkRecovery compares a RecoverySummary object with want.
func checkRecovery(t *testing.T, what string, got map[string]any, want wantRecovery) {
	t.Helper()
	str := func(k string) string { s, _ := got[k].(string); return s }
	if str("kind") != want.kind || got["canContinue"] != want.canContinue || str("reason") != want.reason ||
		str("promptId") != want.promptID || str("interruptReason") != want.interrupt {
		t.Errorf("%s: got kind %q canContinue %v reason %q promptId %q interruptReason %q, want %q %v %q %q %q (%v)",
			what, str("kind"), got["canContinue"], str("reason"), str("promptId"), str("interruptReason"),
			want.kind, want.canContinue, want.reason, want.promptID, want.interrupt, got)
	}
	dangling := want.dangling
	if dangling == nil {
		dangling = []map[string]any{}
	}
	if g, w := string(mustJSON(t, got["danglingToolCalls"])), string(mustJSON(t, dangling)); g != w {
		t.Errorf("%s: danglingToolCalls: got %s, want %s", what, g, w)
	}
	if str("notice") == "" {
		t.Errorf("%s: got no notice, want a sentence for the user", what)
	}
}

// recoveryContext fetches GET /session/{id}/context and checks the members
// every answer carries: the session, an event epoch and a cursor of it.
func (d *daemon) recoveryContext(sid string) map[string]any {
	d.t.Helper()
	r := d.do("GET", "/session/"+sid+"/context", nil)
	if r.Status != http.StatusOK {
		d.t.Fatalf("context: got %d, want 200: %s", r.Status, r.Body)
	}
	c := r.JSON(d.t)
	epoch, _ := c["eventEpoch"].(string)
	cur, err := events.ParseCursor(fmt.Sprint(c["cursor"]))
	if c["sessionId"] != sid || epoch == "" || err != nil || cur.Epoch != epoch {
		d.t.Errorf("context: got sessionId %v eventEpoch %q cursor %v, want %s and a cursor of that epoch",
			c["sessionId"], epoch, c["cursor"], sid)
	}
	return c
}

// recoveryOf is the recovery member of a context, event or answer.
func recoveryOf(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	r, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("got %v, want a %s object", m, key)
	}
	return r
}

// lastRecoveryEvent is the recovery of the session's last
// session.recovery_changed event among frames (nil if none).
func lastRecoveryEvent(t *testing.T, frames []sseFrame, sid string) map[string]any {
	t.Helper()
	var last map[string]any
	for _, f := range frames {
		if f.Event != events.SessionRecoveryChanged {
			continue
		}
		if p := f.JSON(t); p["sessionId"] == sid {
			last, _ = p["recovery"].(map[string]any)
		}
	}
	return last
}

// replayLog reads a stream's durable log (?follow=false) and closes it.
func (d *daemon) replayLog(path string) []sseFrame {
	d.t.Helper()
	c := d.openStream(path, nil)
	defer c.Close()
	return durableFrames(c.All())
}

// waitRecoveryPushed waits until the last session.recovery_changed event of
// the session, on its own stream and on the global stream, is want.
func (d *daemon) waitRecoveryPushed(sid string, want map[string]any) {
	d.t.Helper()
	w := string(mustJSON(d.t, want))
	var onSession, onGlobal map[string]any
	d.waitFor("session.recovery_changed "+w, func() bool {
		onSession = lastRecoveryEvent(d.t, d.replayLog("/session/"+sid+"/events?follow=false"), sid)
		onGlobal = lastRecoveryEvent(d.t, d.replayLog("/events?follow=false"), sid)
		return string(mustJSON(d.t, onSession)) == w && string(mustJSON(d.t, onGlobal)) == w
	})
}

// crashTurn runs cmd (/crash or /crash-in-tool) as turn pid and waits until
// the agent's exit has interrupted it and the session waits for input.
func (d *daemon) crashTurn(sid, cmd, pid string) {
	d.t.Helper()
	d.prompt(sid, cmd, pid)
	if turn := d.waitTurn(sid, pid); turn["state"] != "interrupted" || turn["interruptReason"] != "agent_exited" {
		d.t.Fatalf("turn %s (%s): got %v, want interrupted with reason agent_exited", pid, cmd, turn)
	}
	d.waitFor("the session to wait for input", func() bool {
		return d.session(sid)["state"] == "WAITING_FOR_INPUT"
	})
}

// continueSession posts /continue; body may be nil.
func (d *daemon) continueSession(sid string, body any) response {
	d.t.Helper()
	return d.do("POST", "/session/"+sid+"/continue", body)
}

// checkDeclined checks a 409 answer of /continue: problem+json whose code
// is the reason, accepted false, and the recovery plan. It returns the
// reason.
func checkDeclined(t *testing.T, what string, r response) string {
	t.Helper()
	if r.Status != http.StatusConflict {
		t.Errorf("%s: got %d %s, want 409", what, r.Status, r.Body)
		return ""
	}
	p := r.JSON(t)
	reason, _ := p["reason"].(string)
	if p["accepted"] != false || reason == "" || p["code"] != reason || p["recovery"] == nil {
		t.Errorf("%s: got %s, want accepted false, code = reason, and the recovery plan", what, r.Body)
	}
	return reason
}

// checkAccepted checks a 202 answer of /continue and returns it.
func checkAccepted(t *testing.T, what string, r response, epoch string) map[string]any {
	t.Helper()
	if r.Status != http.StatusAccepted {
		t.Fatalf("%s: got %d %s, want 202", what, r.Status, r.Body)
	}
	a := r.JSON(t)
	cur, err := events.ParseCursor(fmt.Sprint(a["cursor"]))
	if a["accepted"] != true || a["promptId"] == "" || a["eventEpoch"] != epoch || err != nil || cur.Epoch != epoch {
		t.Errorf("%s: got %s, want accepted with a promptId, eventEpoch %s and a cursor of it", what, r.Body, epoch)
	}
	return a
}

// request is one request for concurrently to send.
type request struct {
	method, path string
	body         any
	// delay holds the request back after the common start.
	delay time.Duration
}

// exchange is one request sent by concurrently, and its answer.
type exchange struct {
	req  *http.Request
	resp response
	err  error
}

// concurrently sends the requests built by mk all at once (released
// together once every client is ready, each after its delay) and returns
// the answers in order. Answers are checked against the contract
// afterwards, on the test's goroutine.
func (d *daemon) concurrently(n int, mk func(i int) request) []exchange {
	d.t.Helper()
	out := make([]exchange, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		r := mk(i)
		var rd io.Reader
		if r.body != nil {
			rd = bytes.NewReader(mustJSON(d.t, r.body))
		}
		req, err := http.NewRequest(r.method, d.URL+r.path, rd)
		if err != nil {
			d.t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		if r.body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		out[i].req = req
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			time.Sleep(r.delay)
			resp, err := d.client.Do(req)
			if err != nil {
				out[i].err = err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			out[i].resp, out[i].err = response{Status: resp.StatusCode, Header: resp.Header, Body: b}, err
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	for _, x := range out {
		if x.err != nil {
			d.t.Fatalf("%s %s: %v", x.req.Method, x.req.URL.Path, x.err)
		}
		d.validate(x.req, x.resp)
	}
	return out
}

// turnsOfKind lists the transcript's turns of one kind.
func turnsOfKind(tr map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, t := range list(tr, "turns") {
		if t["kind"] == kind {
			out = append(out, t)
		}
	}
	return out
}

// continuationsSent counts the continuation prompts the session's agents
// were sent.
func (d *daemon) continuationsSent(sid string) int {
	n := 0
	for _, p := range d.sentPrompts(sid) {
		if strings.Contains(p, continuationOpening) {
			n++
		}
	}
	return n
}

// waitIdle waits until no turn of the session is queued or running.
func (d *daemon) waitIdle(sid string) {
	d.t.Helper()
	d.waitFor("every turn to end", func() bool {
		for _, t := range list(d.transcript(sid), "turns") {
			if t["state"] == "queued" || t["state"] == "running" {
				return false
			}
		}
		return true
	})
}

// distribution renders outcome counts in a stable order.
func distribution(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// TestContinueContextKinds checks the recovery plan GET /session/{id}/context
// reports for each situation the system really produces, and that the same
// plan is pushed as session.recovery_changed on the session stream and the
// global stream, with a context cursor at the head of the log.
func TestContinueContextKinds(t *testing.T) {
	crashTool := []map[string]any{{"id": "tool-1", "title": "Run crashing tool", "kind": "execute"}}
	cases := []struct {
		name string
		// setup leaves the session to look at; the turn of interest is p1.
		setup func(t *testing.T) (*daemon, string)
		want  wantRecovery
		// notPushed: the plan changed without the session changing, so no
		// event is expected to announce it.
		notPushed bool
	}{
		{
			name: "clean: the last turn completed",
			setup: func(t *testing.T) (*daemon, string) {
				d := startDaemon(t, daemonOptions{leakCheck: true})
				sid, _ := d.createSession(nil)
				d.prompt(sid, "/echo hi", "p1")
				if got := d.waitTurn(sid, "p1")["state"]; got != "completed" {
					t.Fatalf("turn: got %v, want completed", got)
				}
				return d, sid
			},
			want: wantRecovery{kind: "clean", reason: "nothing_to_continue"},
		},
		{
			name: "clean: the user cancelled the last turn",
			setup: func(t *testing.T) (*daemon, string) {
				d := startDaemon(t, daemonOptions{leakCheck: true})
				sid, _ := d.createSession(nil)
				d.prompt(sid, "/hang", "p1")
				d.waitTurnState(sid, "p1", "running")
				if r := d.do("POST", "/session/"+sid+"/cancel", nil); r.Status != http.StatusOK {
					t.Fatalf("cancel: got %d %s", r.Status, r.Body)
				}
				if got := d.waitTurn(sid, "p1")["state"]; got != "cancelled" {
					t.Fatalf("turn: got %v, want cancelled", got)
				}
				return d, sid
			},
			want: wantRecovery{kind: "clean", reason: "nothing_to_continue"},
		},
		{
			name: "clean: the user cancelled an interrupted turn",
			setup: func(t *testing.T) (*daemon, string) {
				d := startDaemon(t, daemonOptions{leakCheck: true})
				sid, _ := d.createSession(nil)
				d.crashTurn(sid, "/crash-in-tool", "p1")
				r := d.do("POST", "/session/"+sid+"/cancel", nil)
				if c := r.JSON(t); r.Status != http.StatusOK || c["promptId"] != "p1" || c["cancelled"] != true {
					t.Fatalf("cancel: got %d %s, want 200 cancelling p1", r.Status, r.Body)
				}
				return d, sid
			},
			want: wantRecovery{kind: "clean", reason: "nothing_to_continue"},
		},
		{
			name: "interrupted_turn: the agent crashed after replying",
			setup: func(t *testing.T) (*daemon, string) {
				d := startDaemon(t, daemonOptions{leakCheck: true})
				sid, _ := d.createSession(nil)
				d.crashTurn(sid, "/crash", "p1")
				return d, sid
			},
			want: wantRecovery{kind: "interrupted_turn", canContinue: true, promptID: "p1", interrupt: "agent_exited"},
		},
		{
			name: "interrupted_turn: the agent crashed in a tool call",
			setup: func(t *testing.T) (*daemon, string) {
				d := startDaemon(t, daemonOptions{leakCheck: true})
				sid, _ := d.createSession(nil)
				d.crashTurn(sid, "/crash-in-tool", "p1")
				return d, sid
			},
			want: wantRecovery{kind: "interrupted_turn", canContinue: true, promptID: "p1", interrupt: "agent_exited", dangling: crashTool},
		},
		{
			name: "interrupted_turn: the daemon stopped while a permission was pending",
			setup: func(t *testing.T) (*daemon, string) {
				d := startDaemon(t, daemonOptions{leakCheck: true})
				sid, _ := d.createSession(nil)
				d.prompt(sid, "/permission", "p1")
				d.waitFor("a pending permission", func() bool { return len(list(d.transcript(sid), "pendingPermissions")) == 1 })
				return d.restart(daemonOptions{}), sid
			},
			want: wantRecovery{kind: "interrupted_turn", canContinue: true, promptID: "p1", interrupt: "daemon_restart",
				dangling: []map[string]any{{"id": "tool-1", "title": "Edit demo.txt", "kind": "edit"}}},
		},
		{
			// A turn is interrupted before the agent produced anything when
			// the daemon stops while it waits for the agent to start: the
			// agent of this profile takes 3 s to start.
			name: "interrupted_prompt: the daemon stopped before the agent got the prompt",
			setup: func(t *testing.T) (*daemon, string) {
				yaml := profilesYAML(t, agentProfile{id: "slow", stateDir: t.TempDir(), flags: []string{"--startup-delay", "3s"}})
				d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: yaml})
				sid, _ := d.createSession(map[string]any{"agentProfileId": "slow"})
				d.prompt(sid, "/echo never answered", "p1")
				if got := d.turn(sid, "p1")["state"]; got != "queued" {
					t.Fatalf("turn: got %v, want queued (the agent is still starting)", got)
				}
				return d.restart(daemonOptions{agentsYAML: yaml}), sid
			},
			want: wantRecovery{kind: "interrupted_prompt", canContinue: true, promptID: "p1", interrupt: "daemon_restart"},
		},
		{
			name: "turn_active: a turn runs",
			setup: func(t *testing.T) (*daemon, string) {
				d := startDaemon(t, daemonOptions{leakCheck: true})
				sid, _ := d.createSession(nil)
				d.prompt(sid, "/hang", "p1")
				d.waitTurnState(sid, "p1", "running")
				return d, sid
			},
			want: wantRecovery{kind: "clean", reason: "turn_active"},
		},
		{
			name: "turn_active: a new prompt runs after an interrupted turn",
			setup: func(t *testing.T) (*daemon, string) {
				d := startDaemon(t, daemonOptions{leakCheck: true})
				sid, _ := d.createSession(nil)
				d.crashTurn(sid, "/crash-in-tool", "p0")
				d.prompt(sid, "/hang", "p1")
				d.waitTurnState(sid, "p1", "running")
				return d, sid
			},
			want: wantRecovery{kind: "clean", reason: "turn_active"},
		},
		{
			name: "session_terminal: closed after an interruption",
			setup: func(t *testing.T) (*daemon, string) {
				d := startDaemon(t, daemonOptions{leakCheck: true})
				sid, _ := d.createSession(nil)
				d.crashTurn(sid, "/crash-in-tool", "p1")
				if r := d.do("DELETE", "/session/"+sid, nil); r.Status != http.StatusOK {
					t.Fatalf("close: got %d %s", r.Status, r.Body)
				}
				return d, sid
			},
			want: wantRecovery{kind: "interrupted_turn", reason: "session_terminal", promptID: "p1", interrupt: "agent_exited", dangling: crashTool},
		},
		{
			name: "agent_unavailable: the session's profile is gone after a restart",
			setup: func(t *testing.T) (*daemon, string) {
				d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, agentProfile{id: "gone", stateDir: t.TempDir()})})
				sid, _ := d.createSession(map[string]any{"agentProfileId": "gone"})
				d.crashTurn(sid, "/crash-in-tool", "p1")
				return d.restart(daemonOptions{agentsYAML: profilesYAML(t, agentProfile{id: "other", stateDir: t.TempDir()})}), sid
			},
			want:      wantRecovery{kind: "interrupted_turn", reason: "agent_unavailable", promptID: "p1", interrupt: "agent_exited", dangling: crashTool},
			notPushed: true,
		},
		{
			name: "degraded_history: the agent lost its context on restore",
			setup: func(t *testing.T) (*daemon, string) {
				yaml := profilesYAML(t, agentProfile{id: "amnesiac", stateDir: t.TempDir(), flags: []string{"--no-load", "--no-resume"}, noInject: true})
				d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: yaml})
				sid, _ := d.createSession(map[string]any{"agentProfileId": "amnesiac"})
				d.prompt(sid, "/echo remember me", "p1")
				d.waitTurn(sid, "p1")
				d = d.restart(daemonOptions{agentsYAML: yaml})
				if r := d.do("POST", "/session/"+sid+"/resume", nil); r.Status != http.StatusOK || r.JSON(t)["contextLost"] != true {
					t.Fatalf("resume: got %d %s, want 200 with contextLost", r.Status, r.Body)
				}
				return d, sid
			},
			want: wantRecovery{kind: "degraded_history", reason: "history_degraded"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, sid := tc.setup(t)
			c := d.recoveryContext(sid)
			rec := recoveryOf(t, c, "recovery")
			checkRecovery(t, "context", rec, tc.want)
			if t.Failed() {
				for _, turn := range list(d.transcript(sid), "turns") {
					t.Logf("turn %v: kind %v state %v interruptReason %v stopReason %v", turn["promptId"], turn["kind"], turn["state"],
						turn["interruptReason"], turn["stopReason"])
				}
			}
			if tc.want.kind == "degraded_history" && !strings.Contains(rec["notice"].(string), "lost") {
				t.Errorf("notice: got %q, want it to say the context was lost", rec["notice"])
			}
			if !tc.notPushed {
				d.waitRecoveryPushed(sid, rec)
			} else if got := lastRecoveryEvent(t, d.sessionEvents(sid), sid); got == nil {
				t.Errorf("got no session.recovery_changed event at all")
			} else if string(mustJSON(t, got)) != string(mustJSON(t, rec)) {
				t.Logf("last pushed recovery %s differs from the context's %s (the profile vanished between daemons; nothing announces it)",
					mustJSON(t, got), mustJSON(t, rec))
			}
			// Once the session is quiet, the context's cursor is the head of
			// its log (late writes, such as the executor stopping after a
			// close, may land in between: read again).
			var head string
			for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				c = d.recoveryContext(sid)
				if log := d.replayLog("/session/" + sid + "/events?follow=false"); len(log) > 0 {
					head = log[len(log)-1].ID
				}
				if c["cursor"] == head || time.Now().After(end) {
					break
				}
			}
			if c["cursor"] != head {
				t.Errorf("context cursor: got %v, want %s, the last event the session stream serves", c["cursor"], head)
			}
			if string(mustJSON(t, c["recovery"])) != string(mustJSON(t, rec)) {
				t.Errorf("context changed while idle: got %s, then %s", mustJSON(t, rec), mustJSON(t, c["recovery"]))
			}
			// What continue answers is what the context said.
			r := d.continueSession(sid, nil)
			if tc.want.canContinue {
				a := checkAccepted(t, "continue", r, c["eventEpoch"].(string))
				if got := d.waitTurn(sid, a["promptId"].(string))["state"]; got != "completed" {
					t.Errorf("continue turn: got %v, want completed", got)
				}
			} else if reason := checkDeclined(t, "continue", r); reason != tc.want.reason {
				t.Errorf("continue: got reason %q, want %q", reason, tc.want.reason)
			}
			if tc.want.reason == "turn_active" {
				d.do("POST", "/session/"+sid+"/cancel", nil)
				d.waitIdle(sid)
			}
		})
	}
}

// TestContinueInterruptedTurn continues a turn the agent crashed in, in the
// middle of a tool call: the agent is restored and told what was cut off,
// the continuation adds no user message, and the tool is not run again.
func TestContinueInterruptedTurn(t *testing.T) {
	d := startDaemon(t, daemonOptions{leakCheck: true})
	sid, _ := d.createSession(nil)
	d.prompt(sid, "/echo before", "p0")
	d.waitTurn(sid, "p0")
	d.crashTurn(sid, "/crash-in-tool", "p1")
	before := d.transcript(sid)
	epoch := d.recoveryContext(sid)["eventEpoch"].(string)

	a := checkAccepted(t, "continue", d.continueSession(sid, nil), epoch)
	cid := a["promptId"].(string)
	checkRecovery(t, "interruption", recoveryOf(t, a, "interruption"), wantRecovery{kind: "interrupted_turn", canContinue: true,
		promptID: "p1", interrupt: "agent_exited", dangling: []map[string]any{{"id": "tool-1", "title": "Run crashing tool", "kind": "execute"}}})
	if s := a["state"]; s != "queued" && s != "running" {
		t.Errorf("accepted state: got %v, want queued or running", s)
	}
	turn := d.waitTurn(sid, cid)
	if turn["state"] != "completed" || turn["kind"] != "continue" || turn["continuesPromptId"] != "p1" {
		t.Errorf("continue turn: got %v, want a completed turn of kind continue continuing p1", turn)
	}

	// The answer's cursor is the event that admitted the turn.
	log := d.sessionEvents(sid)
	var admitted *sseFrame
	for i := range log {
		if log[i].ID == a["cursor"] {
			admitted = &log[i]
		}
	}
	if admitted == nil || admitted.Event != events.TurnQueued || admitted.JSON(t)["promptId"] != cid ||
		admitted.JSON(t)["continuesPromptId"] != "p1" || admitted.JSON(t)["kind"] != "continue" {
		t.Errorf("event at the answer's cursor %v: got %+v, want turn.queued of %s (kind continue, continuesPromptId p1)", a["cursor"], admitted, cid)
	}
	// The continued turn streams and ends like any other.
	for _, typ := range []string{events.TurnStarted, events.TurnCompleted} {
		n := 0
		for _, f := range ofType(log, typ) {
			if f.JSON(t)["promptId"] == cid {
				n++
			}
		}
		if n != 1 {
			t.Errorf("got %d %s events for %s, want 1", n, typ, cid)
		}
	}

	// What the agent received: the continuation, naming the cut-off call.
	sent := d.sentPrompts(sid)
	last := sent[len(sent)-1]
	for _, want := range []string{continuationOpening + " (agent exited)", "Run crashing tool (execute, id tool-1)", "Continue the task"} {
		if !strings.Contains(last, want) {
			t.Errorf("prompt sent to the agent: got %q, want it to contain %q", last, want)
		}
	}
	// The demo agent answers the continuation; it never echoes it.
	if got := agentReply(t, d, sid, cid); !strings.HasPrefix(got, "Continuing where I left off (interrupted by agent exited).") || strings.Contains(got, continuationOpening) {
		t.Errorf("agent reply: got %.120q, want it to start with %q and not echo the continuation prompt", got, "Continuing where I left off (interrupted by agent exited).")
	}

	tr := d.transcript(sid)
	// No user message for the continuation: the user messages are those
	// there were before.
	users := func(tr map[string]any) []string {
		var out []string
		for _, m := range list(tr, "messages") {
			if m["role"] == "user" {
				out = append(out, fmt.Sprint(m["promptId"], ": ", m["text"]))
			}
		}
		return out
	}
	if got, want := users(tr), users(before); !slices.Equal(got, want) {
		t.Errorf("user messages: got %q, want %q (continuing adds none)", got, want)
	}
	// The cut-off tool call keeps its synthetic failure and is not run
	// again: one call with its id, none started after the continuation.
	var withID []map[string]any
	for _, c := range list(tr, "toolCalls") {
		if c["id"] == "tool-1" {
			withID = append(withID, c)
		}
	}
	if len(withID) != 1 || withID[0]["promptId"] != "p1" || withID[0]["status"] != "failed" || withID[0]["interrupted"] != true ||
		!strings.Contains(string(mustJSON(t, withID[0]["content"])), "Tool execution result was not recorded: interrupted by agent exited") {
		t.Errorf("tool call tool-1: got %v, want exactly one, of p1, failed, interrupted, with the synthetic result", withID)
	}
	for _, f := range log {
		if (f.Event == events.ToolCallStarted || f.Event == events.ToolCallUpdated) && f.JSON(t)["promptId"] == cid && f.JSON(t)["toolCallId"] == "tool-1" {
			t.Errorf("continuation touched the interrupted tool call: %s %s", f.Event, f.Data)
		}
	}
	checkRecovery(t, "context after the continuation", recoveryOf(t, d.recoveryContext(sid), "recovery"),
		wantRecovery{kind: "clean", reason: "nothing_to_continue"})
}

// TestContinueInterruptedPrompt continues a turn the agent never saw (the
// daemon stopped while the agent was starting): the original prompt is
// sent again and no user message is added. An agent that had a session
// gets the prompt as it was; one that never had one is started fresh, so
// the prompt carries the (empty) resume context.
func TestContinueInterruptedPrompt(t *testing.T) {
	slow := func(t *testing.T) string {
		return profilesYAML(t, agentProfile{id: "slow", stateDir: t.TempDir(), flags: []string{"--startup-delay", "3s"}})
	}
	// interrupted leaves turn p1 interrupted before the agent got it.
	interrupted := func(t *testing.T, d *daemon, yaml, sid string) *daemon {
		t.Helper()
		d.prompt(sid, "/echo never answered", "p1")
		if got := d.turn(sid, "p1")["state"]; got != "queued" {
			t.Fatalf("turn: got %v, want queued (the agent is still starting)", got)
		}
		d = d.restart(daemonOptions{agentsYAML: yaml})
		checkRecovery(t, "context", recoveryOf(t, d.recoveryContext(sid), "recovery"),
			wantRecovery{kind: "interrupted_prompt", canContinue: true, promptID: "p1", interrupt: "daemon_restart"})
		return d
	}
	// continued continues it and returns what the agent was sent.
	continued := func(t *testing.T, d *daemon, sid string) string {
		t.Helper()
		before := len(d.sentPrompts(sid))
		a := checkAccepted(t, "continue", d.continueSession(sid, map[string]any{"promptId": "again-1"}),
			d.recoveryContext(sid)["eventEpoch"].(string))
		if a["promptId"] != "again-1" {
			t.Errorf("promptId: got %v, want again-1", a["promptId"])
		}
		turn := d.waitTurn(sid, "again-1")
		if turn["state"] != "completed" || turn["kind"] != "continue" || turn["continuesPromptId"] != "p1" {
			t.Errorf("continue turn: got %v, want completed, kind continue, continuing p1", turn)
		}
		sent := d.sentPrompts(sid)[before:]
		if len(sent) != 1 {
			t.Fatalf("prompts sent to the agent: got %q, want one", sent)
		}
		for _, m := range list(d.transcript(sid), "messages") {
			if m["role"] == "user" && (m["promptId"] == "p1" || m["promptId"] == "again-1") {
				t.Errorf("got user message %v, want none (the prompt never started, continuing adds none)", m)
			}
		}
		return sent[0]
	}

	t.Run("the agent had a session", func(t *testing.T) {
		yaml := slow(t)
		d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: yaml})
		sid, _ := d.createSession(map[string]any{"agentProfileId": "slow"})
		d.prompt(sid, "/echo first", "p0")
		d.waitTurn(sid, "p0")
		d = d.restart(daemonOptions{agentsYAML: yaml})
		d = interrupted(t, d, yaml, sid)
		if got := continued(t, d, sid); got != "/echo never answered" {
			t.Errorf("prompt sent: got %q, want the original prompt as it was", got)
		}
		if got := agentReply(t, d, sid, "again-1"); got != "never answered" {
			t.Errorf("agent reply: got %q, want %q", got, "never answered")
		}
	})

	t.Run("the agent never had a session", func(t *testing.T) {
		yaml := slow(t)
		d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: yaml})
		sid, _ := d.createSession(map[string]any{"agentProfileId": "slow"})
		d = interrupted(t, d, yaml, sid)
		got := continued(t, d, sid)
		// Nothing happened before this prompt, so there is no history to
		// inject: the agent gets the original prompt as is.
		if got != "/echo never answered" {
			t.Errorf("prompt sent: got %q, want the original prompt unchanged", got)
		}
	})
}

// TestContinueWithHistoryInjection: an agent restored without its context
// gets the continuation wrapped in the resume context, exactly once.
func TestContinueWithHistoryInjection(t *testing.T) {
	yaml := profilesYAML(t, agentProfile{id: "plain", stateDir: t.TempDir(), flags: []string{"--no-load", "--no-resume"}})
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: yaml})
	sid, _ := d.createSession(map[string]any{"agentProfileId": "plain"})
	d.prompt(sid, "first question", "p0")
	d.waitTurn(sid, "p0")
	d.crashTurn(sid, "/crash-in-tool", "p1")

	a := checkAccepted(t, "continue", d.continueSession(sid, nil), d.recoveryContext(sid)["eventEpoch"].(string))
	cid := a["promptId"].(string)
	if got := d.waitTurn(sid, cid)["state"]; got != "completed" {
		t.Fatalf("continue turn: got %v, want completed", got)
	}
	sent := d.sentPrompts(sid)
	last := sent[len(sent)-1]
	if !strings.HasPrefix(last, resumeContextHeader+"\n") || strings.Count(last, resumeContextHeader) != 1 ||
		!strings.Contains(last, "[USER]: first question") || !strings.Contains(last, continuationOpening) {
		t.Errorf("prompt sent: got %q, want the resume context once, the history and the continuation", last)
	}
	checkTurnInjected(t, d, sid, cid, true)
}

// TestContinueConcurrentRequests fires 64 continue requests at one
// interrupted session: exactly one is admitted.
func TestContinueConcurrentRequests(t *testing.T) {
	const n = 64
	for _, running := range []bool{false, true} {
		name := "agent stopped"
		if running {
			name = "agent restored first"
		}
		t.Run(name, func(t *testing.T) {
			d := startDaemon(t, daemonOptions{leakCheck: true})
			sid, _ := d.createSession(nil)
			d.crashTurn(sid, "/crash-in-tool", "p1")
			if running {
				if r := d.do("POST", "/session/"+sid+"/resume", nil); r.Status != http.StatusOK {
					t.Fatalf("resume: got %d %s", r.Status, r.Body)
				}
			}
			got := d.concurrently(n, func(int) request { return request{method: "POST", path: "/session/" + sid + "/continue"} })
			dist := map[string]int{}
			var accepted []string
			for i, x := range got {
				if x.resp.Status == http.StatusAccepted {
					dist["202"]++
					accepted = append(accepted, x.resp.JSON(t)["promptId"].(string))
					continue
				}
				reason := checkDeclined(t, fmt.Sprintf("request %d", i), x.resp)
				dist["409 "+reason]++
				switch reason {
				case "turn_active", "turn_queued", "nothing_to_continue":
				default:
					t.Errorf("request %d: got reason %q, want turn_active, turn_queued or nothing_to_continue", i, reason)
				}
			}
			t.Logf("%d concurrent continues (%s): %s", n, name, distribution(dist))
			if len(accepted) != 1 {
				t.Fatalf("got %d accepted, want exactly 1 (%s)", len(accepted), distribution(dist))
			}
			if s := d.waitTurn(sid, accepted[0])["state"]; s != "completed" {
				t.Errorf("continue turn: got %v, want completed", s)
			}
			if c := turnsOfKind(d.transcript(sid), "continue"); len(c) != 1 {
				t.Errorf("got %d continue turns, want 1", len(c))
			}
			if c := d.continuationsSent(sid); c != 1 {
				t.Errorf("the agent got %d continuation prompts, want 1", c)
			}
			if c := d.Sent.count(sid, "initialize"); c != 2 {
				t.Errorf("got %d agent starts, want 2 (the first, and one restore shared by every request)", c)
			}
		})
	}
}

// TestContinueRacingCancel: a cancel that reached the session first is the
// user's durable intent and no continuation is admitted after it; when the
// two race, the outcome is consistent either way.
func TestContinueRacingCancel(t *testing.T) {
	t.Run("cancel first", func(t *testing.T) {
		d := startDaemon(t, daemonOptions{leakCheck: true})
		sid, _ := d.createSession(nil)
		for i := range 6 {
			pid := fmt.Sprintf("crash-%d", i)
			d.crashTurn(sid, "/crash-in-tool", pid)
			if i%2 == 1 { // half the trials with the agent already restored
				d.do("POST", "/session/"+sid+"/resume", nil)
			}
			r := d.do("POST", "/session/"+sid+"/cancel", nil)
			if c := r.JSON(t); r.Status != http.StatusOK || c["promptId"] != pid || c["cancelled"] != true {
				t.Fatalf("trial %d: cancel: got %d %s, want 200 cancelling %s", i, r.Status, r.Body, pid)
			}
			r = d.continueSession(sid, nil)
			if reason := checkDeclined(t, fmt.Sprintf("trial %d: continue after cancel", i), r); reason != "nothing_to_continue" {
				t.Errorf("trial %d: got reason %q, want nothing_to_continue", i, reason)
			}
			if r.Status == http.StatusConflict {
				checkRecovery(t, fmt.Sprintf("trial %d: declined recovery", i), recoveryOf(t, r.JSON(t), "recovery"),
					wantRecovery{kind: "clean", reason: "nothing_to_continue"})
			}
		}
		if c := turnsOfKind(d.transcript(sid), "continue"); len(c) != 0 {
			t.Errorf("got %d continue turns, want 0", len(c))
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		d := startDaemon(t, daemonOptions{leakCheck: true})
		sid, _ := d.createSession(nil)
		dist := map[string]int{}
		admitted := 0
		cancelDelays := []time.Duration{0, 0, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
			40 * time.Millisecond, 80 * time.Millisecond}
		for i := range 16 {
			pid, cid := fmt.Sprintf("crash-%d", i), fmt.Sprintf("cont-%d", i)
			d.crashTurn(sid, "/crash-in-tool", pid)
			if i%2 == 1 {
				d.do("POST", "/session/"+sid+"/resume", nil)
			}
			got := d.concurrently(2, func(j int) request {
				if j == 0 {
					// Staggered so that both orders happen: continue has
					// more to do before it reaches the actor than cancel.
					return request{method: "POST", path: "/session/" + sid + "/cancel", delay: cancelDelays[i%len(cancelDelays)]}
				}
				return request{method: "POST", path: "/session/" + sid + "/continue", body: map[string]any{"promptId": cid}}
			})
			cancel, cont := got[0].resp, got[1].resp
			if cancel.Status != http.StatusOK {
				t.Fatalf("trial %d: cancel: got %d %s", i, cancel.Status, cancel.Body)
			}
			cr := cancel.JSON(t)
			dequeued, _ := cr["dequeued"].([]any)
			cancelledInterrupted := cr["promptId"] == pid && cr["cancelled"] == true
			cancelledContinuation := cr["promptId"] == cid || slices.Contains(dequeued, any(cid))
			switch {
			case cont.Status == http.StatusAccepted:
				admitted++
				if cancelledInterrupted {
					t.Errorf("trial %d: cancel %s cancelled the interrupted turn, yet the continue was admitted", i, cancel.Body)
				}
				end := d.waitTurn(sid, cid)["state"]
				dist["continue admitted, then its turn "+end.(string)]++
				if cancelledContinuation && end != "cancelled" {
					t.Errorf("trial %d: cancel %s named the continuation, which ended %v", i, cancel.Body, end)
				}
			default:
				reason := checkDeclined(t, fmt.Sprintf("trial %d: continue", i), cont)
				dist["cancel won, continue 409 "+reason]++
				if !cancelledInterrupted {
					t.Errorf("trial %d: continue declined (%s) but the cancel %s did not cancel the interrupted turn", i, reason, cancel.Body)
				}
			}
			d.waitIdle(sid)
			checkRecovery(t, fmt.Sprintf("trial %d: context afterwards", i), recoveryOf(t, d.recoveryContext(sid), "recovery"),
				wantRecovery{kind: "clean", reason: "nothing_to_continue"})
		}
		t.Logf("cancel racing continue, 16 trials: %s", distribution(dist))
		if c := turnsOfKind(d.transcript(sid), "continue"); len(c) != admitted {
			t.Errorf("got %d continue turns, want %d (one per admitted continue)", len(c), admitted)
		}
	})
}

// TestContinueRacingClose: a close that reached the session first leaves
// nothing to continue; when the two race, at most one continuation is
// admitted and the session ends closed with no turn running.
func TestContinueRacingClose(t *testing.T) {
	t.Run("close first", func(t *testing.T) {
		d := startDaemon(t, daemonOptions{leakCheck: true})
		for i := range 3 {
			sid, _ := d.createSession(nil)
			d.crashTurn(sid, "/crash-in-tool", "p1")
			if r := d.do("DELETE", "/session/"+sid, nil); r.Status != http.StatusOK {
				t.Fatalf("trial %d: close: got %d %s", i, r.Status, r.Body)
			}
			r := d.continueSession(sid, nil)
			if reason := checkDeclined(t, fmt.Sprintf("trial %d: continue after close", i), r); reason != "session_terminal" {
				t.Errorf("trial %d: got reason %q, want session_terminal", i, reason)
			}
			if c := turnsOfKind(d.transcript(sid), "continue"); len(c) != 0 {
				t.Errorf("trial %d: got %d continue turns, want 0", i, len(c))
			}
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		const continues = 8
		// A request left waiting for an agent start bounded by ResumeWait
		// fails in 10 s rather than 90.
		d := startDaemon(t, daemonOptions{leakCheck: true, sessions: sessions.Config{ResumeWait: 10 * time.Second}})
		closeDelays := []time.Duration{0, 0, 5 * time.Millisecond, 20 * time.Millisecond}
		dist := map[string]int{}
		for i := range 8 {
			sid, _ := d.createSession(nil)
			d.crashTurn(sid, "/crash-in-tool", "p1")
			if i%2 == 1 {
				d.do("POST", "/session/"+sid+"/resume", nil)
			}
			got := d.concurrently(1+continues, func(j int) request {
				if j == 0 {
					return request{method: "DELETE", path: "/session/" + sid, delay: closeDelays[i%len(closeDelays)]}
				}
				return request{method: "POST", path: "/session/" + sid + "/continue"}
			})
			if got[0].resp.Status != http.StatusOK {
				t.Fatalf("trial %d: close: got %d %s", i, got[0].resp.Status, got[0].resp.Body)
			}
			accepted := 0
			reasons := map[int]string{}
			for j, x := range got[1:] {
				if x.resp.Status == http.StatusAccepted {
					accepted++
					dist["202"]++
					continue
				}
				reasons[j] = checkDeclined(t, fmt.Sprintf("trial %d: continue %d", i, j), x.resp)
				dist["409 "+reasons[j]]++
			}
			for j, reason := range reasons {
				switch {
				case reason == "session_terminal", reason == "session_closing", reason == "turn_active", reason == "turn_queued":
				case reason == "nothing_to_continue" && accepted == 1:
					// The admitted continuation finished before this one
					// planned: nothing is left to continue.
				default:
					t.Errorf("trial %d: continue %d: got reason %q, want session_terminal, session_closing, turn_active or turn_queued (or nothing_to_continue after an admitted one)", i, j, reason)
				}
			}
			if accepted > 1 {
				t.Errorf("trial %d: got %d continues admitted, want at most 1", i, accepted)
			}
			s := d.session(sid)
			if s["state"] != "COMPLETED" {
				t.Errorf("trial %d: session: got %v, want COMPLETED", i, s["state"])
				for _, e := range d.sessionLog(sid) {
					t.Logf("  log %d %s %s", e.Seq, e.Type, e.Payload)
				}
			}
			for _, turn := range list(d.transcript(sid), "turns") {
				if turn["state"] == "running" || turn["state"] == "queued" {
					t.Errorf("trial %d: got turn %v %v after close, want none running or queued", i, turn["promptId"], turn["state"])
				}
			}
			d.waitFor("no agent running after close", func() bool { return d.status(sid)["isAgentRunning"] == false })
		}
		t.Logf("close racing %d continues, 8 trials: %s", continues, distribution(dist))
	})
}

// TestContinueWhileTurnRuns: continue is declined while a turn runs, and
// the running turn is not disturbed.
func TestContinueWhileTurnRuns(t *testing.T) {
	d := startDaemon(t, daemonOptions{leakCheck: true})
	sid, _ := d.createSession(nil)
	d.crashTurn(sid, "/crash-in-tool", "p0")
	d.prompt(sid, "/sleep 1500", "p1")
	d.waitTurnState(sid, "p1", "running")
	r := d.continueSession(sid, nil)
	if reason := checkDeclined(t, "continue while a turn runs", r); reason != "turn_active" {
		t.Errorf("got reason %q, want turn_active", reason)
	}
	if r.Status == http.StatusConflict {
		checkRecovery(t, "declined recovery", recoveryOf(t, r.JSON(t), "recovery"), wantRecovery{kind: "clean", reason: "turn_active"})
	}
	if got := d.waitTurn(sid, "p1")["state"]; got != "completed" {
		t.Errorf("running turn: got %v, want completed", got)
	}
	// The new turn superseded the interrupted one.
	if reason := checkDeclined(t, "continue afterwards", d.continueSession(sid, nil)); reason != "nothing_to_continue" {
		t.Errorf("afterwards: got reason %q, want nothing_to_continue", reason)
	}
}

// TestContinueIdempotentPromptID: retries with the same promptId, at once
// or later, answer with the same turn; other uses of the id conflict.
func TestContinueIdempotentPromptID(t *testing.T) {
	d := startDaemon(t, daemonOptions{leakCheck: true})
	sid, _ := d.createSession(nil)
	d.crashTurn(sid, "/crash-in-tool", "p1")
	epoch := d.recoveryContext(sid)["eventEpoch"].(string)

	const n = 16
	got := d.concurrently(n, func(int) request {
		return request{method: "POST", path: "/session/" + sid + "/continue", body: map[string]any{"promptId": "again"}}
	})
	dist := map[string]int{}
	for i, x := range got {
		if x.resp.Status == http.StatusAccepted {
			dist["202"]++
			if a := x.resp.JSON(t); a["promptId"] != "again" {
				t.Errorf("request %d: got promptId %v, want again", i, a["promptId"])
			}
			continue
		}
		dist[fmt.Sprintf("%d %v", x.resp.Status, x.resp.JSON(t)["code"])]++
	}
	t.Logf("%d concurrent continues with one promptId: %s", n, distribution(dist))
	if dist["202"] != n {
		t.Errorf("concurrent retries: got %s, want %d × 202 with the same turn", distribution(dist), n)
	}
	if got := d.waitTurn(sid, "again")["state"]; got != "completed" {
		t.Fatalf("continue turn: got %v, want completed", got)
	}

	first := checkAccepted(t, "first retry", d.continueSession(sid, map[string]any{"promptId": "again"}), epoch)
	for i := range 3 {
		a := checkAccepted(t, fmt.Sprintf("retry %d", i), d.continueSession(sid, map[string]any{"promptId": "again"}), epoch)
		if a["promptId"] != "again" || a["state"] != "completed" ||
			string(mustJSON(t, a["interruption"])) != string(mustJSON(t, first["interruption"])) {
			t.Errorf("retry %d: got %v, want the same completed turn with the same interruption", i, a)
		}
	}
	checkRecovery(t, "retry interruption", recoveryOf(t, first, "interruption"), wantRecovery{kind: "interrupted_turn", canContinue: true,
		promptID: "p1", interrupt: "agent_exited", dangling: []map[string]any{{"id": "tool-1", "title": "Run crashing tool", "kind": "execute"}}})
	if c := turnsOfKind(d.transcript(sid), "continue"); len(c) != 1 || c[0]["promptId"] != "again" {
		t.Errorf("continue turns: got %v, want only again", c)
	}
	if c := d.continuationsSent(sid); c != 1 {
		t.Errorf("the agent got %d continuation prompts, want 1", c)
	}

	// Without the id, or with a new one, there is nothing left to continue.
	for _, body := range []any{nil, map[string]any{"promptId": "other"}} {
		if reason := checkDeclined(t, fmt.Sprintf("continue %v", body), d.continueSession(sid, body)); reason != "nothing_to_continue" {
			t.Errorf("continue %v: got reason %q, want nothing_to_continue", body, reason)
		}
	}
	// The id of a prompt turn is not a continuation's.
	r := d.continueSession(sid, map[string]any{"promptId": "p1"})
	if r.Status != http.StatusConflict || r.JSON(t)["code"] != "prompt_id_conflict" {
		t.Errorf("continue with a prompt turn's id: got %d %s, want 409 prompt_id_conflict", r.Status, r.Body)
	}
	// A prompt may not reuse the continuation's id either.
	r = d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text("/echo hi"), "promptId": "again"})
	if r.Status != http.StatusConflict || r.JSON(t)["code"] != "prompt_id_conflict" {
		t.Errorf("prompt with the continuation's id: got %d %s, want 409 prompt_id_conflict", r.Status, r.Body)
	}
}

// TestContinueWorkingDirectoryMissing: the restore's cwd check applies to
// continue; nothing is admitted until the directory is back.
func TestContinueWorkingDirectoryMissing(t *testing.T) {
	d := startDaemon(t, daemonOptions{leakCheck: true})
	sid, cwd := d.createSession(nil)
	d.crashTurn(sid, "/crash-in-tool", "p1")
	hidden := cwd + ".moved"
	if err := os.Rename(cwd, hidden); err != nil {
		t.Fatal(err)
	}
	r := d.continueSession(sid, nil)
	if r.Status != http.StatusConflict || r.JSON(t)["code"] != "working_directory_missing" || r.Header.Get("Retry-After") == "" {
		t.Errorf("continue without the cwd: got %d %s (Retry-After %q), want 409 working_directory_missing with Retry-After",
			r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if c := turnsOfKind(d.transcript(sid), "continue"); len(c) != 0 {
		t.Errorf("got %d continue turns, want 0", len(c))
	}
	if err := os.Rename(hidden, cwd); err != nil {
		t.Fatal(err)
	}
	a := checkAccepted(t, "continue with the cwd back", d.continueSession(sid, nil), d.recoveryContext(sid)["eventEpoch"].(string))
	if got := d.waitTurn(sid, a["promptId"].(string))["state"]; got != "completed" {
		t.Errorf("continue turn: got %v, want completed", got)
	}
}

// TestContinueBadRequests: invalid bodies and unknown sessions.
func TestContinueBadRequests(t *testing.T) {
	d := startDaemon(t, daemonOptions{leakCheck: true})
	sid, _ := d.createSession(nil)
	d.crashTurn(sid, "/crash-in-tool", "p1")
	cases := []struct {
		name    string
		path    string
		body    any
		headers map[string]string
		want    int
	}{
		{"unknown field", "/session/" + sid + "/continue", `{"promptId":"x","force":true}`, nil, http.StatusBadRequest},
		{"malformed JSON", "/session/" + sid + "/continue", `{"promptId":`, nil, http.StatusBadRequest},
		{"promptId not a string", "/session/" + sid + "/continue", `{"promptId":7}`, nil, http.StatusBadRequest},
		{"promptId with spaces", "/session/" + sid + "/continue", `{"promptId":"a b"}`, nil, http.StatusBadRequest},
		{"promptId too long", "/session/" + sid + "/continue", `{"promptId":"` + strings.Repeat("x", 65) + `"}`, nil, http.StatusBadRequest},
		{"unknown session", "/session/no-such-session/continue", nil, nil, http.StatusNotFound},
		{"no token", "/session/" + sid + "/continue", nil, map[string]string{}, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.headers
			if h == nil {
				h = map[string]string{"Authorization": "Bearer " + testToken}
			}
			if r := d.doRaw("POST", tc.path, tc.body, h); r.Status != tc.want {
				t.Errorf("got %d %s, want %d", r.Status, r.Body, tc.want)
			}
		})
	}
	if r := d.do("GET", "/session/no-such-session/context", nil); r.Status != http.StatusNotFound {
		t.Errorf("context of an unknown session: got %d %s, want 404", r.Status, r.Body)
	}
	// None of that admitted anything: the session can still be continued.
	if c := turnsOfKind(d.transcript(sid), "continue"); len(c) != 0 {
		t.Errorf("got %d continue turns after bad requests, want 0", len(c))
	}
	checkRecovery(t, "context", recoveryOf(t, d.recoveryContext(sid), "recovery"), wantRecovery{kind: "interrupted_turn", canContinue: true,
		promptID: "p1", interrupt: "agent_exited", dangling: []map[string]any{{"id": "tool-1", "title": "Run crashing tool", "kind": "execute"}}})
}
