package sessions

import (
	"testing"

	"github.com/tether/tether/internal/session"
)

// The decision table for a session taken up from the store with nothing
// of it live (decideRestarted on a load, and on a closed session at
// start-up: decideTakenUp, decide_lifecycle.go), and what counts as left
// open. Helpers are in decide_test.go.

// TestDecideTakenUp: what is repaired when a session is taken up from the
// store with nothing of it live, as a reload with nothing live would:
// closed sessions their close left open (at start-up and on a load), and
// any session an actor loads in a running daemon, whose earlier actor
// retired or was dropped with writes the store refused.
func TestDecideTakenUp(t *testing.T) {
	running := func(id string) storedTurn { return storedTurn{PromptID: id, State: session.TurnRunning} }
	queuedT := func(id string) storedTurn { return storedTurn{PromptID: id, State: session.TurnQueued} }
	taken := func(load bool, f func(*restartedInput)) restartedInput {
		in := restartedInput{Repair: true, Load: load, Executor: session.ExecutorStopped, AgentAvailable: true}
		if f != nil {
			f(&in)
		}
		return in
	}
	loaded := func(f func(*restartedInput)) restartedInput { return taken(true, f) }
	cancelled := func(id string) effect { return resolved(id, session.PermissionCancelled, "") }
	expired := func(id string) effect { return resolved(id, session.PermissionExpired, "") }
	cancelTurn := func(id string) []effect { return endCancelled(id, "", true) }
	closed, waiting, inRunning := inState(session.SessionCompleted), inState(session.SessionWaitingForInput), inState(session.SessionRunning)
	heldWaiting := with(waiting, func(v *view) { v.QueueHeld = true })
	push := effPushRecovery{}
	var cases []decideCase
	// A session with nothing left open is left alone, whatever its state.
	for _, s := range allStates {
		cases = append(cases, decideCase{"loaded at rest/" + string(s), inState(s), restartedInput{Load: true, AgentAvailable: true}, accepted()})
		cases = append(cases, decideCase{"loaded at rest, its agent gone from the config/" + string(s), inState(s), restartedInput{Load: true}, accepted()})
	}
	cases = append(cases, []decideCase{
		{"loaded closed, its close's permission answers refused", closed, loaded(func(in *restartedInput) { in.Permissions = []string{"perm1", "perm2"} }),
			accepted(cancelled("perm1"), cancelled("perm2"), push)},
		{"loaded closed, its close's turn ends refused", closed, loaded(func(in *restartedInput) {
			in.Turns = []storedTurn{running("p1"), queuedT("q1"), queuedT("q2")}
		}), acc(lostOutcome("p1"), cancelTurn("q1"), cancelTurn("q2"), push)},
		{"loaded closed, its agent's stop refused", closed, loaded(func(in *restartedInput) { in.Executor = session.ExecutorReady }),
			accepted(stopped(""), push)},
		{"loaded closed, its hosted agent's stop refused", closed, loaded(func(in *restartedInput) {
			in.Executor, in.Hosted = session.ExecutorReady, true
		}), accepted(stopped(""), push)},
		{"restarted closed, its close's writes refused", closed, taken(false, func(in *restartedInput) {
			in.Turns, in.Permissions, in.Executor, in.Orphan = []storedTurn{running("p1")}, []string{"perm1"}, session.ExecutorReady, true
		}), accepted(lostOutcome("p1"), cancelled("perm1"), orphan, stopped(restartedWhy), effPushRecovery{Always: true})},
		{"loaded with a held queue", heldWaiting, loaded(func(in *restartedInput) { in.Turns = []storedTurn{queuedT("q1"), queuedT("q2")} }),
			accepted()},
		{"loaded with turns queued", waiting, loaded(func(in *restartedInput) { in.Turns = []storedTurn{queuedT("q1")} }), accepted()},
		{"loaded while a start was cut short", inState(session.SessionStarting), loaded(func(in *restartedInput) { in.Turns = []storedTurn{queuedT("q1")} }),
			accepted()},
		{"loaded with a turn whose end was refused", inRunning, loaded(func(in *restartedInput) {
			in.Turns = []storedTurn{running("p1"), queuedT("q1")}
		}), accepted(lostOutcome("p1"), stateChange(session.SessionRunning, session.SessionWaitingForInput), push)},
		{"loaded with a permission whose expiry was refused", waiting, loaded(func(in *restartedInput) { in.Permissions = []string{"perm1"} }),
			accepted(expired("perm1"), push)},
		{"loaded with its agent's exit refused", waiting, loaded(func(in *restartedInput) { in.Executor = session.ExecutorReady }),
			accepted(stopped(""), push)},
		{"loaded hosted, its agent on its host", inRunning, loaded(func(in *restartedInput) {
			in.Turns, in.Permissions, in.Executor, in.Hosted = []storedTurn{running("p1")}, []string{"perm1"}, session.ExecutorReady, true
		}), accepted(reconnectingExec, effStartAgent{How: startAttach}, push)},
		{"loaded hosted after start-up marked it reconnecting", inRunning, loaded(func(in *restartedInput) {
			in.Turns, in.Executor, in.Hosted = []storedTurn{running("p1")}, session.ExecutorReconnecting, true
		}), accepted(effStartAgent{How: startAttach})}, // start-up announced its plan
		{"loaded hosted while its start was cut short", inState(session.SessionStarting), loaded(func(in *restartedInput) {
			in.Turns, in.Executor, in.Hosted = []storedTurn{queuedT("q1")}, session.ExecutorStarting, true
		}), accepted(stopped(""), push)},
	}...)
	runDecideCases(t, cases)
}

// TestLeftOpen: what a session taken up from the store has to repair, as
// the start-up scan counts it (store.ListActiveSessions).
func TestLeftOpen(t *testing.T) {
	cases := []struct {
		name   string
		state  session.SessionState
		status session.ExecutorStatus
		open   bool
		want   bool
	}{
		{"waiting, agent stopped, nothing open", session.SessionWaitingForInput, session.ExecutorStopped, false, false},
		{"waiting, agent failed, nothing open", session.SessionWaitingForInput, session.ExecutorError, false, false},
		{"waiting, a turn or permission open", session.SessionWaitingForInput, session.ExecutorStopped, true, true},
		{"waiting, agent ready", session.SessionWaitingForInput, session.ExecutorReady, false, true},
		{"running", session.SessionRunning, session.ExecutorStopped, false, true},
		{"starting", session.SessionStarting, session.ExecutorStopped, false, true},
		{"just created, its first prompt queued", session.SessionCreated, session.ExecutorStopped, true, false},
		{"closed, nothing open", session.SessionCompleted, session.ExecutorStopped, false, false},
		{"closed, a permission left pending", session.SessionCompleted, session.ExecutorStopped, true, true},
		{"closed, its agent's stop refused", session.SessionCancelled, session.ExecutorReady, false, true},
		{"failed, agent reconnecting", session.SessionFailed, session.ExecutorReconnecting, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := leftOpen(tc.state, tc.status, tc.open); got != tc.want {
				t.Errorf("leftOpen(%s, %s, open %v): got %v, want %v", tc.state, tc.status, tc.open, got, tc.want)
			}
		})
	}
}
