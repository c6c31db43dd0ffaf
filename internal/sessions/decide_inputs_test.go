package sessions

import (
	"testing"
	"time"

	"github.com/tether/tether/internal/session"
)

// The decision table's agent inputs (and the actor's own: admission
// outcomes, the idle clock, what runs next), in the states they arrive
// in. Helpers are in decide_test.go.

func TestDecideTurnEnded(t *testing.T) {
	in := turnEndedInput{PromptID: "p1", StopReason: "end_turn"}
	ended := func(end []effect) decision {
		return acc(end, effAnswerPermissions{PromptID: "p1", State: session.PermissionCancelled}, effTimer{Timer: timerIdle}).then(nextInput{})
	}
	// Only a running turn ends; anywhere else the answer is stale.
	cases := perState("turn ended", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         accepted(),
		session.SessionStarting:        accepted(),
		session.SessionRunning:         ended(endCompleted("p1", "end_turn")),
		session.SessionWaitingForInput: accepted(),
	}, func(session.SessionState) decision { return accepted() }))
	running := inState(session.SessionRunning)
	cancelRequested := with(running, func(v *view) { v.Running = &runningView{PromptID: "p1", CancelRequested: true} })
	failed := turnEndedInput{PromptID: "p1", Failed: true, ErrorCode: "agent_error_-32603", ErrorMessage: "boom"}
	lost := turnEndedInput{PromptID: "p1", Failed: true, SessionLost: true, ErrorCode: "agent_session_not_found", ErrorMessage: "gone"}
	lostTail := []effect{effAnswerPermissions{State: session.PermissionExpired},
		effStopAgent{How: stopRetire, Why: "agent stopped: it lost the session (gone)"}, stateChange(session.SessionRunning, session.SessionWaitingForInput)}
	cases = append(cases, []decideCase{
		{"turn ended cancelled by the agent", running, turnEndedInput{PromptID: "p1", StopReason: "cancelled"},
			ended(endCancelled("p1", "cancelled", false))},
		{"turn ended after a cancel", cancelRequested, in, ended(endCancelled("p1", "end_turn", true))},
		{"turn failed after a cancel", cancelRequested, failed, ended(endCancelled("p1", "", true))},
		{"turn failed", running, failed, ended(endFailed("p1", "agent_error_-32603", "boom"))},
		{"turn ended by a disconnect", running, turnEndedInput{PromptID: "p1", Failed: true, Disconnected: true, ErrorCode: "agent_error"},
			accepted(effStopAgent{How: stopRunning})},
		{"turn ended of another turn", running, turnEndedInput{PromptID: "p0", StopReason: "end_turn"}, accepted()},
		{"turn failed: the agent lost the session", running, lost,
			accepted(append([]effect{interruptedTurn("p1", reasonSessionLost, nil, "", sessionLostCause(lost),
				"Turn interrupted: the agent lost its session (gone); it is restored when the session is used again.")}, lostTail...)...)},
		{"turn failed: the agent lost the session, prompts queued", with(running, func(v *view) { v.Queue = queued("q1") }), lost,
			accepted(append([]effect{queueHeld(true), interruptedTurn("p1", reasonSessionLost, nil, "", sessionLostCause(lost),
				"Turn interrupted: the agent lost its session (gone); it is restored when the session is used again.")}, lostTail...)...)},
		{"turn failed: the agent lost the session after a cancel", cancelRequested, lost,
			acc(endCancelled("p1", "", true), lostTail)},
		{"turn failed: the agent lost the session while stopping", with(running, func(v *view) { v.Stopping = true }), lost, accepted()},
		{"turn ended while stopping", with(running, func(v *view) { v.Stopping = true }), in, accepted()},
		{"turn ended on an agent already gone", with(running, func(v *view) { v.Agent, v.Connected = agentNone, false }), in,
			acc(endCompleted("p1", "end_turn"),
				effAnswerPermissions{PromptID: "p1", State: session.PermissionCancelled}, effTimer{Timer: timerIdle}).then(nextInput{})},
	}...)
	runDecideCases(t, cases)
}

func TestDecideAgentExited(t *testing.T) {
	exit := exitInfo{Code: -1, Signal: "killed"}
	minus1 := -1
	// killed: turn p1 interrupted as its agent was killed (reason), with
	// cause; the notice says the cause, else the exit.
	killed := func(reason string, cause causeInfo) effect {
		notice := "Turn interrupted: the agent was stopped by a signal (killed)."
		if cause.Message != "" {
			notice = "Turn interrupted: " + cause.Message + "."
		}
		return interruptedTurn("p1", reason, &minus1, "killed", cause, notice)
	}
	at := time.Date(2026, 12, 6, 14, 0, 0, 0, time.UTC)
	in := agentExitedInput{Exit: exit, At: at}
	// The executor (zero in these tables) is recorded stopped with the
	// exit, seen last as the agent ended.
	exitRecord := effRecord{Event: &session.ExecutorStatusData{Status: session.ExecutorStopped,
		Error: "agent was stopped by a signal (killed)", ExitCode: &minus1, ExitSignal: "killed", LastSeenAt: &at}}
	head := []effect{exitRecord, effAnswerPermissions{State: session.PermissionExpired}}
	// A fresh agent starts for the prompts queued (in the slot the actor
	// keeps while one starts).
	restart := accepted(head...).then(ensureAgentInput{})
	idleIn := func(s session.SessionState) decision { return acc(head, toWaiting(s)) }
	idle := idleIn(session.SessionWaitingForInput)
	cases := perState("agent exited", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:  idleIn(session.SessionCreated),
		session.SessionStarting: idleIn(session.SessionStarting),
		session.SessionRunning: accepted(append(head, killed("agent_exited", causeInfo{}),
			stateChange(session.SessionRunning, session.SessionWaitingForInput))...),
		session.SessionWaitingForInput: idle,
	}, func(session.SessionState) decision { return accepted(head...) }))
	running := inState(session.SessionRunning)
	cases = append(cases, []decideCase{
		{"agent exited after a cancel", with(running, func(v *view) { v.Running = &runningView{PromptID: "p1", CancelRequested: true} }), in,
			acc(head, endCancelled("p1", "", true), stateChange(session.SessionRunning, session.SessionWaitingForInput))},
		{"agent exited with prompts queued", with(running, func(v *view) { v.Queue = queued("q1") }), in,
			accepted(append(head, queueHeld(true), killed("agent_exited", causeInfo{}),
				stateChange(session.SessionRunning, session.SessionWaitingForInput))...)},
		{"agent lost with prompts queued", with(running, func(v *view) { v.Queue = queued("q1") }), agentExitedInput{Exit: exit, Lost: true, At: at},
			accepted(append(head, queueHeld(true), killed("executor_lost", causeInfo{}),
				stateChange(session.SessionRunning, session.SessionWaitingForInput))...)},
		{"agent exited between turns with prompts queued", with(inState(session.SessionWaitingForInput), func(v *view) { v.Queue = queued("q1") }), in,
			restart},
		{"agent exited while a resume waits for one", with(inState(session.SessionWaitingForInput), func(v *view) { v.Waiting = true }), in,
			restart},
		{"agent exited after a cancel while a resume waits for one", with(running, func(v *view) {
			v.Running = &runningView{PromptID: "p1", CancelRequested: true}
			v.Waiting = true
		}), in, acc(restart.Effects, endCancelled("p1", "", true)).then(ensureAgentInput{})},
		{"agent exited after a cancel with prompts queued", with(running, func(v *view) {
			v.Running = &runningView{PromptID: "p1", CancelRequested: true}
			v.Queue = queued("q1")
		}), in, acc(restart.Effects, endCancelled("p1", "", true)).then(ensureAgentInput{})},
		{"agent exited with a held queue", with(inState(session.SessionWaitingForInput), func(v *view) { v.Queue, v.QueueHeld = queued("q1"), true }), in, idle},
		{"agent lost with its executor host", running, agentExitedInput{Exit: exit, Lost: true, At: at},
			accepted(append(head, killed("executor_lost", causeInfo{}),
				stateChange(session.SessionRunning, session.SessionWaitingForInput))...)},
		{"agent exited while stopping", with(running, func(v *view) { v.Stopping = true }), in,
			accepted()},
	}...)
	// The executor says why the agent's records ended early: the executor
	// and the interrupted turn keep it.
	damaged := causeInfo{Code: "host_outbox_damaged", Message: "the executor host found the session's outbox damaged"}
	withCause := agentExitedInput{Exit: exit, Lost: true, Cause: damaged, At: at}
	causeRecord := effRecord{Event: &session.ExecutorStatusData{Status: session.ExecutorError, Error: damaged.Message,
		ErrorCode: damaged.Code, ExitCode: &minus1, ExitSignal: "killed", LastSeenAt: &at}}
	causeHead := []effect{causeRecord, effAnswerPermissions{State: session.PermissionExpired}}
	cases = append(cases, []decideCase{
		{"agent lost with a damaged outbox mid-turn", running, withCause,
			accepted(append(causeHead, killed("executor_lost", damaged),
				stateChange(session.SessionRunning, session.SessionWaitingForInput))...)},
		{"agent lost with a damaged outbox while idle", inState(session.SessionWaitingForInput), withCause,
			accepted(causeHead...)},
	}...)
	runDecideCases(t, cases)
}

func TestDecideNext(t *testing.T) {
	in := nextInput{}
	waitingQ := func(v *view) { v.Queue = queued("q1", "q2") }
	cases := perState("next", in, waitingQ, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         accepted(), // no agent yet
		session.SessionStarting:        accepted(),
		session.SessionRunning:         accepted(),
		session.SessionWaitingForInput: accepted(effStartTurn{PromptID: "q1"}),
	}, func(session.SessionState) decision { return accepted() }))
	waiting := inState(session.SessionWaitingForInput)
	// Nothing to run: the session waits for input (it does already: no
	// event).
	idle := accepted()
	held := func(v *view) { v.Queue, v.QueueHeld = queued("q1"), true }
	cases = append(cases, []decideCase{
		{"next with nothing queued", waiting, in, idle},
		{"next with a held queue", with(waiting, held), in, idle},
		{"next with nothing queued once started", with(waiting, func(v *view) { v.State = session.SessionStarting }), in,
			accepted(stateChange(session.SessionStarting, session.SessionWaitingForInput))},
		{"next with a held queue after a turn", with(waiting, func(v *view) {
			held(v)
			v.State = session.SessionRunning
		}), in, accepted(stateChange(session.SessionRunning, session.SessionWaitingForInput))},
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
	cases := perState("permission requested", in, bound, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         outside,
		session.SessionStarting:        outside,
		session.SessionRunning:         accepted(effAskPermission{PromptID: "p1"}, effPushRecovery{}),
		session.SessionWaitingForInput: outside,
	}, func(session.SessionState) decision { return outside }))
	running := with(inState(session.SessionRunning), bound)
	cases = append(cases, []decideCase{
		{"permission requested after a cancel", with(running, func(v *view) { v.Running = &runningView{PromptID: "p1", CancelRequested: true} }), in,
			accepted(effAskPermission{Declined: true})},
		{"permission requested while stopping", with(running, func(v *view) { v.Stopping = true }), in, accepted(effAskPermission{Declined: true})},
		{"permission requested beyond the bound", with(running, func(v *view) { v.OpenPermissions = 2 }), in,
			accepted(effAskPermission{Declined: true, TooMany: true})},
		{"permission requested below the bound", with(running, func(v *view) { v.OpenPermissions = 1 }), in,
			accepted(effAskPermission{PromptID: "p1"}, effPushRecovery{})},
	}...)
	runDecideCases(t, cases)
}

func TestDecideAdmitted(t *testing.T) {
	// The actor has taken the write's outcome (admitted): a turn durable
	// is still queued unless something ended it since; a turn whose write
	// failed is gone.
	stillQueued := func(v *view) { v.Queue = queued("q1") }
	ok := accepted().then(ensureAgentInput{}, nextInput{})
	cases := perState("admitted", admittedInput{PromptID: "q1"}, stillQueued, terminalStates(map[session.SessionState]decision{
		session.SessionCreated: ok, session.SessionStarting: ok, session.SessionRunning: ok, session.SessionWaitingForInput: ok,
	}, func(session.SessionState) decision { return ok }))
	waiting := inState(session.SessionWaitingForInput)
	cases = append(cases, []decideCase{
		{"admitted after a cancel ended it", waiting, admittedInput{PromptID: "q1"}, accepted().then(nextInput{})},
		{"admission failed, the turn forgotten", with(waiting, func(v *view) { v.Queue = queued("h1") }), admittedInput{PromptID: "q1"},
			accepted().then(nextInput{})},
	}...)
	runDecideCases(t, cases)
}

func TestDecideIdleCheck(t *testing.T) {
	due := idleCheckInput{Elapsed: 2 * time.Minute, Timeout: time.Minute}
	stop := accepted(effStopAgent{How: stopRetire, Why: "agent stopped: idle for 1m0s"})
	cases := perState("idle check", due, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         accepted(), // no agent: the next start arms the clock
		session.SessionStarting:        accepted(),
		session.SessionRunning:         accepted(effTimer{Timer: timerIdle, After: time.Minute, Restart: true}),
		session.SessionWaitingForInput: stop,
	}, func(session.SessionState) decision { return accepted() }))
	waiting := inState(session.SessionWaitingForInput)
	cases = append(cases, []decideCase{
		{"idle check early", waiting, idleCheckInput{Elapsed: 20 * time.Second, Timeout: time.Minute}, accepted(effTimer{Timer: timerIdle, After: 40 * time.Second})},
		{"idle check with a permission open", with(waiting, func(v *view) { v.OpenPermissions = 1 }), due, accepted(effTimer{Timer: timerIdle, After: time.Minute, Restart: true})},
		{"idle check with a queue", with(waiting, func(v *view) { v.Queue = queued("q1") }), due, accepted(effTimer{Timer: timerIdle, After: time.Minute, Restart: true})},
		{"idle check with a held queue", with(waiting, func(v *view) { v.Queue, v.QueueHeld = queued("q1"), true }), due, stop},
		{"idle check while a load settles", with(waiting, func(v *view) { v.Settling = true }), due, accepted(effTimer{Timer: timerIdle, After: time.Minute, Restart: true})},
		{"idle check while stopping", with(waiting, func(v *view) { v.Stopping = true }), due, accepted()},
	}...)
	runDecideCases(t, cases)
}
