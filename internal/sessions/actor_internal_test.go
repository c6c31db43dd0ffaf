package sessions

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
)

var turnEvents = []string{events.TurnQueued, events.TurnStarted, events.MessageAdded, events.MessageChunk, events.ToolCallStarted,
	events.ToolCallUpdated, events.TurnCompleted, events.TurnCancelled, events.TurnFailed, events.TurnInterrupted}

// TestActorTurns drives turns through the actor against a scripted agent
// and checks what was committed, in order.
func TestActorTurns(t *testing.T) {
	cases := []struct {
		name string
		// run drives the scene and returns the prompt ids of its turns.
		run  func(t *testing.T, s *scene) []string
		want []string
	}{
		{
			name: "prompt, chunks and end_turn complete the turn",
			run: func(t *testing.T, s *scene) []string {
				a := s.prompt(t, "hello")
				p := s.agent.prompt(t)
				s.agent.update(t, chunk("Hel", "m1"))
				s.agent.update(t, chunk("lo", "m1"))
				p.answer("end_turn")
				s.waitEvent(t, events.TurnCompleted)
				if tr := s.turn(t, a.Turn.PromptID); tr.State != session.TurnCompleted || tr.StopReason != "end_turn" {
					t.Errorf("got turn %s (stop %q), want %s (end_turn)", tr.State, tr.StopReason, session.TurnCompleted)
				}
				msgs, err := s.r.st.ListMessages(context.Background(), s.sess.ID)
				if err != nil {
					t.Fatal(err)
				}
				if len(msgs) != 2 || msgs[0].Text != "hello" || msgs[1].Role != session.RoleAgent || msgs[1].Text != "Hello" {
					t.Errorf("got messages %+v, want the user's hello and the agent's Hello", msgs)
				}
				return []string{a.Turn.PromptID}
			},
			want: []string{"turn.queued A", "turn.started A", "message.added A", "message.added A", "message.chunk A", "turn.completed A"},
		},
		{
			name: "a queued prompt runs after the first",
			run: func(t *testing.T, s *scene) []string {
				a := s.prompt(t, "first")
				pa := s.agent.prompt(t)
				b := s.prompt(t, "second")
				if b.Turn.State != session.TurnQueued {
					t.Errorf("got second turn %s while the first runs, want %s", b.Turn.State, session.TurnQueued)
				}
				pa.answer("end_turn")
				pb := s.agent.prompt(t)
				if got := promptText(pb.prompt); got != "second" {
					t.Errorf("got second prompt %q, want %q", got, "second")
				}
				pb.answer("end_turn")
				s.waitEvent(t, events.TurnCompleted)
				s.waitEvent(t, events.TurnCompleted)
				return []string{a.Turn.PromptID, b.Turn.PromptID}
			},
			want: []string{"turn.queued A", "turn.started A", "message.added A", "turn.queued B", "turn.completed A",
				"turn.started B", "message.added B", "turn.completed B"},
		},
		{
			name: "cancel during a turn ends it cancelled",
			run: func(t *testing.T, s *scene) []string {
				a := s.prompt(t, "long")
				p := s.agent.prompt(t)
				s.agent.update(t, chunk("working", "m1"))
				res, err := s.r.mgr.Cancel(context.Background(), s.sess.ID, CancelInput{})
				if err != nil || !res.Cancelled || res.PromptID != a.Turn.PromptID {
					t.Errorf("cancel: got %+v, %v; want the running turn cancelled", res, err)
				}
				s.agent.cancelled(t)
				p.answer("cancelled")
				s.waitEvent(t, events.TurnCancelled)
				if tr := s.turn(t, a.Turn.PromptID); tr.State != session.TurnCancelled || !tr.CancelRequested {
					t.Errorf("got turn %s (cancel requested %t), want %s (true)", tr.State, tr.CancelRequested, session.TurnCancelled)
				}
				return []string{a.Turn.PromptID}
			},
			want: []string{"turn.queued A", "turn.started A", "message.added A", "message.added A", "turn.cancelled A"},
		},
		{
			name: "an agent error fails the turn",
			run: func(t *testing.T, s *scene) []string {
				a := s.prompt(t, "hello")
				s.agent.prompt(t).fail(errInternal)
				s.waitEvent(t, events.TurnFailed)
				if tr := s.turn(t, a.Turn.PromptID); tr.State != session.TurnFailed || tr.ErrorCode != "agent_error_-32603" {
					t.Errorf("got turn %s (code %q), want %s (agent_error_-32603)", tr.State, tr.ErrorCode, session.TurnFailed)
				}
				return []string{a.Turn.PromptID}
			},
			want: []string{"turn.queued A", "turn.started A", "message.added A", "turn.failed A"},
		},
		{
			name: "the agent exiting mid-turn interrupts the turn",
			run: func(t *testing.T, s *scene) []string {
				a := s.prompt(t, "run a tool")
				s.agent.prompt(t)
				s.agent.update(t, acp.Update{SessionID: "fake-acp-session", Kind: acp.UpdateToolCall,
					Tool: &acp.ToolCall{ID: "tc1", Title: strp("ls"), Status: strp("in_progress")}})
				s.agent.end(acp.Exit{Code: 1, Stderr: "boom"})
				s.waitEvent(t, events.TurnInterrupted)
				tr := s.turn(t, a.Turn.PromptID)
				if tr.State != session.TurnInterrupted || tr.InterruptReason != "agent_exited" || tr.ExitCode == nil || *tr.ExitCode != 1 {
					t.Errorf("got turn %s (reason %q, exit %v), want %s (agent_exited, 1)", tr.State, tr.InterruptReason, tr.ExitCode, session.TurnInterrupted)
				}
				st := s.status(t)
				if st.Session.State != session.SessionWaitingForInput || st.IsAgentRunning {
					t.Errorf("got session %s (agent running %t), want %s without agent", st.Session.State, st.IsAgentRunning, session.SessionWaitingForInput)
				}
				if st.Executor.Status != session.ExecutorStopped || st.Executor.ExitCode == nil || *st.Executor.ExitCode != 1 {
					t.Errorf("got executor %s (exit %v), want %s (1)", st.Executor.Status, st.Executor.ExitCode, session.ExecutorStopped)
				}
				return []string{a.Turn.PromptID}
			},
			want: []string{"turn.queued A", "turn.started A", "message.added A", "tool_call.started A", "tool_call.updated A",
				"message.added A", "turn.interrupted A"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeRig(t).readySession(t)
			prompts := tc.run(t, s)
			if got := s.types(t, prompts, turnEvents...); !slices.Equal(got, tc.want) {
				t.Errorf("got events\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestActorPermissions: a permission request during a turn is answered by
// the client's choice, or expires when the agent goes away.
func TestActorPermissions(t *testing.T) {
	req := acp.PermissionRequest{SessionID: "fake-acp-session", Tool: acp.ToolCall{ID: "tc1", Title: strp("rm -rf build")},
		Options: []acp.PermissionOption{{ID: "ok", Name: "Allow", Kind: "allow_once"}, {ID: "no", Name: "Reject", Kind: "reject_once"}}}
	cases := []struct {
		name string
		// answer resolves the open request; "" lets the agent exit instead.
		answer    string
		wantAgent acp.PermissionOutcome
		wantState session.PermissionState
	}{
		{"allowed", "ok", acp.PermissionOutcome{OptionID: "ok"}, session.PermissionSelected},
		{"rejected", "no", acp.PermissionOutcome{OptionID: "no"}, session.PermissionSelected},
		{"expired when the agent exits", "", acp.PermissionOutcome{Cancelled: true}, session.PermissionExpired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := newFakeRig(t).readySession(t)
			s.prompt(t, "clean up")
			p := s.agent.prompt(t)
			got := s.agent.askPermission(req)
			s.waitEvent(t, events.PermissionRequested)
			open, err := s.r.st.ListPermissions(ctx, s.sess.ID, session.PermissionPending)
			if err != nil || len(open) != 1 {
				t.Fatalf("got pending permissions %+v, %v; want one", open, err)
			}
			id := open[0].ID
			if tc.answer != "" {
				if _, err := s.r.mgr.AnswerPermission(ctx, s.sess.ID, id, acp.PermissionOutcome{OptionID: tc.answer}); err != nil {
					t.Fatalf("answer: %v", err)
				}
			} else {
				s.agent.end(acp.Exit{Code: -1, Signal: "killed"})
			}
			if out := recv(t, got, "the agent's permission request was never answered"); out != tc.wantAgent {
				t.Errorf("the agent got %+v, want %+v", out, tc.wantAgent)
			}
			if tc.answer != "" {
				p.answer("end_turn")
				s.waitEvent(t, events.TurnCompleted)
			} else {
				s.waitEvent(t, events.TurnInterrupted)
			}
			s.status(t)
			perm, err := s.r.st.GetPermission(ctx, s.sess.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			if perm.State != tc.wantState || (tc.answer != "" && perm.SelectedOptionID != tc.answer) {
				t.Errorf("got permission %s (option %q), want %s (%q)", perm.State, perm.SelectedOptionID, tc.wantState, tc.answer)
			}
		})
	}
}

// TestActorRestore: after a restart retired the actor, the stored ACP
// session is restored the way the agent's capabilities allow, falling back
// to session/new only when the agent says it cannot.
func TestActorRestore(t *testing.T) {
	replay := []acp.Update{{Kind: acp.UpdateUserMessage, Text: "hello"}}
	cases := []struct {
		name         string
		script       fakeScript
		wantCalls    []string
		wantStrategy string
		wantFallback string
	}{
		{"resume advertised", fakeScript{caps: acp.Capabilities{Resume: true, LoadSession: true}},
			[]string{"session/resume fake-acp-session"}, session.StrategyNativeResume, ""},
		{"load only", fakeScript{caps: acp.Capabilities{LoadSession: true}, replay: replay},
			[]string{"session/load fake-acp-session"}, session.StrategyNativeLoad, ""},
		{"neither: a fresh session", fakeScript{},
			[]string{"session/new"}, session.StrategyFresh, "unsupported"},
		{"resume of an unknown session: new, not load", fakeScript{caps: acp.Capabilities{Resume: true, LoadSession: true}, resumeErr: errUnknownSession},
			[]string{"session/resume fake-acp-session", "session/new"}, session.StrategyFresh, "unknown_session"},
		{"load unsupported: new", fakeScript{caps: acp.Capabilities{LoadSession: true}, loadErr: errUnsupported},
			[]string{"session/load fake-acp-session", "session/new"}, session.StrategyFresh, "unsupported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newFakeRig(t)
			s := r.readySession(t)
			s.prompt(t, "hello")
			s.agent.prompt(t).answer("end_turn")
			s.waitEvent(t, events.TurnCompleted)
			r.restart()
			if n := s.agent.stopped(); n == 0 {
				t.Errorf("the first agent was not stopped by the shutdown")
			}
			r.rt.set(tc.script)
			if _, err := r.mgr.Resume(ctx, s.sess.ID); err != nil {
				t.Fatalf("resume after restart: %v", err)
			}
			restored := r.rt.next(t)
			if got := restored.called(); !slices.Equal(got, tc.wantCalls) {
				t.Errorf("got ACP calls %s, want %s", fmtCalls(got), fmtCalls(tc.wantCalls))
			}
			e := s.waitEvent(t, events.SessionResumed)
			var d session.SessionResumedData
			if err := json.Unmarshal(e.Payload, &d); err != nil {
				t.Fatal(err)
			}
			if d.Strategy != tc.wantStrategy || d.FallbackReason != tc.wantFallback {
				t.Errorf("got strategy %q (fallback %q), want %q (%q)", d.Strategy, d.FallbackReason, tc.wantStrategy, tc.wantFallback)
			}
		})
	}
}

// TestActorStartFailure: a start that fails leaves the session waiting,
// with the classified error in its status (the executor host's when it is
// to blame) and no agent left running.
func TestActorStartFailure(t *testing.T) {
	cases := []struct {
		name     string
		script   fakeScript
		wantCode errcode.Code
	}{
		{"the handshake fails", fakeScript{startErr: errInternal}, errcode.AgentStartFailed},
		{"session/new wants credentials", fakeScript{newErr: errAuthRequired}, errcode.AgentAuthRequired},
		{"session/new fails", fakeScript{newErr: errInternal}, errcode.AgentStartFailed},
		{"the executor host refuses the daemon", fakeScript{startErr: errcode.Wrap(errcode.ExecutorUnavailable,
			errcode.New(errcode.HostUnauthorized, "wrong token"), "executor host %q is not connected", "far")}, errcode.ExecutorUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newFakeRig(t)
			r.rt.set(tc.script)
			sess, err := r.mgr.Create(ctx, CreateInput{AgentProfileID: "fake", Cwd: r.dir})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if _, err := r.mgr.Resume(ctx, sess.ID); errcode.CodeOf(err) != tc.wantCode {
				t.Errorf("resume: got %v, want %s", err, tc.wantCode)
			}
			if tc.script.startErr == nil {
				if a := r.rt.next(t); a.stopped() == 0 {
					t.Errorf("the agent whose session failed was left running")
				}
			}
			st, err := r.mgr.Status(ctx, sess.ID)
			if err != nil {
				t.Fatal(err)
			}
			if st.LastErrorCode != string(tc.wantCode) || st.Executor.Status != session.ExecutorError || st.Executor.ErrorCode != string(tc.wantCode) {
				t.Errorf("got status error %q, executor %s (%q); want %s, %s", st.LastErrorCode, st.Executor.Status, st.Executor.ErrorCode, tc.wantCode, session.ExecutorError)
			}
			if st.Session.State != session.SessionWaitingForInput || st.IsAgentRunning || !st.IsResumable {
				t.Errorf("got session %s (running %t, resumable %t), want %s, resumable", st.Session.State, st.IsAgentRunning, st.IsResumable, session.SessionWaitingForInput)
			}
		})
	}
}

// TestActorCloseStopsAgent: closing a session with a running turn cancels
// the turn, stops the agent and ends the log with session.closed.
func TestActorCloseStopsAgent(t *testing.T) {
	ctx := context.Background()
	s := newFakeRig(t).readySession(t)
	a := s.prompt(t, "long")
	s.agent.prompt(t)
	sess, err := s.r.mgr.Close(ctx, s.sess.ID)
	if err != nil {
		t.Fatalf("close: %v", err)
	}
	if sess.State != session.SessionCompleted {
		t.Errorf("got session %s after close, want %s", sess.State, session.SessionCompleted)
	}
	if n := s.agent.stopped(); n == 0 {
		t.Errorf("the agent was not stopped")
	}
	tr, err := s.r.st.GetTurn(ctx, s.sess.ID, a.Turn.PromptID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != session.TurnCancelled {
		t.Errorf("got turn %s after close, want %s", tr.State, session.TurnCancelled)
	}
	evs, err := s.r.st.ListSessionEvents(ctx, s.sess.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1].Type; last != events.SessionClosed {
		t.Errorf("got last event %s, want %s", last, events.SessionClosed)
	}
}

// TestActorReloadsAfterAFailedTurnEnd: when the write recording a turn's
// outcome fails, the actor reloads, ends the turn as failed with
// store_write_failed, waits for input again and runs the next prompt.
func TestActorReloadsAfterAFailedTurnEnd(t *testing.T) {
	ctx := context.Background()
	s := newFakeRig(t).readySession(t)
	remove := storetest.Fault(t, s.r.dir, "test_fault", "UPDATE OF state", "turns", "NEW.state = 'completed'")
	a := s.prompt(t, "hello")
	s.agent.prompt(t).answer("end_turn")
	s.waitEvent(t, events.TurnFailed)
	if tr := s.turn(t, a.Turn.PromptID); tr.State != session.TurnFailed || tr.ErrorCode != string(errcode.StoreWriteFailed) {
		t.Errorf("got turn %s (code %q), want %s (%s)", tr.State, tr.ErrorCode, session.TurnFailed, errcode.StoreWriteFailed)
	}
	if st := s.status(t); st.Session.State != session.SessionWaitingForInput {
		t.Errorf("got session %s after the reload, want %s", st.Session.State, session.SessionWaitingForInput)
	}
	remove()
	b := s.prompt(t, "again")
	s.agent.prompt(t).answer("end_turn")
	s.waitEvent(t, events.TurnCompleted)
	if tr, err := s.r.st.GetTurn(ctx, s.sess.ID, b.Turn.PromptID); err != nil || tr.State != session.TurnCompleted {
		t.Errorf("got next turn %s, %v; want %s", tr.State, err, session.TurnCompleted)
	}
}

// TestActorShutdownLeavesTurnsForReconciliation: a daemon stop mid-turn
// stops the agent and records its executor stopped, and leaves the running
// turn, the queued one and the open permission as they are in the store,
// for start-up reconciliation.
func TestActorShutdownLeavesTurnsForReconciliation(t *testing.T) {
	ctx := context.Background()
	r := newFakeRig(t)
	s := r.readySession(t)
	a := s.prompt(t, "run")
	s.agent.prompt(t)
	s.agent.askPermission(acp.PermissionRequest{SessionID: "fake-acp-session", Tool: acp.ToolCall{ID: "tc1"},
		Options: []acp.PermissionOption{{ID: "ok", Name: "Allow", Kind: "allow_once"}}})
	s.waitEvent(t, events.PermissionRequested)
	b := s.prompt(t, "next")
	r.restart()
	if n := s.agent.stopped(); n == 0 {
		t.Errorf("the agent was not stopped by the shutdown")
	}
	// Writes commit in submission order: once this one has, the
	// shutdown's have too.
	if _, err := r.w.Do(ctx, func(*store.Store, events.Emit) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]session.TurnState{a.Turn.PromptID: session.TurnRunning, b.Turn.PromptID: session.TurnQueued} {
		if tr, err := r.st.GetTurn(ctx, s.sess.ID, id); err != nil || tr.State != want {
			t.Errorf("got turn %s, %v after the shutdown; want %s", tr.State, err, want)
		}
	}
	if open, err := r.st.ListPermissions(ctx, s.sess.ID, session.PermissionPending); err != nil || len(open) != 1 {
		t.Errorf("got pending permissions %+v, %v after the shutdown; want the one asked", open, err)
	}
	ex, err := r.st.GetExecutor(ctx, s.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Status != session.ExecutorStopped || ex.ErrorMessage != restartedWhy {
		t.Errorf("got executor %s (%q), want %s (%q)", ex.Status, ex.ErrorMessage, session.ExecutorStopped, restartedWhy)
	}
}

// TestLateNoticeLeavesTheOffsetToItsRecord: the notice that opens a
// turn's late output is written for the record that brought the first of
// it, but not with that record's host offset. The writer may commit the
// notice alone; with the offset, a daemon killed then attached again past
// the record, and the first late chunk was never recorded.
func TestLateNoticeLeavesTheOffsetToItsRecord(t *testing.T) {
	ctx := context.Background()
	r := newFakeRig(t)
	s := r.readySession(t)
	res := s.prompt(t, "hello")
	s.agent.prompt(t).answer("end_turn")
	s.waitEvent(t, events.TurnCompleted)
	turn := s.turn(t, res.Turn.PromptID)
	a, err := r.mgr.actor(ctx, s.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	const offset = 7
	err = a.do(ctx, func() {
		a.late = &lateRun{gen: a.gen, run: &turnRun{turn: turn, split: true}}
		a.withRecord(offset, func() { a.onLate(chunk("late", "m9")) })
		a.late = nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		role   string
		offset uint64
	}{{"system", 0}, {"agent", offset}} {
		e := s.waitEvent(t, events.MessageAdded)
		var m struct{ Role, Text string }
		if err := json.Unmarshal(e.Payload, &m); err != nil {
			t.Fatal(err)
		}
		if m.Role != want.role || e.HostOffset != want.offset {
			t.Errorf("message.added %q: got role %s, host offset %d; want %s, %d", m.Text, m.Role, e.HostOffset, want.role, want.offset)
		}
	}
}
