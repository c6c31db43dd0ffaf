package sessions

import (
	"testing"

	"github.com/tether/tether/internal/store"
)

// The decision table's lifecycle inputs (decide_lifecycle.go). Helpers are
// in decide_test.go.

// TestDecideRestarted: every state a crash can leave an active session in,
// and what start-up reconciliation repairs.
func TestDecideRestarted(t *testing.T) {
	running := func(id string) restartTurn { return restartTurn{PromptID: id, State: store.TurnRunning} }
	queuedT := func(id string) restartTurn { return restartTurn{PromptID: id, State: store.TurnQueued} }
	// repair is a session to repair with agent available and, unless
	// changed, a stopped executor.
	repair := func(f func(*restartedInput)) restartedInput {
		in := restartedInput{Repair: true, Executor: store.ExecutorStopped, AgentAvailable: true}
		if f != nil {
			f(&in)
		}
		return in
	}
	midTurn := func(in *restartedInput) {
		in.Turns, in.Executor, in.Orphan = []restartTurn{running("p1")}, store.ExecutorReady, true
	}
	inRunning, waiting := view{State: store.SessionRunning}, view{State: store.SessionWaitingForInput}
	heldWaiting := view{State: store.SessionWaitingForInput, QueueHeld: true}
	toWaiting := effSetState{State: store.SessionWaitingForInput}
	interruptP1 := effRestartInterrupt{PromptID: "p1", Running: true}
	expire := effClosePermissions{State: store.PermissionExpired}
	runDecideCases(t, []decideCase{
		{"restarted at rest", waiting, restartedInput{AgentAvailable: true}, accepted()},
		{"restarted at rest, its agent gone from the config", waiting, restartedInput{}, accepted(effPushRecovery{})},
		{"restarted mid-turn", inRunning, repair(midTurn),
			accepted(effStopOrphan{}, interruptP1, effStopExecutor{}, toWaiting, effPushRecovery{})},
		{"restarted mid-turn, its agent gone from the config", inRunning, repair(func(in *restartedInput) { midTurn(in); in.AgentAvailable = false }),
			accepted(effStopOrphan{}, interruptP1, effStopExecutor{}, toWaiting, effPushRecovery{})},
		{"restarted mid-turn with prompts queued", inRunning, repair(func(in *restartedInput) {
			midTurn(in)
			in.Turns = append(in.Turns, queuedT("q1"), queuedT("q2"))
		}), accepted(effStopOrphan{}, interruptP1, effHoldQueue{}, effStopExecutor{}, toWaiting, effPushRecovery{})},
		{"restarted mid-turn behind a held queue", view{State: store.SessionRunning, QueueHeld: true}, repair(func(in *restartedInput) {
			midTurn(in)
			in.Turns = append(in.Turns, queuedT("q1"))
		}), accepted(effStopOrphan{}, interruptP1, effStopExecutor{}, toWaiting, effPushRecovery{})},
		{"restarted mid-turn asking a permission", inRunning, repair(func(in *restartedInput) { midTurn(in); in.Permissions = 2 }),
			accepted(effStopOrphan{}, interruptP1, expire, effStopExecutor{}, toWaiting, effPushRecovery{})},
		{"restarted mid-turn on an in-process agent", inRunning, repair(func(in *restartedInput) { midTurn(in); in.Orphan = false }),
			accepted(interruptP1, effStopExecutor{}, toWaiting, effPushRecovery{})},
		{"restarted mid-turn, its agent already exited", inRunning, repair(func(in *restartedInput) {
			in.Turns, in.Executor, in.Orphan = []restartTurn{running("p1")}, store.ExecutorError, true
		}), accepted(interruptP1, toWaiting, effPushRecovery{})},
		{"restarted with a turn about to start", waiting, repair(func(in *restartedInput) { in.Turns = []restartTurn{queuedT("q1")} }),
			accepted(effRestartInterrupt{PromptID: "q1"}, effTaskFollow{}, effPushRecovery{})},
		{"restarted with turns about to start", waiting, repair(func(in *restartedInput) { in.Turns = []restartTurn{queuedT("q1"), queuedT("q2")} }),
			accepted(effRestartInterrupt{PromptID: "q1"}, effHoldQueue{}, effTaskFollow{}, effPushRecovery{})},
		{"restarted with a queue held by an earlier restart", heldWaiting, repair(func(in *restartedInput) { in.Turns = []restartTurn{queuedT("q1"), queuedT("q2")} }),
			accepted(effTaskFollow{}, effPushRecovery{})},
		{"restarted idle with its agent ready", waiting, repair(func(in *restartedInput) { in.Executor, in.Orphan = store.ExecutorReady, true }),
			accepted(effStopOrphan{}, effStopExecutor{}, effTaskFollow{}, effPushRecovery{})},
		{"restarted idle with a permission outside a turn", waiting, repair(func(in *restartedInput) { in.Permissions = 1 }),
			accepted(expire, effTaskFollow{}, effPushRecovery{})},
		{"restarted while its agent started", view{State: store.SessionStarting}, repair(func(in *restartedInput) { in.Executor, in.Orphan = store.ExecutorStarting, true }),
			accepted(effStopOrphan{}, effStopExecutor{}, toWaiting, effPushRecovery{})},
		{"restarted while its agent started, no process yet", view{State: store.SessionStarting}, repair(func(in *restartedInput) { in.Executor = store.ExecutorStarting }),
			accepted(effStopExecutor{}, toWaiting, effPushRecovery{})},
		{"restarted while its first prompt started the agent", view{State: store.SessionStarting}, repair(func(in *restartedInput) {
			in.Turns, in.Executor = []restartTurn{queuedT("q1")}, store.ExecutorStarting
		}), accepted(effRestartInterrupt{PromptID: "q1"}, effStopExecutor{}, toWaiting, effPushRecovery{})},
	})
}
