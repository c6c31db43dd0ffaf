package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/sessions"
)

// resumeContextHeader opens every prompt that carries the history
// injection (DESIGN.md section 4).
const resumeContextHeader = "RESUME CONTEXT FOR CONTINUING TASK"

// agentProfile is one demo-agent profile of agents.yaml: one capability
// combination of the demo agent.
type agentProfile struct {
	id        string
	stateDir  string
	flags     []string
	noInject  bool // historyContextInjection: false
	maxAgents int  // the profile's own cap; 0 for none
	// authMethod is the profile's agents.yaml authMethod; "" for none.
	authMethod string
	// env is the profile's env.
	env map[string]string
	// readable are more directories its sandbox shows (read-only) besides
	// its state dir, which it may write.
	readable []string
}

// profilesYAML renders agents.yaml for the demo agent profiles. Each
// profile's state dir is unique to the test, so at cleanup (after the
// daemons have stopped) no process naming it may survive.
func profilesYAML(t *testing.T, profiles ...agentProfile) string {
	t.Helper()
	bin := tetherdBinary(t)
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, p := range profiles {
		t.Cleanup(func() { noSurvivors(t, p.stateDir) })
		args, err := json.Marshal(append([]string{"demo-agent", "--state-dir", p.stateDir}, p.flags...))
		if err != nil {
			t.Fatal(err)
		}
		cmd, _ := json.Marshal(bin)
		fmt.Fprintf(&b, "  - id: %s\n    command: %s\n    args: %s\n", p.id, cmd, args)
		// Sandboxed as a user's profile is: its state dir its own.
		sb, _ := json.Marshal(map[string][]string{"writable": {p.stateDir}, "readable": append([]string{}, p.readable...)})
		fmt.Fprintf(&b, "    sandbox: %s\n", sb)
		if p.noInject {
			b.WriteString("    historyContextInjection: false\n")
		}
		if p.maxAgents > 0 {
			fmt.Fprintf(&b, "    maxAgents: %d\n", p.maxAgents)
		}
		if p.authMethod != "" {
			fmt.Fprintf(&b, "    authMethod: %s\n", p.authMethod)
		}
		if len(p.env) > 0 {
			env, err := json.Marshal(p.env)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "    env: %s\n", env)
		}
	}
	return b.String()
}

// noSurvivors fails the test if a process whose command line mentions dir
// is still running 10 s after the test's daemons stopped (and kills it).
func noSurvivors(t *testing.T, dir string) {
	t.Helper()
	pattern := regexp.QuoteMeta(dir)
	end := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command("pgrep", "-f", pattern).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			return
		}
		if time.Now().After(end) {
			for _, p := range pids {
				if pid, err := strconv.Atoi(p); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			t.Errorf("agent processes of %s still running after the daemon stopped (killed now): %v", dir, pids)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// status fetches GET /session/{id}/status.
func (d *daemon) status(sid string) map[string]any {
	d.t.Helper()
	r := d.do("GET", "/session/"+sid+"/status", nil)
	if r.Status != http.StatusOK {
		d.t.Fatalf("status: got %d, want 200: %s", r.Status, r.Body)
	}
	return r.JSON(d.t)
}

// session fetches GET /session/{id}.
func (d *daemon) session(sid string) map[string]any {
	d.t.Helper()
	r := d.do("GET", "/session/"+sid, nil)
	if r.Status != http.StatusOK {
		d.t.Fatalf("session: got %d, want 200: %s", r.Status, r.Body)
	}
	return r.JSON(d.t)
}

// resumeToken is the executor's stored ACP session id.
func (d *daemon) resumeToken(sid string) string {
	d.t.Helper()
	ex, _ := d.session(sid)["executor"].(map[string]any)
	tok, _ := ex["resumeToken"].(string)
	return tok
}

// sessionEvents is the session's durable log as the SSE replay serves it.
func (d *daemon) sessionEvents(sid string) []sseFrame {
	d.t.Helper()
	return durableFrames(d.openStream("/session/"+sid+"/events?follow=false", nil).All())
}

// ofType keeps the frames of one event type.
func ofType(frames []sseFrame, typ string) []sseFrame {
	var out []sseFrame
	for _, f := range frames {
		if f.Event == typ {
			out = append(out, f)
		}
	}
	return out
}

// countTypes counts frames per event type.
func countTypes(frames []sseFrame) map[string]int {
	out := map[string]int{}
	for _, f := range frames {
		out[f.Event]++
	}
	return out
}

// promptedSession creates a session on profile and runs one plain prompt
// (plan, a read tool call, a streamed reply) to completion.
func (d *daemon) promptedSession(profile, promptText string) string {
	d.t.Helper()
	sid, _ := d.createSession(map[string]any{"agentProfileId": profile})
	pid := d.prompt(sid, promptText, "")
	if turn := d.waitTurn(sid, pid); turn["state"] != "completed" {
		d.t.Fatalf("first turn: got %v, want completed", turn)
	}
	return sid
}

// sentPrompts returns the text of the first block of every session/prompt
// the daemon sent to the session's agents.
func (d *daemon) sentPrompts(sid string) []string {
	d.t.Helper()
	var out []string
	for _, m := range d.Sent.requests(sid) {
		if m["method"] != "session/prompt" {
			continue
		}
		params, _ := m["params"].(map[string]any)
		blocks, _ := params["prompt"].([]any)
		text := ""
		if len(blocks) > 0 {
			if b, ok := blocks[0].(map[string]any); ok {
				text, _ = b["text"].(string)
			}
		}
		out = append(out, text)
	}
	return out
}

// restoreMethods lists the ACP methods sent to the session's agents that
// open or restore a session (initialize, session/new|load|resume).
func (d *daemon) restoreMethods(sid string) []string {
	var out []string
	for _, m := range d.Sent.methods(sid) {
		switch m {
		case "initialize", "session/new", "session/load", "session/resume":
			out = append(out, m)
		}
	}
	return out
}

// transcriptCounts are the sizes of what a replay must never duplicate.
type transcriptCounts struct {
	messages, toolCalls, turns int
	// events counts transcript events (messages, chunks, tool calls, plans).
	events map[string]int
}

func (d *daemon) transcriptCounts(sid string) transcriptCounts {
	d.t.Helper()
	tr := d.transcript(sid)
	all := countTypes(d.sessionEvents(sid))
	ev := map[string]int{}
	for _, typ := range []string{events.MessageAdded, events.MessageChunk, events.ToolCallStarted, events.ToolCallUpdated, events.PlanUpdated} {
		ev[typ] = all[typ]
	}
	return transcriptCounts{messages: len(list(tr, "messages")), toolCalls: len(list(tr, "toolCalls")),
		turns: len(list(tr, "turns")), events: ev}
}

func (c transcriptCounts) String() string {
	return fmt.Sprintf("%d messages, %d tool calls, %d turns, events %v", c.messages, c.toolCalls, c.turns, c.events)
}

func (c transcriptCounts) equal(o transcriptCounts) bool {
	if c.messages != o.messages || c.toolCalls != o.toolCalls || c.turns != o.turns {
		return false
	}
	for k, v := range c.events {
		if o.events[k] != v {
			return false
		}
	}
	return true
}

// TestResumeStrategies restores a session after a daemon restart against
// each capability combination of the demo agent, via POST /resume.
func TestResumeStrategies(t *testing.T) {
	type want struct {
		status      int    // POST /resume answer
		strategy    string // session.resumed strategy; "" = no session.resumed
		restored    bool
		fallback    string
		methods     []string // restore methods sent after the restart
		sameToken   bool     // the stored ACP session id is kept
		contextLost bool
		errContains string // for failures: in the status errorMessage
		code        string // for failures: the problem code and status errorCode; "" = agent_start_failed
		reason      string // resumeReason after the restart; "" = agent_not_running
	}
	cases := []struct {
		name string
		skip string
		// first is the profile's flags while the session is created and
		// prompted; restart the flags after the restart. emptyState points
		// the restarted profile at an empty state dir (the agent no longer
		// knows the session).
		first, restart []string
		emptyState     bool
		noInject       bool
		cfg            sessions.Config
		want           want
	}{
		{name: "resume advertised", want: want{status: 200, strategy: "native_resume", restored: true,
			methods: []string{"initialize", "session/resume"}, sameToken: true}},
		{name: "load only", first: []string{"--no-resume"}, restart: []string{"--no-resume"},
			want: want{status: 200, strategy: "native_load", restored: true,
				methods: []string{"initialize", "session/load"}, sameToken: true}},
		{name: "resume advertised but answers -32601, falls back to load", restart: []string{"--resume-unsupported"},
			want: want{status: 200, strategy: "native_load", restored: true,
				methods: []string{"initialize", "session/resume", "session/load"}, sameToken: true}},
		{name: "load with replay after the response", first: []string{"--no-resume"}, restart: []string{"--no-resume", "--replay-after-response"},
			want: want{status: 200, strategy: "native_load", restored: true,
				methods: []string{"initialize", "session/load"}, sameToken: true}},
		{name: "neither load nor resume, history injection", first: []string{"--no-load", "--no-resume"},
			restart: []string{"--no-load", "--no-resume"},
			want: want{status: 200, strategy: "history_injection", fallback: "unsupported",
				methods: []string{"initialize", "session/new"}}},
		{name: "neither load nor resume, no history injection", first: []string{"--no-load", "--no-resume"},
			restart: []string{"--no-load", "--no-resume"}, noInject: true,
			want: want{status: 200, strategy: "fresh", fallback: "unsupported", contextLost: true,
				methods: []string{"initialize", "session/new"}, reason: "not_resumable"}},
		{name: "unknown session -32002 on resume", emptyState: true,
			want: want{status: 200, strategy: "history_injection", fallback: "unknown_session",
				methods: []string{"initialize", "session/resume", "session/new"}}},
		{name: "unknown session -32002 on load", first: []string{"--no-resume"}, restart: []string{"--no-resume"}, emptyState: true,
			want: want{status: 200, strategy: "history_injection", fallback: "unknown_session",
				methods: []string{"initialize", "session/load", "session/new"}}},
		{name: "unknown session -32603 Invalid session identifier",
			restart: []string{"--unknown-session-code", "-32603", "--unknown-session-message", "Internal error",
				"--unknown-session-details", "Invalid session identifier"}, emptyState: true,
			want: want{status: 200, strategy: "history_injection", fallback: "unknown_session",
				methods: []string{"initialize", "session/resume", "session/new"}}},
		{name: "unknown session -32603 Invalid session identifier on load", first: []string{"--no-resume"},
			restart: []string{"--no-resume", "--unknown-session-code", "-32603", "--unknown-session-message", "Internal error",
				"--unknown-session-details", "Invalid session identifier"}, emptyState: true,
			want: want{status: 200, strategy: "history_injection", fallback: "unknown_session",
				methods: []string{"initialize", "session/load", "session/new"}}},
		{name: "unknown session OpenCode service failure falls back",
			restart: []string{"--unknown-session-code", "-32603", "--unknown-session-message", "Internal error: OpenCode service failure",
				"--unknown-session-data", `{"service":"session"}`}, emptyState: true,
			want: want{status: 200, strategy: "history_injection", fallback: "unknown_session",
				methods: []string{"initialize", "session/resume", "session/new"}}},
		{name: "OpenCode cannot connect to API keeps identity",
			restart: []string{"--unknown-session-code", "-32603", "--unknown-session-message", "Internal error: Cannot connect to API: connect ECONNREFUSED",
				"--unknown-session-data", `{"errorName":"APIError","service":"session"}`}, emptyState: true,
			want: want{status: 502, methods: []string{"initialize", "session/resume"}, sameToken: true,
				errContains: "Cannot connect to API"}},
		{name: "load of unknown id succeeds with empty replay", first: []string{"--no-resume"},
			restart: []string{"--no-resume", "--load-unknown-creates"}, emptyState: true,
			want: want{status: 200, strategy: "history_injection", fallback: "empty_replay",
				methods: []string{"initialize", "session/load"}, sameToken: true}},
		{name: "authentication required keeps identity", restart: []string{"--auth-required"},
			want: want{status: 409, methods: []string{"initialize", "session/resume"}, sameToken: true,
				errContains: "session/resume", code: "agent_auth_required"}},
		{name: "agent hangs while restoring keeps identity", restart: []string{"--startup-delay", "30s"},
			cfg:  sessions.Config{StartTimeout: time.Second},
			want: want{status: 502, methods: []string{"initialize"}, sameToken: true, errContains: "timed out"}},
		{name: "agent hangs on session/load keeps identity", first: []string{"--no-resume"},
			restart: []string{"--no-resume", "--hang-on-load"}, cfg: sessions.Config{RestoreTimeout: time.Second},
			want: want{status: 502, methods: []string{"initialize", "session/load"}, sameToken: true,
				errContains: "timed out"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip(tc.skip)
			}
			stateA := t.TempDir()
			prof := agentProfile{id: "agent", stateDir: stateA, flags: tc.first, noInject: tc.noInject}
			d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
			sid := d.promptedSession("agent", "hello")
			token := d.resumeToken(sid)
			if token == "" {
				t.Fatal("got no resume token after the first turn")
			}
			before := d.transcriptCounts(sid)
			head := len(d.sessionEvents(sid))

			prof.flags = tc.restart
			if tc.emptyState {
				prof.stateDir = t.TempDir()
			}
			d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof), sessions: tc.cfg})
			wantReason := tc.want.reason
			if wantReason == "" {
				wantReason = "agent_not_running"
			}
			if st := d.status(sid); st["resumeReason"] != wantReason || st["isAgentRunning"] != false {
				t.Fatalf("status after restart: got %v/%v, want %s, not running", st["resumeReason"], st["isAgentRunning"], wantReason)
			}
			r := d.do("POST", "/session/"+sid+"/resume", nil)
			if r.Status != tc.want.status {
				t.Fatalf("resume: got %d, want %d: %s", r.Status, tc.want.status, r.Body)
			}
			if got := d.restoreMethods(sid); !slices.Equal(got, tc.want.methods) {
				t.Errorf("restore requests: got %v, want %v", got, tc.want.methods)
			}
			if n := len(d.sentPrompts(sid)); n != 0 {
				t.Errorf("got %d prompts sent by the restore, want 0 (agents boot idle)", n)
			}
			after := d.sessionEvents(sid)
			if len(after) < head {
				t.Fatalf("got %d events after restart, want at least the %d from before", len(after), head)
			}
			newEvents := after[head:]
			resumed := ofType(newEvents, events.SessionResumed)
			tokenNow := d.resumeToken(sid)
			if tc.want.sameToken && tokenNow != token {
				t.Errorf("resume token: got %q, want %q kept", tokenNow, token)
			}
			if !tc.want.sameToken && (tokenNow == token || tokenNow == "") {
				t.Errorf("resume token: got %q, want a new ACP session id (was %q)", tokenNow, token)
			}

			if tc.want.status != http.StatusOK {
				// Failure: identity kept, visible error, session usable.
				wantCode := tc.want.code
				if wantCode == "" {
					wantCode = "agent_start_failed"
				}
				p := r.JSON(t)
				if p["code"] != wantCode {
					t.Errorf("problem code: got %v, want %s", p["code"], wantCode)
				}
				if len(resumed) != 0 {
					t.Errorf("got session.resumed %s after a failed restore, want none", resumed[0].Data)
				}
				st := d.status(sid)
				if st["state"] != "WAITING_FOR_INPUT" || st["executorStatus"] != "error" || st["isAgentRunning"] != false ||
					st["isResumable"] != true || st["needsResume"] != true || st["resumeReason"] != "agent_not_running" {
					t.Errorf("status after failed restore: got %v, want WAITING_FOR_INPUT, executor error, resumable agent_not_running", st)
				}
				if msg, _ := st["errorMessage"].(string); !strings.Contains(msg, tc.want.errContains) {
					t.Errorf("status errorMessage: got %q, want it to mention %q", msg, tc.want.errContains)
				}
				if st["errorCode"] != wantCode {
					t.Errorf("status errorCode: got %v, want %s", st["errorCode"], wantCode)
				}
				var sawError bool
				for _, f := range ofType(d.sessionEvents(sid)[head:], events.SessionExecutorStatus) {
					if e := f.JSON(t); e["status"] == "error" {
						sawError = true
						if e["errorCode"] != wantCode {
							t.Errorf("session.executor_status error: got errorCode %v, want %s", e["errorCode"], wantCode)
						}
					}
				}
				if !sawError {
					t.Errorf("got no session.executor_status{status: error} event after the failed restore")
				}
				// The kept identity still works once the agent does.
				prof.flags, prof.stateDir = tc.first, stateA
				d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
				if r := d.do("POST", "/session/"+sid+"/resume", nil); r.Status != http.StatusOK {
					t.Fatalf("resume with a working agent: got %d, want 200: %s", r.Status, r.Body)
				}
				if got := d.resumeToken(sid); got != token {
					t.Errorf("resume token after recovery: got %q, want %q", got, token)
				}
				d.checkOneTruth(sid)
				return
			}

			st := r.JSON(t)
			if st["isAgentRunning"] != true || st["resumeReason"] != "agent_running" || st["executorStatus"] != "ready" ||
				st["state"] != "WAITING_FOR_INPUT" {
				t.Errorf("resume answer: got %v, want the agent running, executor ready, WAITING_FOR_INPUT", st)
			}
			if st["contextLost"] != tc.want.contextLost {
				t.Errorf("contextLost: got %v, want %v", st["contextLost"], tc.want.contextLost)
			}
			if len(resumed) != 1 {
				t.Fatalf("got %d session.resumed events, want 1", len(resumed))
			}
			p := resumed[0].JSON(t)
			if p["strategy"] != tc.want.strategy || p["contextRestored"] != tc.want.restored {
				t.Errorf("session.resumed: got %s, want strategy %s contextRestored %v", resumed[0].Data, tc.want.strategy, tc.want.restored)
			}
			if got, _ := p["fallbackReason"].(string); got != tc.want.fallback {
				t.Errorf("session.resumed fallbackReason: got %q, want %q", got, tc.want.fallback)
			}
			if got := d.transcriptCounts(sid); !got.equal(before) {
				t.Errorf("transcript after restore: got %s, want unchanged %s (nothing replayed into it)", got, before)
			}
			// The restored session takes prompts; exactly that turn is added.
			pid := d.prompt(sid, "/echo after the restart", "")
			if turn := d.waitTurn(sid, pid); turn["state"] != "completed" {
				t.Fatalf("prompt after restore: got %v, want completed", turn)
			}
			if got := d.transcriptCounts(sid); got.turns != before.turns+1 {
				t.Errorf("turns after one more prompt: got %d, want %d", got.turns, before.turns+1)
			}
			if n := d.Sent.count(sid, "initialize"); n != 1 {
				t.Errorf("got %d agent processes started, want 1", n)
			}
			// After each restore the status (contextLost, the executor)
			// and the plan are what the session.resumed and the rest of
			// the log say.
			d.checkOneTruth(sid)
		})
	}
}

// TestLoadReplayIsNotDuplicated checks, for an agent with load only, that
// the replayed history stays out of the transcript and the event log even
// when the transcript holds several kinds of updates.
func TestLoadReplayIsNotDuplicated(t *testing.T) {
	prof := agentProfile{id: "loader", stateDir: t.TempDir(), flags: []string{"--no-resume"}}
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
	sid := d.promptedSession("loader", "hello")
	for _, p := range []string{"/thought pondering", "/stream 20", "/tool fail"} {
		if turn := d.waitTurn(sid, d.prompt(sid, p, "")); turn["state"] != "completed" {
			t.Fatalf("%s: got %v, want completed", p, turn)
		}
	}
	before := d.transcriptCounts(sid)
	beforeMsgs := list(d.transcript(sid), "messages")
	for i := 0; i < 2; i++ { // two restarts: two full replays
		d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
		if r := d.do("POST", "/session/"+sid+"/resume", nil); r.Status != http.StatusOK {
			t.Fatalf("resume #%d: got %d: %s", i+1, r.Status, r.Body)
		}
		resumed := ofType(d.sessionEvents(sid), events.SessionResumed)
		if len(resumed) != i+1 || resumed[i].JSON(t)["strategy"] != "native_load" {
			t.Fatalf("resume #%d: got session.resumed %v, want %d with the last native_load", i+1, resumed, i+1)
		}
		if got := d.transcriptCounts(sid); !got.equal(before) {
			t.Fatalf("after load #%d: got %s, want unchanged %s", i+1, got, before)
		}
	}
	afterMsgs := list(d.transcript(sid), "messages")
	for i := range beforeMsgs {
		if afterMsgs[i]["text"] != beforeMsgs[i]["text"] {
			t.Errorf("message %d: got %q, want %q", i, afterMsgs[i]["text"], beforeMsgs[i]["text"])
		}
	}
	// The next turn is recorded normally (replay suppression ends).
	pid := d.prompt(sid, "/echo fresh words", "")
	d.waitTurn(sid, pid)
	got := d.transcriptCounts(sid)
	if got.messages != before.messages+2 {
		t.Errorf("after one /echo turn: got %d messages, want %d (user + agent)", got.messages, before.messages+2)
	}
	last := list(d.transcript(sid), "messages")
	if n := len(last); n == 0 || last[n-1]["text"] != "fresh words" {
		t.Errorf("last message: got %v, want the agent's reply", last[len(last)-1])
	}
}

// TestHistoryInjectionExactlyOnce checks that after a fresh fallback the
// next prompt, and only that one, carries the resume context, also when
// the daemon restarts in between.
func TestHistoryInjectionExactlyOnce(t *testing.T) {
	t.Run("after unknown session, then native resume", func(t *testing.T) {
		prof := agentProfile{id: "agent", stateDir: t.TempDir()}
		d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
		sid := d.promptedSession("agent", "first question")

		// The agent forgot the session: lazy restore on prompt falls back
		// to session/new and owes the history.
		prof.stateDir = t.TempDir()
		d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
		second := d.prompt(sid, "second question", "second")
		if turn := d.waitTurn(sid, second); turn["state"] != "completed" {
			t.Fatalf("second: got %v, want completed", turn)
		}
		resumed := ofType(d.sessionEvents(sid), events.SessionResumed)
		if len(resumed) != 1 || resumed[0].JSON(t)["strategy"] != "history_injection" ||
			resumed[0].JSON(t)["fallbackReason"] != "unknown_session" {
			t.Fatalf("got session.resumed %v, want one history_injection after unknown_session", resumed)
		}
		sent := d.sentPrompts(sid)
		if len(sent) != 1 {
			t.Fatalf("got %d prompts sent, want 1", len(sent))
		}
		checkInjected(t, sent[0], "first question", "second question")
		checkTurnInjected(t, d, sid, "second", true)
		// The transcript keeps what the user typed, not the injection.
		if m := userMessage(t, d, sid, "second"); m != "second question" {
			t.Errorf("stored user message: got %q, want %q", m, "second question")
		}
		// The agent read the injected prompt: briefed with the history
		// (the first turn's question and answer), it answered the request.
		if reply := agentReply(t, d, sid, "second"); !strings.HasPrefix(reply, "[briefed with ") || !strings.Contains(reply, "You said: second question") {
			t.Errorf("agent reply: got %.80q, want the demo agent briefed by the resume context, answering the request", reply)
		}

		third := d.prompt(sid, "/echo third", "third")
		d.waitTurn(sid, third)
		if sent := d.sentPrompts(sid); len(sent) != 2 || sent[1] != "/echo third" {
			t.Fatalf("third prompt sent as %q, want exactly %q", sent[1:], "/echo third")
		}
		checkTurnInjected(t, d, sid, "third", false)

		// Across another restart (the agent now restores natively) the
		// context is not injected again.
		d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
		fourth := d.prompt(sid, "/echo fourth", "fourth")
		d.waitTurn(sid, fourth)
		if sent := d.sentPrompts(sid); len(sent) != 1 || sent[0] != "/echo fourth" {
			t.Errorf("fourth prompt sent as %q, want exactly %q", sent, "/echo fourth")
		}
		checkTurnInjected(t, d, sid, "fourth", false)
		if r := ofType(d.sessionEvents(sid), events.SessionResumed); r[len(r)-1].JSON(t)["strategy"] != "native_resume" {
			t.Errorf("last session.resumed: got %s, want native_resume", r[len(r)-1].Data)
		}
	})

	t.Run("owed injection survives a restart before the next prompt", func(t *testing.T) {
		prof := agentProfile{id: "plain", stateDir: t.TempDir(), flags: []string{"--no-load", "--no-resume"}}
		d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
		sid := d.promptedSession("plain", "first question")

		d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
		if r := d.do("POST", "/session/"+sid+"/resume", nil); r.Status != http.StatusOK {
			t.Fatalf("resume: got %d: %s", r.Status, r.Body)
		}
		if n := len(d.sentPrompts(sid)); n != 0 {
			t.Fatalf("got %d prompts sent by resume, want 0", n)
		}
		// Restart again before anything was prompted.
		d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
		second := d.prompt(sid, "/echo second", "second")
		d.waitTurn(sid, second)
		third := d.prompt(sid, "/echo third", "third")
		d.waitTurn(sid, third)
		sent := d.sentPrompts(sid)
		if len(sent) != 2 {
			t.Fatalf("got %d prompts sent, want 2", len(sent))
		}
		checkInjected(t, sent[0], "first question", "/echo second")
		if sent[1] != "/echo third" {
			t.Errorf("third prompt sent as %.80q, want exactly %q (injected once only)", sent[1], "/echo third")
		}
		checkTurnInjected(t, d, sid, "second", true)
		checkTurnInjected(t, d, sid, "third", false)
		resumed := ofType(d.sessionEvents(sid), events.SessionResumed)
		for _, f := range resumed {
			if f.JSON(t)["strategy"] != "history_injection" {
				t.Errorf("session.resumed: got %s, want history_injection", f.Data)
			}
		}
		if len(resumed) != 2 {
			t.Errorf("got %d session.resumed events, want 2 (one per restore)", len(resumed))
		}
	})
}

func checkInjected(t *testing.T, sent, history, current string) {
	t.Helper()
	if !strings.HasPrefix(sent, resumeContextHeader+"\n") {
		t.Fatalf("prompt sent as %.120q, want it to start with %q", sent, resumeContextHeader)
	}
	for _, want := range []string{"=== EXECUTION HISTORY ===", "[USER]: " + history, "[ASSISTANT]: You said: " + history,
		"[TOOL CALL: Read README.md]", "[TOOL RESULT: Read README.md]", "=== CURRENT REQUEST ===\n" + current, "=== INSTRUCTIONS ==="} {
		if !strings.Contains(sent, want) {
			t.Errorf("injected prompt lacks %q:\n%s", want, sent)
		}
	}
	if n := strings.Count(sent, resumeContextHeader); n != 1 {
		t.Errorf("got the resume context header %d times in one prompt, want 1", n)
	}
}

func checkTurnInjected(t *testing.T, d *daemon, sid, pid string, want bool) {
	t.Helper()
	turn, err := d.Store.GetTurn(context.Background(), sid, pid)
	if err != nil {
		t.Fatalf("get turn %s: %v", pid, err)
	}
	if turn.ContextInjected != want {
		t.Errorf("turn %s contextInjected: got %v, want %v", pid, turn.ContextInjected, want)
	}
}

func userMessage(t *testing.T, d *daemon, sid, pid string) string {
	t.Helper()
	for _, m := range list(d.transcript(sid), "messages") {
		if m["promptId"] == pid && m["role"] == "user" {
			return m["text"].(string)
		}
	}
	t.Fatalf("no user message for %s", pid)
	return ""
}

func agentReply(t *testing.T, d *daemon, sid, pid string) string {
	t.Helper()
	var parts []string
	for _, m := range list(d.transcript(sid), "messages") {
		if m["promptId"] == pid && m["role"] == "agent" {
			parts = append(parts, m["text"].(string))
		}
	}
	return strings.Join(parts, "")
}

// TestStatusReasons checks GET /session/{id}/status for each resume reason.
func TestStatusReasons(t *testing.T) {
	type want struct {
		reason                    string
		running, resumable, needs bool
		executor, state           string
		errorMessage              string // "present", "absent" or "" (either)
		agentExecution            bool
	}
	check := func(t *testing.T, st map[string]any, sid string, w want) {
		t.Helper()
		got := fmt.Sprintf("%v/%v/%v/%v/%v/%v", st["resumeReason"], st["isAgentRunning"], st["isResumable"], st["needsResume"],
			st["executorStatus"], st["state"])
		exp := fmt.Sprintf("%v/%v/%v/%v/%v/%v", w.reason, w.running, w.resumable, w.needs, w.executor, w.state)
		if got != exp {
			t.Errorf("reason/running/resumable/needsResume/executor/state: got %s, want %s", got, exp)
		}
		if st["sessionId"] != sid || st["taskId"] == "" || st["agentProfileId"] == "" || st["runtime"] != "standalone" {
			t.Errorf("identity fields: got %v", st)
		}
		if _, ok := st["errorMessage"]; w.errorMessage != "" && ok != (w.errorMessage == "present") {
			t.Errorf("errorMessage: got %v, want %s", st["errorMessage"], w.errorMessage)
		}
		if _, ok := st["agentExecutionId"]; ok != w.agentExecution {
			t.Errorf("agentExecutionId present: got %v (%v), want %v", ok, st["agentExecutionId"], w.agentExecution)
		}
	}

	t.Run("agent_running", func(t *testing.T) {
		d := startDaemon(t, daemonOptions{leakCheck: true})
		sid := d.promptedSession("demo", "hello")
		check(t, d.status(sid), sid, want{reason: "agent_running", running: true, resumable: true,
			executor: "ready", state: "WAITING_FOR_INPUT", errorMessage: "absent", agentExecution: true})
	})
	t.Run("agent_not_running", func(t *testing.T) {
		d := startDaemon(t, daemonOptions{leakCheck: true})
		sid := d.promptedSession("demo", "hello")
		d = d.restart(daemonOptions{})
		// Reconciliation keeps the reason why the agent stopped.
		check(t, d.status(sid), sid, want{reason: "agent_not_running", resumable: true, needs: true,
			executor: "stopped", state: "WAITING_FOR_INPUT", agentExecution: true})
	})
	t.Run("agent_not_started after failed starts", func(t *testing.T) {
		// The agent never opened a session (authentication required) and
		// no turn ran: status and recovery say so, not that a turn finished.
		prof := agentProfile{id: "locked", stateDir: t.TempDir(), flags: []string{"--auth-required"}}
		d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
		sid, _ := d.createSession(map[string]any{"agentProfileId": "locked"})
		d.waitFor("the start to fail", func() bool { return d.status(sid)["executorStatus"] == "error" })
		d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
		check(t, d.status(sid), sid, want{reason: "agent_not_started", resumable: true, needs: true,
			executor: "error", state: "WAITING_FOR_INPUT", errorMessage: "present", agentExecution: true})
		rec, _ := d.recoveryContext(sid)["recovery"].(map[string]any)
		if rec["kind"] != "clean" || rec["reason"] != "nothing_to_continue" || rec["notice"] != "No turn has run yet: nothing to continue." {
			t.Errorf("recovery: got %v, want clean, nothing_to_continue, notice %q", rec, "No turn has run yet: nothing to continue.")
		}
	})
	t.Run("agent_not_running_fresh_start", func(t *testing.T) {
		// A turn was admitted (the initial prompt) but the agent never
		// opened a session: the next start is a fresh session/new.
		prof := agentProfile{id: "locked", stateDir: t.TempDir(), flags: []string{"--auth-required"}}
		d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
		r := d.createRaw("locked", "hello")
		if r.Status != http.StatusCreated {
			t.Fatalf("create: got %d, want 201: %s", r.Status, r.Body)
		}
		sid := r.JSON(t)["id"].(string)
		d.waitFor("the start to fail", func() bool { return d.status(sid)["executorStatus"] == "error" })
		d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
		check(t, d.status(sid), sid, want{reason: "agent_not_running_fresh_start", resumable: true, needs: true,
			executor: "error", state: "WAITING_FOR_INPUT", errorMessage: "present", agentExecution: true})
	})
	t.Run("not_resumable", func(t *testing.T) {
		prof := agentProfile{id: "amnesiac", stateDir: t.TempDir(), flags: []string{"--no-load", "--no-resume"}, noInject: true}
		d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
		sid := d.promptedSession("amnesiac", "hello")
		d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
		st := d.status(sid)
		check(t, st, sid, want{reason: "not_resumable", executor: "stopped", state: "WAITING_FOR_INPUT",
			agentExecution: true})
		if st["historyContextInjection"] == true {
			t.Errorf("historyContextInjection: got true, want false/absent")
		}
	})
	t.Run("session_terminal", func(t *testing.T) {
		d := startDaemon(t, daemonOptions{leakCheck: true})
		sid := d.promptedSession("demo", "hello")
		if r := d.do("DELETE", "/session/"+sid, nil); r.Status != http.StatusOK {
			t.Fatalf("close: got %d", r.Status)
		}
		d = d.restart(daemonOptions{})
		check(t, d.status(sid), sid, want{reason: "session_terminal", executor: "stopped", state: "COMPLETED",
			agentExecution: true})
		r := d.do("POST", "/session/"+sid+"/resume", nil)
		if r.Status != http.StatusConflict || r.JSON(t)["code"] != "session_terminal" {
			t.Errorf("resume of a closed session: got %d %s, want 409 session_terminal", r.Status, r.Body)
		}
		if n := d.Sent.count(sid, "initialize"); n != 0 {
			t.Errorf("got %d agent starts for a closed session, want 0", n)
		}
	})
}

// TestLazyModeRestoresOnPrompt: after a restart nothing starts until the
// session is used; a prompt restores the agent first, then runs.
func TestLazyModeRestoresOnPrompt(t *testing.T) {
	d := startDaemon(t, daemonOptions{leakCheck: true})
	sid := d.promptedSession("demo", "hello")
	token := d.resumeToken(sid)
	d = d.restart(daemonOptions{})
	head := len(d.sessionEvents(sid))
	// Looking at the session does not start anything.
	d.status(sid)
	d.transcript(sid)
	d.session(sid)
	time.Sleep(200 * time.Millisecond) // give a wrongly eager restore a chance to show
	if n := d.Sent.count(sid, "initialize"); n != 0 {
		t.Fatalf("got %d agent starts before any prompt (lazy mode), want 0", n)
	}
	if st := d.status(sid); st["isAgentRunning"] != false || st["needsResume"] != true {
		t.Fatalf("status: got %v, want not running, needs resume", st)
	}
	pid := d.prompt(sid, "/echo lazy", "lazy")
	if turn := d.waitTurn(sid, pid); turn["state"] != "completed" {
		t.Fatalf("prompt: got %v, want completed", turn)
	}
	if got := d.restoreMethods(sid); !slices.Equal(got, []string{"initialize", "session/resume"}) {
		t.Errorf("restore requests: got %v, want initialize, session/resume", got)
	}
	if got := d.resumeToken(sid); got != token {
		t.Errorf("resume token: got %q, want %q", got, token)
	}
	// session.resumed comes before the turn starts.
	var order []string
	for _, f := range d.sessionEvents(sid)[head:] {
		if f.Event == events.SessionResumed || (f.Event == events.TurnStarted && f.JSON(t)["promptId"] == "lazy") {
			order = append(order, f.Event)
		}
	}
	if !slices.Equal(order, []string{events.SessionResumed, events.TurnStarted}) {
		t.Errorf("got %v, want session.resumed then turn.started", order)
	}
}

// TestEagerModeRestoresInBackground: with resume on start, resumable
// sessions come back without any request; closed ones do not.
func TestEagerModeRestoresInBackground(t *testing.T) {
	d := startDaemon(t, daemonOptions{leakCheck: true})
	var sids []string
	for i := 0; i < 3; i++ {
		sids = append(sids, d.promptedSession("demo", fmt.Sprintf("hello %d", i)))
	}
	closed := d.promptedSession("demo", "bye")
	if r := d.do("DELETE", "/session/"+closed, nil); r.Status != http.StatusOK {
		t.Fatalf("close: got %d", r.Status)
	}
	d = d.restart(daemonOptions{eager: 2})
	for _, sid := range sids {
		d.waitFor("eager restore of "+sid, func() bool { return d.status(sid)["isAgentRunning"] == true })
		// The agent runs (in memory) a moment before its session.resumed
		// event is committed.
		d.waitFor("session.resumed of "+sid, func() bool { return len(ofType(d.sessionEvents(sid), events.SessionResumed)) > 0 })
		resumed := ofType(d.sessionEvents(sid), events.SessionResumed)
		if len(resumed) != 1 || resumed[0].JSON(t)["strategy"] != "native_resume" {
			t.Errorf("session %s: got session.resumed %v, want one native_resume", sid, resumed)
		}
		if n := len(d.sentPrompts(sid)); n != 0 {
			t.Errorf("session %s: got %d prompts sent by the eager restore, want 0", sid, n)
		}
		if st := d.status(sid); st["state"] != "WAITING_FOR_INPUT" || st["executorStatus"] != "ready" {
			t.Errorf("session %s: got %v/%v, want WAITING_FOR_INPUT/ready", sid, st["state"], st["executorStatus"])
		}
	}
	if n := d.Sent.count(closed, "initialize"); n != 0 {
		t.Errorf("closed session: got %d agent starts, want 0", n)
	}
	// A restored session takes a prompt without another start.
	pid := d.prompt(sids[0], "/echo eager", "")
	d.waitTurn(sids[0], pid)
	if n := d.Sent.count(sids[0], "initialize"); n != 1 {
		t.Errorf("got %d agent starts, want 1", n)
	}
}

// TestEagerModeRestoresNewestFirst: with concurrency 1 the order of the
// starts is observable.
func TestEagerModeRestoresNewestFirst(t *testing.T) {
	d := startDaemon(t, daemonOptions{leakCheck: true})
	var sids []string
	for i := 0; i < 3; i++ {
		sids = append(sids, d.promptedSession("demo", fmt.Sprintf("hello %d", i)))
		time.Sleep(20 * time.Millisecond) // distinct updatedAt
	}
	d = d.restart(daemonOptions{eager: 1})
	for _, sid := range sids {
		d.waitFor("eager restore", func() bool { return d.status(sid)["isAgentRunning"] == true })
	}
	order := d.Sent.startOrder()
	want := []string{sids[2], sids[1], sids[0]}
	if !slices.Equal(order, want) {
		t.Errorf("restore order: got %v, want newest first %v", order, want)
	}
}

// TestConcurrentResumeStartsOneAgent: eight simultaneous POST /resume on
// one session share one restore.
func TestConcurrentResumeStartsOneAgent(t *testing.T) {
	prof := agentProfile{id: "agent", stateDir: t.TempDir()}
	d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof)})
	sid := d.promptedSession("agent", "hello")
	// A slow start makes sure the requests overlap.
	prof.flags = []string{"--startup-delay", "500ms"}
	d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
	head := len(d.sessionEvents(sid))

	const n = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	codes := make([]int, n)
	bodies := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", d.URL+"/session/"+sid+"/resume", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := d.client.Do(req)
			if err != nil {
				bodies[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			codes[i], bodies[i] = resp.StatusCode, buf.String()
		}()
	}
	close(start)
	wg.Wait()
	for i := range codes {
		if codes[i] != http.StatusOK || !strings.Contains(bodies[i], `"isAgentRunning":true`) {
			t.Errorf("request %d: got %d %s, want 200 with the agent running", i, codes[i], bodies[i])
		}
	}
	if got := d.Sent.count(sid, "initialize"); got != 1 {
		t.Errorf("got %d agent processes started, want 1", got)
	}
	newEvents := d.sessionEvents(sid)[head:]
	starting := 0
	for _, f := range ofType(newEvents, events.SessionExecutorStatus) {
		if f.JSON(t)["status"] == "starting" {
			starting++
		}
	}
	if starting != 1 {
		t.Errorf("got %d session.executor_status{starting} events, want 1", starting)
	}
	if got := len(ofType(newEvents, events.SessionResumed)); got != 1 {
		t.Errorf("got %d session.resumed events, want 1", got)
	}
}

// TestHistoryExportJSONL checks GET /session/{id}/history.jsonl.
func TestHistoryExportJSONL(t *testing.T) {
	d := startDaemon(t, daemonOptions{leakCheck: true})
	sid := d.promptedSession("demo", "hello")
	crash := d.prompt(sid, "/crash-in-tool", "crash")
	d.waitTurn(sid, crash)

	r := d.do("GET", "/session/"+sid+"/history.jsonl", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("got %d, want 200: %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-ndjson") {
		t.Errorf("content type: got %q, want application/x-ndjson", ct)
	}
	type entry struct {
		Type       string    `json:"type"`
		PromptID   string    `json:"promptId"`
		Text       string    `json:"text"`
		ToolCallID string    `json:"toolCallId"`
		Name       string    `json:"name"`
		Status     string    `json:"status"`
		Time       time.Time `json:"time"`
	}
	var got []entry
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	for sc.Scan() {
		var e entry
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if e.Time.IsZero() || e.PromptID == "" {
			t.Errorf("line %q: want time and promptId", sc.Text())
		}
		got = append(got, e)
	}
	if !bytes.HasSuffix(r.Body, []byte("\n")) {
		t.Errorf("body does not end with a newline")
	}
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, e.Type)
	}
	wantKinds := []string{"user_message", "tool_call", "tool_result", "agent_message", "user_message", "tool_call", "tool_result"}
	if !slices.Equal(kinds, wantKinds) {
		t.Fatalf("entry types: got %v, want %v", kinds, wantKinds)
	}
	if got[0].Text != "hello" || got[1].Name != "Read README.md" || got[2].Status != "completed" ||
		!strings.Contains(got[2].Text, "hello from the fixture") || !strings.HasPrefix(got[3].Text, "You said: hello.") {
		t.Errorf("first turn entries: got %+v", got[:4])
	}
	if got[4].Text != "/crash-in-tool" || got[5].Name != "Run crashing tool" || got[6].Status != "failed" ||
		!strings.Contains(got[6].Text, "Tool execution result was not recorded: interrupted by agent exited") {
		t.Errorf("crashed turn entries: got %+v", got[4:])
	}
	if got[1].ToolCallID == "" || got[1].ToolCallID != got[2].ToolCallID {
		t.Errorf("tool call and result ids: got %q and %q, want the same", got[1].ToolCallID, got[2].ToolCallID)
	}
	if r := d.do("GET", "/session/no-such-session/history.jsonl", nil); r.Status != http.StatusNotFound {
		t.Errorf("unknown session: got %d, want 404", r.Status)
	}
}

// TestCleanStopLeavesRunningTurnForReconcile: a clean daemon stop (what
// SIGTERM does) leaves running turns for the next start-up, which marks
// them interrupted with reason daemon_restart (Manager.Shutdown's
// contract), with synthetic tool results and expired permissions. Several
// sessions with turns that wait in different ways make a race visible.
func TestCleanStopLeavesRunningTurnForReconcile(t *testing.T) {
	d := startDaemon(t, daemonOptions{leakCheck: true})
	prompts := []string{"/permission", "/hang", "/sleep 600000"}
	type running struct{ sid, prompt string }
	var rs []running
	for i := 0; i < 9; i++ {
		r := running{prompt: prompts[i%len(prompts)]}
		r.sid, _ = d.createSession(nil)
		d.prompt(r.sid, r.prompt, "p1")
		rs = append(rs, r)
	}
	for _, r := range rs {
		d.waitFor(r.prompt+" to be under way", func() bool {
			if r.prompt == "/permission" {
				return len(list(d.transcript(r.sid), "pendingPermissions")) == 1
			}
			return len(list(d.transcript(r.sid), "messages")) >= 2 // user + first agent chunk
		})
	}
	d = d.restart(daemonOptions{})
	for _, r := range rs {
		turn := d.turn(r.sid, "p1")
		if turn["state"] != "interrupted" || turn["interruptReason"] != "daemon_restart" {
			t.Errorf("%s: turn got %v/%v (error %v), want interrupted/daemon_restart",
				r.prompt, turn["state"], turn["interruptReason"], turn["error"])
			continue
		}
		ti := ofType(d.sessionEvents(r.sid), events.TurnInterrupted)
		if len(ti) != 1 || ti[0].JSON(t)["reason"] != "daemon_restart" {
			t.Errorf("%s: got turn.interrupted %v, want one with reason daemon_restart", r.prompt, ti)
		}
		if st := d.status(r.sid); st["state"] != "WAITING_FOR_INPUT" || st["executorStatus"] != "stopped" {
			t.Errorf("%s: status got %v/%v, want WAITING_FOR_INPUT/stopped", r.prompt, st["state"], st["executorStatus"])
		}
		if n := d.Sent.count(r.sid, "initialize"); n != 0 {
			t.Errorf("%s: got %d agent starts during reconciliation, want 0", r.prompt, n)
		}
		if r.prompt != "/permission" {
			continue
		}
		tr := d.transcript(r.sid)
		if p := list(tr, "pendingPermissions"); len(p) != 0 {
			t.Errorf("got pending permissions %v, want none (expired)", p)
		}
		calls := list(tr, "toolCalls")
		if len(calls) != 1 || calls[0]["status"] != "failed" || calls[0]["interrupted"] != true ||
			!strings.Contains(string(mustJSON(t, calls[0]["content"])),
				"Tool execution result was not recorded: interrupted by daemon restart. Treat as failure and retry if needed.") {
			t.Errorf("tool calls: got %v, want one failed interrupted call with the synthetic result", calls)
		}
		if dangling, _ := ti[0].JSON(t)["danglingToolCalls"].([]any); len(dangling) != 1 {
			t.Errorf("turn.interrupted: got %s, want one dangling tool call", ti[0].Data)
		}
	}
}

// TestShutdownStopsAgentBeingStarted: a daemon stop while an agent is
// still starting (restore in flight) must not leave that agent running.
func TestShutdownStopsAgentBeingStarted(t *testing.T) {
	prof := agentProfile{id: "slow", stateDir: t.TempDir(), flags: []string{"--startup-delay", "1s"}}
	d := startDaemon(t, daemonOptions{agentsYAML: profilesYAML(t, prof)})
	sid, _ := d.createSession(map[string]any{"agentProfileId": "slow"})
	if st := d.status(sid); st["executorStatus"] != "starting" {
		t.Fatalf("executor: got %v, want starting", st["executorStatus"])
	}
	d.stop()
	pattern := regexp.QuoteMeta(prof.stateDir)
	end := time.Now().Add(8 * time.Second)
	for {
		out, _ := exec.Command("pgrep", "-f", pattern).Output()
		if len(strings.Fields(string(out))) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Errorf("agent being started when the daemon stopped still runs 8s later: pids %s", strings.Fields(string(out)))
			return // noSurvivors kills it
		}
		time.Sleep(100 * time.Millisecond)
	}
}
