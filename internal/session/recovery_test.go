package session_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/session"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func turn(seq int64, id string, state session.TurnState) session.Turn {
	return session.Turn{SessionID: "s1", PromptID: id, Seq: seq, Kind: session.TurnPrompt, State: state,
		Prompt: json.RawMessage(`[{"type":"text","text":"do it"}]`), CreatedAt: at(int(seq) * 100)}
}

func interrupted(seq int64, id, reason string) session.Turn {
	t := turn(seq, id, session.TurnInterrupted)
	t.InterruptReason = reason
	return t
}

func msg(id string, role session.MessageRole, text string) session.Message {
	return session.Message{SessionID: "s1", PromptID: id, Role: role, Text: text}
}

func call(id, promptID, title, kind string, status session.ToolCallStatus, wasInterrupted bool) session.ToolCall {
	return session.ToolCall{SessionID: "s1", ToolCallID: id, PromptID: promptID, Title: title, Kind: kind,
		Status: status, Interrupted: wasInterrupted}
}

// continuable is an otherwise continuable transcript: turn p1 completed,
// turn p2 interrupted by the agent exiting after it started a tool call.
// Each non-continuable reason below changes exactly one thing about it.
func continuable() session.PlanInput {
	return session.PlanInput{
		Turns: []session.Turn{turn(1, "p1", session.TurnCompleted), interrupted(2, "p2", "agent_exited")},
		Messages: []session.Message{
			msg("p1", session.RoleUser, "first"), msg("p1", session.RoleAgent, "done"),
			msg("p2", session.RoleUser, "second"), msg("p2", session.RoleAgent, "working on"),
			msg("p2", session.RoleSystem, "Turn interrupted: the agent exited."),
		},
		ToolCalls: []session.ToolCall{
			call("tc-done", "p1", "Read go.mod", "read", session.ToolCompleted, false),
			call("tc-cut", "p2", "Run make", "execute", session.ToolFailed, true),
		},
		Permissions:    []session.Permission{{ID: "perm1", SessionID: "s1", PromptID: "p1", State: session.PermissionSelected}},
		State:          session.SessionWaitingForInput,
		AgentAvailable: true,
	}
}

func with(mut func(*session.PlanInput)) session.PlanInput {
	in := continuable()
	mut(&in)
	return in
}

// idle is a session with no live blockers, for rule cases that build their
// own transcript.
func idle(turns []session.Turn, msgs []session.Message, calls []session.ToolCall) session.PlanInput {
	return session.PlanInput{Turns: turns, Messages: msgs, ToolCalls: calls,
		State: session.SessionWaitingForInput, AgentAvailable: true}
}

type want struct {
	kind            session.RecoveryKind
	canContinue     bool
	reason          string
	promptID        string
	interruptReason string
	dangling        []session.DanglingToolCall // nil: expect none
	notice          []string                   // substrings the notice must contain
}

func checkSummary(t *testing.T, in session.PlanInput, got session.Recovery, w want) {
	t.Helper()
	if got.Kind != w.kind {
		t.Errorf("kind = %q, want %q", got.Kind, w.kind)
	}
	if got.CanContinue != w.canContinue {
		t.Errorf("canContinue = %v, want %v", got.CanContinue, w.canContinue)
	}
	if got.Reason != w.reason {
		t.Errorf("reason = %q, want %q", got.Reason, w.reason)
	}
	if got.PromptID != w.promptID {
		t.Errorf("promptId = %q, want %q", got.PromptID, w.promptID)
	}
	if got.InterruptReason != w.interruptReason {
		t.Errorf("interruptReason = %q, want %q", got.InterruptReason, w.interruptReason)
	}
	if got.DanglingToolCalls == nil {
		t.Errorf("danglingToolCalls is nil, want a (possibly empty) slice")
	}
	wantDangling := w.dangling
	if wantDangling == nil {
		wantDangling = []session.DanglingToolCall{}
	}
	if !reflect.DeepEqual(got.DanglingToolCalls, wantDangling) {
		t.Errorf("danglingToolCalls = %+v, want %+v", got.DanglingToolCalls, wantDangling)
	}
	checkCommon(t, got)
	for _, sub := range w.notice {
		if !strings.Contains(got.Notice, sub) {
			t.Errorf("notice %q does not contain %q", got.Notice, sub)
		}
	}
	if again := session.Plan(in); !reflect.DeepEqual(again, got) {
		t.Errorf("Plan is not deterministic:\n first %+v\nsecond %+v", got, again)
	}
}

// checkCommon asserts what holds for every summary.
func checkCommon(t *testing.T, got session.Recovery) {
	t.Helper()
	if strings.TrimSpace(got.Notice) == "" {
		t.Errorf("notice is empty")
	}
	if got.CanContinue != (got.Reason == "") {
		t.Errorf("canContinue = %v but reason = %q", got.CanContinue, got.Reason)
	}
	if got.Kind == session.RecoveryDegradedHistory && got.CanContinue {
		t.Errorf("degraded_history can continue")
	}
	if got.Kind == session.RecoveryInterruptedTurn {
		for _, d := range got.DanglingToolCalls {
			if !strings.Contains(got.Notice, d.Title) {
				t.Errorf("notice %q does not name dangling tool call %q", got.Notice, d.Title)
			}
		}
	}
}

func TestPlanRules(t *testing.T) {
	cases := []struct {
		name string
		in   session.PlanInput
		want want
	}{
		{
			name: "no_turns_is_clean_with_nothing_to_continue",
			in:   idle(nil, nil, nil),
			want: want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue, notice: []string{"No turn has run yet"}},
		},
		{
			name: "last_turn_completed_is_clean",
			in: idle([]session.Turn{turn(1, "p1", session.TurnCompleted)},
				[]session.Message{msg("p1", session.RoleUser, "hi"), msg("p1", session.RoleAgent, "hello")}, nil),
			want: want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue, notice: []string{"the last turn finished"}},
		},
		{
			name: "last_turn_failed_is_clean",
			in: idle([]session.Turn{turn(1, "p1", session.TurnFailed)},
				[]session.Message{msg("p1", session.RoleUser, "hi")}, nil),
			want: want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue},
		},
		{
			name: "last_turn_cancelled_by_user_is_clean",
			in: idle([]session.Turn{func() session.Turn {
				t := turn(1, "p1", session.TurnCancelled)
				t.CancelRequested = true
				t.StopReason = "cancelled"
				return t
			}()}, []session.Message{msg("p1", session.RoleUser, "hi"), msg("p1", session.RoleAgent, "par")},
				[]session.ToolCall{call("tc1", "p1", "Run make", "execute", session.ToolFailed, true)}),
			want: want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue},
		},
		{
			name: "interrupted_with_cancel_requested_is_clean_user_intent_wins",
			in: idle([]session.Turn{func() session.Turn {
				t := interrupted(1, "p1", "agent_exited")
				t.CancelRequested = true
				return t
			}()}, []session.Message{msg("p1", session.RoleUser, "hi"), msg("p1", session.RoleAgent, "par")},
				[]session.ToolCall{call("tc1", "p1", "Run make", "execute", session.ToolFailed, true)}),
			want: want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue},
		},
		{
			name: "earlier_interrupted_turn_followed_by_completed_turn_is_clean",
			in: idle([]session.Turn{interrupted(1, "p1", "agent_exited"), turn(2, "p2", session.TurnCompleted)},
				[]session.Message{msg("p1", session.RoleUser, "a"), msg("p1", session.RoleAgent, "b"),
					msg("p2", session.RoleUser, "c"), msg("p2", session.RoleAgent, "d")},
				[]session.ToolCall{call("tc1", "p1", "Run make", "execute", session.ToolFailed, true)}),
			want: want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue},
		},
		{
			name: "interrupted_before_any_output_is_interrupted_prompt",
			in: idle([]session.Turn{turn(1, "p1", session.TurnCompleted), interrupted(2, "p2", "daemon_restart")},
				[]session.Message{msg("p1", session.RoleUser, "a"), msg("p1", session.RoleAgent, "b"),
					msg("p2", session.RoleUser, "c"),
					// a system notice is not agent output
					msg("p2", session.RoleSystem, "Turn interrupted: the daemon restarted.")},
				[]session.ToolCall{call("tc1", "p1", "Read", "read", session.ToolCompleted, false)}),
			want: want{kind: session.RecoveryInterruptedPrompt, canContinue: true, promptID: "p2",
				interruptReason: "daemon_restart", notice: []string{"daemon restart"}},
		},
		{
			name: "interrupted_after_agent_text_is_interrupted_turn",
			in: idle([]session.Turn{interrupted(1, "p1", "agent_exited")},
				[]session.Message{msg("p1", session.RoleUser, "a"), msg("p1", session.RoleAgent, "I will start by")}, nil),
			want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p1",
				interruptReason: "agent_exited", notice: []string{"agent exited"}},
		},
		{
			name: "interrupted_after_thought_only_is_interrupted_turn",
			in: idle([]session.Turn{interrupted(1, "p1", "agent_exited")},
				[]session.Message{msg("p1", session.RoleUser, "a"), msg("p1", session.RoleThought, "hmm")}, nil),
			want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p1",
				interruptReason: "agent_exited"},
		},
		{
			name: "interrupted_after_tool_call_lists_only_that_turns_unfinished_calls",
			in: idle([]session.Turn{interrupted(1, "p0", "agent_exited"), turn(2, "p1", session.TurnCompleted), interrupted(3, "p2", "agent_exited")},
				[]session.Message{msg("p0", session.RoleUser, "z"), msg("p1", session.RoleUser, "a"), msg("p2", session.RoleUser, "b")},
				[]session.ToolCall{
					call("old-cut", "p0", "Old cut", "execute", session.ToolFailed, true),
					call("old-run", "p1", "Old running", "execute", session.ToolInProgress, false),
					call("tc-int", "p2", "Run make", "execute", session.ToolFailed, true),
					call("tc-done", "p2", "Read go.mod", "read", session.ToolCompleted, false),
					call("tc-prog", "p2", "Edit main.go", "edit", session.ToolInProgress, false),
					call("tc-fail", "p2", "Fetch url", "fetch", session.ToolFailed, false),
					call("tc-pend", "p2", "Delete tmp", "delete", session.ToolPending, false),
				}),
			want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p2", interruptReason: "agent_exited",
				dangling: []session.DanglingToolCall{
					{ID: "tc-int", Title: "Run make", Kind: "execute"},
					{ID: "tc-prog", Title: "Edit main.go", Kind: "edit"},
					{ID: "tc-pend", Title: "Delete tmp", Kind: "delete"},
				},
				notice: []string{"Run make", "Edit main.go", "Delete tmp"}},
		},
		{
			name: "reply_cut_off_mid_stream_is_interrupted_turn",
			in: idle([]session.Turn{turn(1, "p1", session.TurnCompleted), interrupted(2, "p2", "agent_exited")},
				[]session.Message{msg("p1", session.RoleUser, "a"), msg("p1", session.RoleAgent, "b"),
					msg("p2", session.RoleUser, "explain"), msg("p2", session.RoleAgent, "The reason this happens is th")}, nil),
			want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p2", interruptReason: "agent_exited"},
		},
		{
			name: "interrupted_without_recorded_reason_still_continues",
			in: idle([]session.Turn{interrupted(1, "p1", "")},
				[]session.Message{msg("p1", session.RoleUser, "a")}, nil),
			want: want{kind: session.RecoveryInterruptedPrompt, canContinue: true, promptID: "p1",
				notice: []string{"unknown cause"}},
		},
		{
			name: "turns_out_of_order_are_ordered_by_seq",
			in: idle([]session.Turn{interrupted(2, "p2", "agent_exited"), turn(1, "p1", session.TurnCompleted)},
				[]session.Message{msg("p1", session.RoleUser, "a"), msg("p2", session.RoleUser, "b")}, nil),
			want: want{kind: session.RecoveryInterruptedPrompt, canContinue: true, promptID: "p2", interruptReason: "agent_exited"},
		},
		{
			name: "queued_turns_after_interrupted_one_block_with_turn_queued",
			in: idle([]session.Turn{turn(1, "p1", session.TurnCompleted), interrupted(2, "p2", "agent_exited"),
				turn(3, "p3", session.TurnQueued), turn(4, "p4", session.TurnQueued)},
				[]session.Message{msg("p1", session.RoleUser, "a"), msg("p2", session.RoleUser, "b"),
					msg("p2", session.RoleAgent, "c"), msg("p3", session.RoleUser, "d"), msg("p4", session.RoleUser, "e")},
				[]session.ToolCall{call("tc1", "p2", "Run make", "execute", session.ToolFailed, true)}),
			want: want{kind: session.RecoveryInterruptedTurn, reason: session.ReasonTurnQueued, promptID: "p2",
				interruptReason: "agent_exited",
				dangling:        []session.DanglingToolCall{{ID: "tc1", Title: "Run make", Kind: "execute"}},
				notice:          []string{"Run make"}},
		},
		{
			name: "context_lost_is_degraded_and_never_continues",
			in:   with(func(in *session.PlanInput) { in.ContextLost = true }),
			want: want{kind: session.RecoveryDegradedHistory, reason: session.ReasonHistoryDegraded, promptID: "p2",
				interruptReason: "agent_exited",
				dangling:        []session.DanglingToolCall{{ID: "tc-cut", Title: "Run make", Kind: "execute"}},
				notice:          []string{"lost", "context"}},
		},
		{
			name: "context_lost_after_clean_turn_is_degraded",
			in: func() session.PlanInput {
				in := idle([]session.Turn{turn(1, "p1", session.TurnCompleted)}, []session.Message{msg("p1", session.RoleUser, "a")}, nil)
				in.ContextLost = true
				return in
			}(),
			want: want{kind: session.RecoveryDegradedHistory, reason: session.ReasonHistoryDegraded, notice: []string{"context"}},
		},
		{
			name: "gap_missing_seq_is_degraded",
			in: idle([]session.Turn{turn(1, "p1", session.TurnCompleted), interrupted(3, "p3", "agent_exited")},
				[]session.Message{msg("p1", session.RoleUser, "a"), msg("p3", session.RoleUser, "b"), msg("p3", session.RoleAgent, "c")}, nil),
			want: want{kind: session.RecoveryDegradedHistory, reason: session.ReasonHistoryDegraded, promptID: "p3",
				interruptReason: "agent_exited", notice: []string{"gap", "turn 2 is missing"}},
		},
		{
			name: "gap_first_seq_missing_is_degraded",
			in: idle([]session.Turn{interrupted(2, "p2", "agent_exited")},
				[]session.Message{msg("p2", session.RoleUser, "b")}, nil),
			want: want{kind: session.RecoveryDegradedHistory, reason: session.ReasonHistoryDegraded, promptID: "p2",
				interruptReason: "agent_exited", notice: []string{"turn 1 is missing"}},
		},
		{
			name: "gap_message_with_unknown_prompt_id_is_degraded",
			in: with(func(in *session.PlanInput) {
				in.Messages = append(in.Messages, msg("ghost", session.RoleAgent, "from nowhere"))
			}),
			want: want{kind: session.RecoveryDegradedHistory, reason: session.ReasonHistoryDegraded, promptID: "p2",
				interruptReason: "agent_exited",
				dangling:        []session.DanglingToolCall{{ID: "tc-cut", Title: "Run make", Kind: "execute"}},
				notice:          []string{"gap", "ghost"}},
		},
		{
			name: "gap_tool_call_with_unknown_prompt_id_is_degraded",
			in: with(func(in *session.PlanInput) {
				in.ToolCalls = append(in.ToolCalls, call("tc-ghost", "ghost", "Phantom", "other", session.ToolCompleted, false))
			}),
			want: want{kind: session.RecoveryDegradedHistory, reason: session.ReasonHistoryDegraded, promptID: "p2",
				interruptReason: "agent_exited",
				dangling:        []session.DanglingToolCall{{ID: "tc-cut", Title: "Run make", Kind: "execute"}},
				notice:          []string{"gap", "ghost"}},
		},
		{
			name: "message_without_prompt_id_is_not_a_gap",
			in: with(func(in *session.PlanInput) {
				in.Messages = append(in.Messages, msg("", session.RoleSystem, "session restored"))
			}),
			want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p2", interruptReason: "agent_exited",
				dangling: []session.DanglingToolCall{{ID: "tc-cut", Title: "Run make", Kind: "execute"}},
				notice:   []string{"Run make"}},
		},
		{
			name: "resolved_permissions_do_not_block",
			in: with(func(in *session.PlanInput) {
				in.Permissions = []session.Permission{
					{ID: "a", PromptID: "p2", State: session.PermissionSelected},
					{ID: "b", PromptID: "p2", State: session.PermissionCancelled},
					{ID: "c", PromptID: "p2", State: session.PermissionExpired},
				}
			}),
			want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p2", interruptReason: "agent_exited",
				dangling: []session.DanglingToolCall{{ID: "tc-cut", Title: "Run make", Kind: "execute"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkSummary(t, tc.in, session.Plan(tc.in), tc.want)
		})
	}
}

// TestPlanNonContinuableReasons changes one thing about a continuable
// transcript per case.
func TestPlanNonContinuableReasons(t *testing.T) {
	base := session.Plan(continuable())
	checkSummary(t, continuable(), base, want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p2",
		interruptReason: "agent_exited",
		dangling:        []session.DanglingToolCall{{ID: "tc-cut", Title: "Run make", Kind: "execute"}},
		notice:          []string{"Run make", "agent exited"}})
	if t.Failed() {
		t.Fatal("the base transcript must be continuable")
	}
	dangling := []session.DanglingToolCall{{ID: "tc-cut", Title: "Run make", Kind: "execute"}}
	blocked := func(reason string) want {
		return want{kind: session.RecoveryInterruptedTurn, reason: reason, promptID: "p2", interruptReason: "agent_exited", dangling: dangling}
	}
	cases := []struct {
		name string
		in   session.PlanInput
		want want
	}{
		{
			name: "turn_active",
			in: with(func(in *session.PlanInput) {
				in.Turns = append(in.Turns, turn(3, "p3", session.TurnRunning))
				in.State = session.SessionRunning
			}),
			// the running turn is the last one that ran; it has no outcome yet
			want: want{kind: session.RecoveryClean, reason: session.ReasonTurnActive},
		},
		{
			name: "turn_queued",
			in:   with(func(in *session.PlanInput) { in.Turns = append(in.Turns, turn(3, "p3", session.TurnQueued)) }),
			want: blocked(session.ReasonTurnQueued),
		},
		{
			name: "permission_pending",
			in: with(func(in *session.PlanInput) {
				in.Permissions = append(in.Permissions, session.Permission{ID: "perm2", PromptID: "p2", ToolCallID: "tc-cut", State: session.PermissionPending})
			}),
			want: blocked(session.ReasonPermissionPending),
		},
		{
			name: "session_closing",
			in:   with(func(in *session.PlanInput) { in.Closing = true }),
			want: blocked(session.ReasonSessionClosing),
		},
		{
			name: "session_terminal_completed",
			in:   with(func(in *session.PlanInput) { in.State = session.SessionCompleted }),
			want: blocked(session.ReasonSessionTerminal),
		},
		{
			name: "session_terminal_failed",
			in:   with(func(in *session.PlanInput) { in.State = session.SessionFailed }),
			want: blocked(session.ReasonSessionTerminal),
		},
		{
			name: "session_terminal_cancelled",
			in:   with(func(in *session.PlanInput) { in.State = session.SessionCancelled }),
			want: blocked(session.ReasonSessionTerminal),
		},
		{
			name: "agent_unavailable",
			in:   with(func(in *session.PlanInput) { in.AgentAvailable = false }),
			want: blocked(session.ReasonAgentUnavailable),
		},
		{
			name: "nothing_to_continue",
			in: with(func(in *session.PlanInput) {
				in.Turns = append(in.Turns, turn(3, "p3", session.TurnCompleted))
			}),
			want: want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue},
		},
		{
			name: "budget_exceeded",
			in:   with(func(in *session.PlanInput) { in.OverBudget = session.LimitTokens }),
			want: blocked(session.ReasonBudgetExceeded),
		},
		{
			name: "history_degraded",
			in:   with(func(in *session.PlanInput) { in.ContextLost = true }),
			want: want{kind: session.RecoveryDegradedHistory, reason: session.ReasonHistoryDegraded, promptID: "p2",
				interruptReason: "agent_exited", dangling: dangling},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkSummary(t, tc.in, session.Plan(tc.in), tc.want)
		})
	}
	// Every live session state that is not terminal lets it continue.
	for _, st := range []session.SessionState{session.SessionCreated, session.SessionStarting, session.SessionRunning, session.SessionWaitingForInput} {
		t.Run("non_terminal_state_"+string(st)+"_continues", func(t *testing.T) {
			s := session.Plan(with(func(in *session.PlanInput) { in.State = st }))
			if !s.CanContinue {
				t.Errorf("state %s: canContinue = false, reason %q", st, s.Reason)
			}
		})
	}
}

// TestPlanBudgetStoppedTurn: a turn a budget stopped (cancelled with
// reason budget_exceeded) is continued like an interrupted one once the
// budget allows; a turn the user cancelled is not.
func TestPlanBudgetStoppedTurn(t *testing.T) {
	stopped := func(in *session.PlanInput) {
		in.Turns[1].State, in.Turns[1].InterruptReason = session.TurnCancelled, ""
		in.Turns[1].ErrorCode, in.Turns[1].ErrorMessage = session.BudgetExceeded, "the session used 1020 tokens of its budget of 1000"
	}
	dangling := []session.DanglingToolCall{{ID: "tc-cut", Title: "Run make", Kind: "execute"}}
	checkSummary(t, with(stopped), session.Plan(with(stopped)), want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p2",
		interruptReason: session.BudgetExceeded, dangling: dangling, notice: []string{"budget exceeded"}})
	over := with(func(in *session.PlanInput) { stopped(in); in.OverBudget = session.LimitTokens })
	checkSummary(t, over, session.Plan(over), want{kind: session.RecoveryInterruptedTurn, reason: session.ReasonBudgetExceeded, promptID: "p2",
		interruptReason: session.BudgetExceeded, dangling: dangling, notice: []string{"raise it to go on"}})
	user := with(func(in *session.PlanInput) { stopped(in); in.Turns[1].ErrorCode = "" })
	checkSummary(t, user, session.Plan(user), want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue})
}

// TestPlanReasonPriority follows the planner's switch: session terminal,
// closing, turn active, turn queued, permission pending, history degraded,
// nothing to continue, agent unavailable. Each case switches on every
// blocker from its own rank down, so the expected reason must win over all
// the lower ones.
func TestPlanReasonPriority(t *testing.T) {
	type blockers struct{ terminal, closing, active, queued, pending, degraded, clean, unavailable bool }
	build := func(b blockers) session.PlanInput {
		in := continuable()
		if b.terminal {
			in.State = session.SessionFailed
		}
		in.Closing = b.closing
		if b.clean {
			in.Turns = append(in.Turns, turn(int64(len(in.Turns)+1), "p-done", session.TurnCompleted))
		}
		if b.active {
			in.Turns = append(in.Turns, turn(int64(len(in.Turns)+1), "p-run", session.TurnRunning))
		}
		if b.queued {
			in.Turns = append(in.Turns, turn(int64(len(in.Turns)+1), "p-queued", session.TurnQueued))
		}
		if b.pending {
			in.Permissions = append(in.Permissions, session.Permission{ID: "perm-p", PromptID: "p2", State: session.PermissionPending})
		}
		in.ContextLost = b.degraded
		in.AgentAvailable = !b.unavailable
		return in
	}
	cases := []struct {
		name string
		b    blockers
		want string
	}{
		{"terminal_beats_everything", blockers{true, true, true, true, true, true, true, true}, session.ReasonSessionTerminal},
		{"closing_beats_active_and_below", blockers{false, true, true, true, true, true, true, true}, session.ReasonSessionClosing},
		{"active_beats_queued_and_below", blockers{false, false, true, true, true, true, true, true}, session.ReasonTurnActive},
		{"queued_beats_pending_and_below", blockers{false, false, false, true, true, true, true, true}, session.ReasonTurnQueued},
		{"pending_beats_degraded_and_below", blockers{false, false, false, false, true, true, true, true}, session.ReasonPermissionPending},
		{"degraded_beats_nothing_to_continue_and_unavailable", blockers{false, false, false, false, false, true, true, true}, session.ReasonHistoryDegraded},
		{"nothing_to_continue_beats_unavailable", blockers{false, false, false, false, false, false, true, true}, session.ReasonNothingToContinue},
		{"unavailable_alone", blockers{false, false, false, false, false, false, false, true}, session.ReasonAgentUnavailable},
		{"no_blockers_continues", blockers{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := session.Plan(build(tc.b))
			if s.Reason != tc.want {
				t.Errorf("reason = %q, want %q (summary %+v)", s.Reason, tc.want, s)
			}
			checkCommon(t, s)
		})
	}
}

func TestPlanDoesNotMutateInput(t *testing.T) {
	in := idle([]session.Turn{interrupted(3, "p3", "agent_exited"), turn(1, "p1", session.TurnCompleted), turn(2, "p2", session.TurnFailed)},
		[]session.Message{msg("p3", session.RoleAgent, "x")},
		[]session.ToolCall{call("tc", "p3", "Run", "execute", session.ToolInProgress, false)})
	before := []session.Turn{in.Turns[0], in.Turns[1], in.Turns[2]}
	s := session.Plan(in)
	if !reflect.DeepEqual(in.Turns, before) {
		t.Errorf("Plan reordered the caller's turns: %+v", in.Turns)
	}
	if s.Kind != session.RecoveryInterruptedTurn || s.PromptID != "p3" {
		t.Errorf("summary = %+v, want interrupted_turn of p3", s)
	}
}

func TestSummaryJSON(t *testing.T) {
	for name, in := range map[string]session.PlanInput{
		"clean":       idle(nil, nil, nil),
		"interrupted": continuable(),
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(session.Plan(in))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"kind", "canContinue", "danglingToolCalls", "notice"} {
				if _, ok := m[k]; !ok {
					t.Errorf("%s missing from %s", k, raw)
				}
			}
			if _, ok := m["danglingToolCalls"].([]any); !ok {
				t.Errorf("danglingToolCalls is %v, want a JSON array: %s", m["danglingToolCalls"], raw)
			}
			if c, _ := m["canContinue"].(bool); c {
				if _, ok := m["reason"]; ok {
					t.Errorf("continuable summary carries a reason: %s", raw)
				}
			} else if r, _ := m["reason"].(string); r == "" {
				t.Errorf("non-continuable summary has no reason: %s", raw)
			}
		})
	}
	raw, _ := json.Marshal(session.Plan(continuable()))
	if !strings.Contains(string(raw), `"danglingToolCalls":[{"id":"tc-cut","title":"Run make","kind":"execute"}]`) {
		t.Errorf("dangling tool call JSON shape: %s", raw)
	}
}

// replayWords would tell the agent (or imply the daemon) to re-execute the
// cut-off tools verbatim; the continuation must never say that.
var replayWords = []string{"replay", "re-run", "rerun", "run them again", "execute them again", "re-execute", "repeat the tool"}

func TestContinuationPrompt(t *testing.T) {
	in := idle([]session.Turn{interrupted(1, "p1", "agent_exited")},
		[]session.Message{msg("p1", session.RoleUser, "build it"), msg("p1", session.RoleAgent, "ok")},
		[]session.ToolCall{
			call("tc-a", "p1", "Run make", "execute", session.ToolFailed, true),
			call("tc-b", "p1", "Edit main.go", "edit", session.ToolInProgress, false),
			call("tc-c", "p1", "Read go.mod", "read", session.ToolCompleted, false),
		})
	s := session.Plan(in)
	if s.Kind != session.RecoveryInterruptedTurn || len(s.DanglingToolCalls) != 2 {
		t.Fatalf("summary = %+v, want interrupted_turn with 2 dangling calls", s)
	}
	p := session.ContinuationPrompt(s, session.PartialReply(in, "p1"))
	for _, d := range s.DanglingToolCalls {
		for _, part := range []string{d.Title, d.Kind, d.ID} {
			if !strings.Contains(p, part) {
				t.Errorf("continuation prompt does not name %q of %s:\n%s", part, d.ID, p)
			}
		}
	}
	// The completed call is named only among the finished ones (the
	// report's short form), never as cut off.
	cut, finished, ok := strings.Cut(p, "finished before the interruption")
	if !ok || !strings.Contains(finished, "- Read go.mod (read): completed") {
		t.Errorf("continuation prompt does not list the finished tool call:\n%s", p)
	}
	if strings.Contains(cut, "Read go.mod") || strings.Contains(p, "tc-c") {
		t.Errorf("completed tool call named as interrupted:\n%s", p)
	}
	if !strings.Contains(p, "still running when it was cut off and may have had effects: Run make.") {
		t.Errorf("continuation prompt does not name the command still running:\n%s", p)
	}
	for _, want := range []string{"agent exited", "failure", "Continue the task", "do not repeat work that was already completed"} {
		if !strings.Contains(p, want) {
			t.Errorf("continuation prompt lacks %q:\n%s", want, p)
		}
	}
	lower := strings.ToLower(p)
	for _, w := range replayWords {
		if strings.Contains(lower, w) {
			t.Errorf("continuation prompt contains replay instruction %q:\n%s", w, p)
		}
	}

	t.Run("without_dangling_tool_calls", func(t *testing.T) {
		in := idle([]session.Turn{interrupted(1, "p1", "")},
			[]session.Message{msg("p1", session.RoleAgent, "cut off mid")}, nil)
		s := session.Plan(in)
		p := session.ContinuationPrompt(s, session.PartialReply(in, "p1"))
		if strings.Contains(p, "did not complete") {
			t.Errorf("prompt lists tool calls that do not exist:\n%s", p)
		}
		if !strings.Contains(p, "unknown cause") || !strings.Contains(p, "Continue the task") {
			t.Errorf("prompt:\n%s", p)
		}
		lower := strings.ToLower(p)
		for _, w := range replayWords {
			if strings.Contains(lower, w) {
				t.Errorf("continuation prompt contains replay instruction %q:\n%s", w, p)
			}
		}
	})
}

func delivered(t session.Turn) session.Turn {
	d := at(int(t.Seq)*100 + 1)
	t.DeliveredAt = &d
	return t
}

// promptTextOf is the text of a prompt's single text block.
func promptTextOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var blocks []struct{ Type, Text string }
	if err := json.Unmarshal(raw, &blocks); err != nil || len(blocks) != 1 || blocks[0].Type != "text" {
		t.Fatalf("prompt %s: want one text block (%v)", raw, err)
	}
	return blocks[0].Text
}

// TestContinuation: what a continuation sends, by what the agent holds. A
// prompt it never received is sent as it was; one it received is never
// repeated (the model would see one request as two user turns); a reply
// it began is quoted back as the user saw it, cut to its last
// MaxPartialReplyChars, with the tool calls that were cut off.
func TestContinuation(t *testing.T) {
	long := strings.Repeat("a", 500) + strings.Repeat("b", session.MaxPartialReplyChars)
	cases := []struct {
		name      string
		in        session.PlanInput
		kind      session.RecoveryKind
		delivered bool
		// original: the original prompt is sent as it was.
		original bool
		contains []string
		absent   []string
	}{
		{
			name:     "not_delivered_sends_the_original_prompt",
			in:       idle([]session.Turn{interrupted(1, "p1", "daemon_restart")}, []session.Message{msg("p1", session.RoleUser, "do it")}, nil),
			kind:     session.RecoveryInterruptedPrompt,
			original: true,
		},
		{
			name:      "delivered_without_output_asks_for_the_answer_without_repeating_the_request",
			in:        idle([]session.Turn{delivered(interrupted(1, "p1", "daemon_restart"))}, []session.Message{msg("p1", session.RoleUser, "do it")}, nil),
			kind:      session.RecoveryInterruptedPrompt,
			delivered: true,
			contains:  []string{"daemon restart", "before you answered", "not repeated here", "Answer it now"},
			absent:    []string{"do it", "<partial-reply>"},
		},
		{
			name: "partial_reply_is_quoted_with_the_cut_tool_calls",
			in: idle([]session.Turn{turn(1, "p0", session.TurnCompleted), delivered(interrupted(2, "p1", "daemon_restart"))},
				[]session.Message{msg("p0", session.RoleUser, "earlier"), msg("p0", session.RoleAgent, "an earlier answer"),
					msg("p1", session.RoleUser, "do it"), msg("p1", session.RoleAgent, "Let me read that file."),
					msg("p1", session.RoleThought, "private thinking"), msg("p1", session.RoleAgent, "The file says"),
					msg("p1", session.RoleSystem, "Turn interrupted: the agent was killed.")},
				[]session.ToolCall{call("tc-1", "p1", "Read notes.txt", "read", session.ToolFailed, true)}),
			kind:      session.RecoveryInterruptedTurn,
			delivered: true,
			contains: []string{"<partial-reply>\nLet me read that file.\nThe file says\n</partial-reply>",
				"Read notes.txt (read, id tc-1)", "Continue the task"},
			absent: []string{"do it", "an earlier answer", "private thinking", "Turn interrupted"},
		},
		{
			name:      "tool_calls_without_text_quote_no_reply",
			in:        idle([]session.Turn{interrupted(1, "p1", "agent_exited")}, nil, []session.ToolCall{call("tc-1", "p1", "Run make", "execute", session.ToolInProgress, false)}),
			kind:      session.RecoveryInterruptedTurn,
			delivered: true,
			contains:  []string{"Run make (execute, id tc-1)"},
			absent:    []string{"<partial-reply>"},
		},
		{
			name:      "a_long_reply_keeps_its_end",
			in:        idle([]session.Turn{interrupted(1, "p1", "agent_exited")}, []session.Message{msg("p1", session.RoleAgent, long)}, nil),
			kind:      session.RecoveryInterruptedTurn,
			delivered: true,
			contains:  []string{"<partial-reply>\n[… earlier part of the reply omitted] " + strings.Repeat("b", session.MaxPartialReplyChars) + "\n</partial-reply>"},
			absent:    []string{"ab"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := session.Plan(tc.in)
			if s.Kind != tc.kind || s.PromptDelivered != tc.delivered || !s.CanContinue {
				t.Fatalf("plan: got kind %s delivered %v canContinue %v, want %s %v true", s.Kind, s.PromptDelivered, s.CanContinue, tc.kind, tc.delivered)
			}
			got := session.Continuation(s, tc.in)
			if tc.original {
				if string(got) != string(tc.in.Turns[0].Prompt) {
					t.Errorf("continuation: got %s, want the original prompt %s", got, tc.in.Turns[0].Prompt)
				}
				return
			}
			text := promptTextOf(t, got)
			for _, w := range tc.contains {
				if !strings.Contains(text, w) {
					t.Errorf("continuation lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tc.absent {
				if strings.Contains(text, w) {
					t.Errorf("continuation contains %q:\n%s", w, text)
				}
			}
		})
	}
}

// TestPlanNoticeSaysWhetherThePromptWasDelivered: the user is told whether
// continue sends the prompt again or asks for the answer.
func TestPlanNoticeSaysWhetherThePromptWasDelivered(t *testing.T) {
	cases := []struct {
		name string
		turn session.Turn
		want string
	}{
		{"not_delivered", interrupted(1, "p1", "daemon_restart"), "before the agent received it. Continue sends it again."},
		{"delivered", delivered(interrupted(1, "p1", "daemon_restart")), "after the agent received it, before it answered. Continue asks the agent to answer it."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := session.Plan(idle([]session.Turn{tc.turn}, []session.Message{msg("p1", session.RoleUser, "do it")}, nil))
			if !strings.Contains(s.Notice, tc.want) {
				t.Errorf("notice: got %q, want it to contain %q", s.Notice, tc.want)
			}
		})
	}
}
