package sessions

import (
	"errors"
	"testing"
	"time"

	"github.com/tether/tether/internal/store"
)

// The decision table's agent inputs (and the actor's own: admission
// outcomes, the idle clock, what runs next), in the states they arrive
// in. Helpers are in decide_test.go.

func TestDecideTurnEnded(t *testing.T) {
	in := turnEndedInput{PromptID: "p1", StopReason: "end_turn"}
	ended := func(end effEndTurn) decision {
		return accepted(effClearRunning{}, end, effClosePermissions{PromptID: "p1", State: store.PermissionCancelled},
			effTouchLastSeen{}, effStartNext{}, effArmIdle{})
	}
	// Only a running turn ends; anywhere else the answer is stale.
	cases := perState("turn ended", in, nil, terminalStates(map[store.SessionState]decision{
		store.SessionCreated:         accepted(),
		store.SessionStarting:        accepted(),
		store.SessionRunning:         ended(effEndTurn{PromptID: "p1", State: store.TurnCompleted, StopReason: "end_turn"}),
		store.SessionWaitingForInput: accepted(),
	}, func(store.SessionState) decision { return accepted() }))
	running := inState(store.SessionRunning)
	cancelRequested := with(running, func(v *view) { v.Running = &runningView{PromptID: "p1", CancelRequested: true} })
	failed := turnEndedInput{PromptID: "p1", Failed: true, ErrorCode: "agent_error_-32603", ErrorMessage: "boom"}
	lost := turnEndedInput{PromptID: "p1", Failed: true, SessionLost: true, ErrorCode: "agent_session_not_found", ErrorMessage: "gone"}
	lostTail := []effect{effClosePermissions{State: store.PermissionExpired},
		effRetireAgent{Why: "agent stopped: it lost the session (gone)"}, effSetState{State: store.SessionWaitingForInput}}
	cases = append(cases, []decideCase{
		{"turn ended cancelled by the agent", running, turnEndedInput{PromptID: "p1", StopReason: "cancelled"},
			ended(effEndTurn{PromptID: "p1", State: store.TurnCancelled, StopReason: "cancelled"})},
		{"turn ended after a cancel", cancelRequested, in, ended(effEndTurn{PromptID: "p1", State: store.TurnCancelled, StopReason: "end_turn"})},
		{"turn failed after a cancel", cancelRequested, failed, ended(effEndTurn{PromptID: "p1", State: store.TurnCancelled})},
		{"turn failed", running, failed, ended(effEndTurn{PromptID: "p1", State: store.TurnFailed, ErrorCode: "agent_error_-32603", ErrorMessage: "boom"})},
		{"turn ended by a disconnect", running, turnEndedInput{PromptID: "p1", Failed: true, Disconnected: true, ErrorCode: "agent_error"},
			accepted(effStopRunningAgent{})},
		{"turn ended of another turn", running, turnEndedInput{PromptID: "p0", StopReason: "end_turn"}, accepted()},
		{"turn failed: the agent lost the session", running, lost,
			accepted(append([]effect{effClearRunning{}, effInterruptTurn{PromptID: "p1", Reason: reasonSessionLost, Cause: sessionLostCause(lost)}}, lostTail...)...)},
		{"turn failed: the agent lost the session, prompts queued", with(running, func(v *view) { v.Queue = queued("q1") }), lost,
			accepted(append([]effect{effClearRunning{}, effHoldQueue{}, effInterruptTurn{PromptID: "p1", Reason: reasonSessionLost, Cause: sessionLostCause(lost)}}, lostTail...)...)},
		{"turn failed: the agent lost the session after a cancel", cancelRequested, lost,
			accepted(append([]effect{effClearRunning{}, effEndTurn{PromptID: "p1", State: store.TurnCancelled}}, lostTail...)...)},
		{"turn failed: the agent lost the session while stopping", with(running, func(v *view) { v.Stopping = true }), lost, accepted()},
		{"turn ended while stopping", with(running, func(v *view) { v.Stopping = true }), in, accepted()},
		{"turn ended on an agent already gone", with(running, func(v *view) { v.Agent, v.Connected = agentNone, false }), in,
			accepted(effClearRunning{}, effEndTurn{PromptID: "p1", State: store.TurnCompleted, StopReason: "end_turn"},
				effClosePermissions{PromptID: "p1", State: store.PermissionCancelled}, effStartNext{}, effArmIdle{})},
	}...)
	runDecideCases(t, cases)
}

func TestDecideAgentExited(t *testing.T) {
	exit := exitInfo{Code: -1, Signal: "killed"}
	in := agentExitedInput{Exit: exit}
	head := []effect{effClearSettling{}, effRecordExit{Exit: exit}, effClosePermissions{State: store.PermissionExpired}}
	idle := accepted(append(head, effDropSlot{}, effSetState{State: store.SessionWaitingForInput})...)
	cases := perState("agent exited", in, nil, terminalStates(map[store.SessionState]decision{
		store.SessionCreated:  idle,
		store.SessionStarting: idle,
		store.SessionRunning: accepted(append(head, effClearRunning{}, effInterruptTurn{PromptID: "p1", Reason: "agent_exited", Exit: exit},
			effDropSlot{}, effSetState{State: store.SessionWaitingForInput})...),
		store.SessionWaitingForInput: idle,
	}, func(store.SessionState) decision { return accepted(append(head, effDropSlot{})...) }))
	running := inState(store.SessionRunning)
	cases = append(cases, []decideCase{
		{"agent exited after a cancel", with(running, func(v *view) { v.Running = &runningView{PromptID: "p1", CancelRequested: true} }), in,
			accepted(append(head, effClearRunning{}, effEndTurn{PromptID: "p1", State: store.TurnCancelled},
				effDropSlot{}, effSetState{State: store.SessionWaitingForInput})...)},
		{"agent exited with prompts queued", with(running, func(v *view) { v.Queue = queued("q1") }), in,
			accepted(append(head, effClearRunning{}, effHoldQueue{}, effInterruptTurn{PromptID: "p1", Reason: "agent_exited", Exit: exit},
				effDropSlot{}, effSetState{State: store.SessionWaitingForInput})...)},
		{"agent lost with prompts queued", with(running, func(v *view) { v.Queue = queued("q1") }), agentExitedInput{Exit: exit, Lost: true},
			accepted(append(head, effClearRunning{}, effHoldQueue{}, effInterruptTurn{PromptID: "p1", Reason: "executor_lost", Exit: exit},
				effAwaitLate{PromptID: "p1"}, effDropSlot{}, effSetState{State: store.SessionWaitingForInput})...)},
		{"agent exited between turns with prompts queued", with(inState(store.SessionWaitingForInput), func(v *view) { v.Queue = queued("q1") }), in,
			accepted(append(head, effEnsureAgent{})...)},
		{"agent exited after a cancel with prompts queued", with(running, func(v *view) {
			v.Running = &runningView{PromptID: "p1", CancelRequested: true}
			v.Queue = queued("q1")
		}), in, accepted(append(head, effClearRunning{}, effEndTurn{PromptID: "p1", State: store.TurnCancelled}, effEnsureAgent{})...)},
		{"agent exited with a held queue", with(inState(store.SessionWaitingForInput), func(v *view) { v.Queue, v.QueueHeld = queued("q1"), true }), in, idle},
		{"agent lost with its executor host", running, agentExitedInput{Exit: exit, Lost: true},
			accepted(append(head, effClearRunning{}, effInterruptTurn{PromptID: "p1", Reason: "executor_lost", Exit: exit},
				effAwaitLate{PromptID: "p1"}, effDropSlot{}, effSetState{State: store.SessionWaitingForInput})...)},
		{"agent exited while stopping", with(running, func(v *view) { v.Stopping = true }), in,
			accepted(effClearSettling{}, effForgetAgent{}, effDropSlot{})},
	}...)
	// The executor says why the agent's records ended early: the executor
	// and the interrupted turn keep it.
	damaged := causeInfo{Code: "host_outbox_damaged", Message: "the executor host found the session's outbox damaged"}
	withCause := agentExitedInput{Exit: exit, Lost: true, Cause: damaged}
	causeHead := []effect{effClearSettling{}, effRecordExit{Exit: exit, Cause: damaged}, effClosePermissions{State: store.PermissionExpired}}
	cases = append(cases, []decideCase{
		{"agent lost with a damaged outbox mid-turn", running, withCause,
			accepted(append(causeHead, effClearRunning{}, effInterruptTurn{PromptID: "p1", Reason: "executor_lost", Exit: exit, Cause: damaged},
				effAwaitLate{PromptID: "p1"},
				effDropSlot{}, effSetState{State: store.SessionWaitingForInput})...)},
		{"agent lost with a damaged outbox while idle", inState(store.SessionWaitingForInput), withCause,
			accepted(append(causeHead, effDropSlot{}, effSetState{State: store.SessionWaitingForInput})...)},
	}...)
	runDecideCases(t, cases)
}

func TestDecideNext(t *testing.T) {
	in := nextInput{}
	waitingQ := func(v *view) { v.Queue = queued("q1", "q2") }
	cases := perState("next", in, waitingQ, terminalStates(map[store.SessionState]decision{
		store.SessionCreated:         accepted(), // no agent yet
		store.SessionStarting:        accepted(),
		store.SessionRunning:         accepted(),
		store.SessionWaitingForInput: accepted(effStartTurn{PromptID: "q1"}),
	}, func(store.SessionState) decision { return accepted() }))
	waiting := inState(store.SessionWaitingForInput)
	idle := accepted(effSetState{State: store.SessionWaitingForInput})
	cases = append(cases, []decideCase{
		{"next with nothing queued", waiting, in, idle},
		{"next with a held queue", with(waiting, func(v *view) { v.Queue, v.QueueHeld = queued("q1"), true }), in, idle},
		{"next while the head is admitting", with(waiting, func(v *view) { v.Queue = []queuedView{{PromptID: "q1", Admitting: true}} }), in, accepted()},
		{"next while a load settles", with(waiting, func(v *view) {
			waitingQ(v)
			v.Settling = true
		}), in, accepted()},
		{"next while stopping", with(waiting, func(v *view) {
			waitingQ(v)
			v.Stopping = true
		}), in, accepted()},
	}...)
	runDecideCases(t, cases)
}

func TestDecidePermissionRequested(t *testing.T) {
	in := permissionRequestedInput{}
	bound := func(v *view) { v.MaxPermissions = 2 }
	outside := accepted(effAskPermission{}, effPushRecovery{})
	cases := perState("permission requested", in, bound, terminalStates(map[store.SessionState]decision{
		store.SessionCreated:         outside,
		store.SessionStarting:        outside,
		store.SessionRunning:         accepted(effAskPermission{PromptID: "p1"}, effPushRecovery{}),
		store.SessionWaitingForInput: outside,
	}, func(store.SessionState) decision { return outside }))
	running := with(inState(store.SessionRunning), bound)
	cases = append(cases, []decideCase{
		{"permission requested after a cancel", with(running, func(v *view) { v.Running = &runningView{PromptID: "p1", CancelRequested: true} }), in,
			accepted(effDeclinePermission{})},
		{"permission requested while stopping", with(running, func(v *view) { v.Stopping = true }), in, accepted(effDeclinePermission{})},
		{"permission requested beyond the bound", with(running, func(v *view) { v.OpenPermissions = 2 }), in,
			accepted(effDeclinePermission{TooMany: true})},
		{"permission requested below the bound", with(running, func(v *view) { v.OpenPermissions = 1 }), in,
			accepted(effAskPermission{PromptID: "p1"}, effPushRecovery{})},
	}...)
	runDecideCases(t, cases)
}

func TestDecideAdmitted(t *testing.T) {
	failure := errors.New("disk full")
	admitting := func(v *view) {
		v.Queue = []queuedView{{PromptID: "q1", Admitting: true}}
		v.Turn = &turnView{PromptID: "q1", State: store.TurnQueued, Admitting: true}
	}
	settle := effSettleAdmission{PromptID: "q1"}
	ok := accepted(settle, effEnsureAgent{}, effStartNext{})
	cases := perState("admitted", admittedInput{PromptID: "q1"}, admitting, terminalStates(map[store.SessionState]decision{
		store.SessionCreated: ok, store.SessionStarting: ok, store.SessionRunning: ok, store.SessionWaitingForInput: ok,
	}, func(store.SessionState) decision { return ok }))
	unadmit := accepted(settle, effUnadmit{PromptID: "q1", Err: failure}, effStartNext{})
	cases = append(cases, perState("admission failed", admittedInput{PromptID: "q1", Err: failure}, admitting, terminalStates(map[store.SessionState]decision{
		store.SessionCreated: unadmit, store.SessionStarting: unadmit, store.SessionRunning: unadmit, store.SessionWaitingForInput: unadmit,
	}, func(store.SessionState) decision { return unadmit }))...)
	waiting := with(inState(store.SessionWaitingForInput), admitting)
	cases = append(cases, []decideCase{
		{"admitted twice", with(waiting, func(v *view) { v.Turn.Admitting = false }), admittedInput{PromptID: "q1"}, accepted()},
		{"admitted unknown", inState(store.SessionWaitingForInput), admittedInput{PromptID: "q1"}, accepted()},
		{"admitted after a cancel ended it", with(waiting, func(v *view) { v.Queue = nil }), admittedInput{PromptID: "q1"},
			accepted(settle, effStartNext{})},
		{"admission failed that released a hold", with(waiting, func(v *view) {
			v.Queue = []queuedView{{PromptID: "q1", Admitting: true}, {PromptID: "h1"}}
			v.Turn.ReleasedHold = true
		}), admittedInput{PromptID: "q1", Err: failure}, accepted(settle, effUnadmit{PromptID: "q1", Err: failure, Rehold: true}, effStartNext{})},
		{"admission failed that released a hold now empty", with(waiting, func(v *view) { v.Turn.ReleasedHold = true }),
			admittedInput{PromptID: "q1", Err: failure}, unadmit},
	}...)
	runDecideCases(t, cases)
}

func TestDecideIdleCheck(t *testing.T) {
	due := idleCheckInput{Elapsed: 2 * time.Minute, Timeout: time.Minute}
	stop := accepted(effStopIdle{Timeout: time.Minute})
	cases := perState("idle check", due, nil, terminalStates(map[store.SessionState]decision{
		store.SessionCreated:         accepted(), // no agent: the next start arms the clock
		store.SessionStarting:        accepted(),
		store.SessionRunning:         accepted(effIdleBusy{}),
		store.SessionWaitingForInput: stop,
	}, func(store.SessionState) decision { return accepted() }))
	waiting := inState(store.SessionWaitingForInput)
	cases = append(cases, []decideCase{
		{"idle check early", waiting, idleCheckInput{Elapsed: 20 * time.Second, Timeout: time.Minute}, accepted(effIdleWait{Left: 40 * time.Second})},
		{"idle check with a permission open", with(waiting, func(v *view) { v.OpenPermissions = 1 }), due, accepted(effIdleBusy{})},
		{"idle check with a queue", with(waiting, func(v *view) { v.Queue = queued("q1") }), due, accepted(effIdleBusy{})},
		{"idle check with a held queue", with(waiting, func(v *view) { v.Queue, v.QueueHeld = queued("q1"), true }), due, stop},
		{"idle check while a load settles", with(waiting, func(v *view) { v.Settling = true }), due, accepted(effIdleBusy{})},
		{"idle check while stopping", with(waiting, func(v *view) { v.Stopping = true }), due, accepted()},
	}...)
	runDecideCases(t, cases)
}
