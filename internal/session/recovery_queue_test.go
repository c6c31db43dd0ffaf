package session_test

import (
	"reflect"
	"testing"

	"github.com/tether/tether/internal/session"
)

func started(t session.Turn, sec int) session.Turn {
	s := at(sec)
	t.StartedAt = &s
	return t
}

func withdrawnTurn(seq int64, id string) session.Turn {
	t := turn(seq, id, session.TurnCancelled)
	t.StopReason = session.Withdrawn
	return t
}

func continueTurn(seq int64, id, of string, state session.TurnState) session.Turn {
	t := turn(seq, id, state)
	t.Kind, t.ContinuesPromptID = session.TurnContinue, of
	return t
}

// heldAfterRestart is a session tetherd restarted under: p1 was running
// (interrupted after output), q1 and q2 were queued behind it.
func heldAfterRestart() session.PlanInput {
	in := idle([]session.Turn{started(interrupted(1, "p1", "daemon_restart"), 1),
		turn(2, "q1", session.TurnQueued), turn(3, "q2", session.TurnQueued)},
		[]session.Message{msg("p1", session.RoleUser, "a"), msg("p1", session.RoleAgent, "partial")}, nil)
	in.QueueHeld = true
	return in
}

func TestPlanQueuedTurns(t *testing.T) {
	type queueWant struct {
		want
		queued []string
		held   bool
	}
	cases := []struct {
		name string
		in   session.PlanInput
		want queueWant
	}{
		{
			name: "held_queue_keeps_the_interrupted_turn_the_target_and_continuable",
			in:   heldAfterRestart(),
			want: queueWant{want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p1", interruptReason: "daemon_restart",
				notice: []string{"2 prompts queued behind the interrupted turn", "after the continuation, in order", "Withdraw"}},
				queued: []string{"q1", "q2"}, held: true},
		},
		{
			name: "queue_not_held_blocks_continue_as_before",
			in:   func() session.PlanInput { in := heldAfterRestart(); in.QueueHeld = false; return in }(),
			want: queueWant{want: want{kind: session.RecoveryInterruptedTurn, reason: session.ReasonTurnQueued, promptID: "p1", interruptReason: "daemon_restart"},
				queued: []string{"q1", "q2"}},
		},
		{
			name: "held_flag_without_queued_turns_changes_nothing",
			in: func() session.PlanInput {
				in := heldAfterRestart()
				in.Turns = in.Turns[:1]
				return in
			}(),
			want: queueWant{want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p1", interruptReason: "daemon_restart"}},
		},
		{
			name: "held_queue_behind_a_finished_turn_waits_for_a_new_prompt",
			in: func() session.PlanInput {
				in := heldAfterRestart()
				in.Turns[0] = started(turn(1, "p1", session.TurnCompleted), 1)
				return in
			}(),
			want: queueWant{want: want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue,
				notice: []string{"the last turn finished", "a new prompt runs them first"}}, queued: []string{"q1", "q2"}, held: true},
		},
		{
			name: "one_held_prompt_is_named_in_the_singular",
			in: func() session.PlanInput {
				in := heldAfterRestart()
				in.Turns = in.Turns[:2]
				return in
			}(),
			want: queueWant{want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p1", interruptReason: "daemon_restart",
				notice: []string{"1 prompt queued behind the interrupted turn is waiting", "Continue runs it"}}, queued: []string{"q1"}, held: true},
		},
		{
			name: "withdrawn_turn_is_not_the_target",
			in: func() session.PlanInput {
				in := heldAfterRestart()
				in.Turns[2] = withdrawnTurn(3, "q2")
				return in
			}(),
			want: queueWant{want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p1", interruptReason: "daemon_restart"},
				queued: []string{"q1"}, held: true},
		},
		{
			name: "every_queued_turn_withdrawn_leaves_the_interrupted_turn",
			in: func() session.PlanInput {
				in := heldAfterRestart()
				in.Turns[1], in.Turns[2] = withdrawnTurn(2, "q1"), withdrawnTurn(3, "q2")
				return in
			}(),
			want: queueWant{want: want{kind: session.RecoveryInterruptedTurn, canContinue: true, promptID: "p1", interruptReason: "daemon_restart"}},
		},
		{
			name: "cancelled_queue_is_clean_the_user_stopped_everything",
			in: func() session.PlanInput {
				in := heldAfterRestart()
				for i := 1; i < 3; i++ {
					in.Turns[i].State, in.Turns[i].CancelRequested = session.TurnCancelled, true
				}
				return in
			}(),
			want: queueWant{want: want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue}},
		},
		{
			name: "continuation_running_before_the_queue_is_active",
			in: func() session.PlanInput {
				in := heldAfterRestart()
				in.QueueHeld = false
				in.Turns = append(in.Turns, started(continueTurn(4, "c1", "p1", session.TurnRunning), 10))
				return in
			}(),
			want: queueWant{want: want{kind: session.RecoveryClean, reason: session.ReasonTurnActive}, queued: []string{"q1", "q2"}},
		},
		{
			name: "all_ran_after_the_continuation_is_clean",
			in: func() session.PlanInput {
				in := heldAfterRestart()
				in.QueueHeld = false
				in.Turns[1], in.Turns[2] = started(turn(2, "q1", session.TurnCompleted), 20), started(turn(3, "q2", session.TurnCompleted), 30)
				in.Turns = append(in.Turns, started(continueTurn(4, "c1", "p1", session.TurnCompleted), 10))
				return in
			}(),
			want: queueWant{want: want{kind: session.RecoveryClean, reason: session.ReasonNothingToContinue, notice: []string{"the last turn finished"}}},
		},
		{
			name: "queued_turn_interrupted_after_the_continuation_is_the_target_though_its_seq_is_lower",
			in: func() session.PlanInput {
				in := heldAfterRestart()
				q1 := started(interrupted(2, "q1", "daemon_restart"), 20)
				in.Turns[1] = q1
				in.Turns = append(in.Turns, started(continueTurn(4, "c1", "p1", session.TurnCompleted), 10))
				in.Messages = append(in.Messages, msg("q1", session.RoleUser, "b"))
				return in
			}(),
			want: queueWant{want: want{kind: session.RecoveryInterruptedPrompt, canContinue: true, promptID: "q1", interruptReason: "daemon_restart"},
				queued: []string{"q2"}, held: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := session.Plan(tc.in)
			checkSummary(t, tc.in, got, tc.want.want)
			if !reflect.DeepEqual(got.Queued, tc.want.queued) {
				t.Errorf("queuedPromptIds = %v, want %v", got.Queued, tc.want.queued)
			}
			if got.QueueHeld != tc.want.held {
				t.Errorf("queueHeld = %v, want %v", got.QueueHeld, tc.want.held)
			}
		})
	}
}
