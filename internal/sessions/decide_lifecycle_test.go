package sessions

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// The decision table's lifecycle inputs (decide_lifecycle.go): an agent's
// start and how it restores the session, a failed write and the reload
// after it, shutdown and start-up reconciliation. Helpers are in
// decide_test.go.

// TestDecideRestarted: every state a crash can leave an active session in,
// and what start-up reconciliation repairs.
func TestDecideRestarted(t *testing.T) {
	running := func(id string) storedTurn { return storedTurn{PromptID: id, State: session.TurnRunning} }
	queuedT := func(id string) storedTurn { return storedTurn{PromptID: id, State: session.TurnQueued} }
	// repair is a session to repair with agent available and, unless
	// changed, a stopped executor.
	repair := func(f func(*restartedInput)) restartedInput {
		in := restartedInput{Repair: true, Executor: session.ExecutorStopped, AgentAvailable: true}
		if f != nil {
			f(&in)
		}
		return in
	}
	midTurn := func(in *restartedInput) {
		in.Turns, in.Executor, in.Orphan = []storedTurn{running("p1")}, session.ExecutorReady, true
	}
	inRunning, waiting := view{State: session.SessionRunning}, view{State: session.SessionWaitingForInput}
	heldWaiting := view{State: session.SessionWaitingForInput, QueueHeld: true}
	toWaiting := stateChange(session.SessionRunning, session.SessionWaitingForInput)
	startedToWaiting := stateChange(session.SessionStarting, session.SessionWaitingForInput)
	interruptP1 := interruptedTurn("p1", reasonRestart, nil, "", causeInfo{}, "Turn interrupted: tetherd restarted while it was running.")
	expire := func(id string) effect { return resolved(id, session.PermissionExpired, "") }
	stop, announce := stopped(restartedWhy), effPushRecovery{Always: true}
	follow := effPushRecovery{Always: true, FollowTask: true}
	reconnecting := reconnectingExec
	runDecideCases(t, []decideCase{
		{"restarted at rest", waiting, restartedInput{AgentAvailable: true}, accepted()},
		{"restarted mid-turn, hosted", inRunning, repair(func(in *restartedInput) {
			midTurn(in)
			in.Orphan, in.Hosted, in.Permissions = false, true, []string{"perm1"}
			in.Turns = append(in.Turns, queuedT("q1"))
		}), accepted(reconnecting, effStartAgent{How: startAttach}, announce)},
		{"restarted while a hosted agent started, its first prompt queued", view{State: session.SessionStarting}, repair(func(in *restartedInput) {
			in.Executor, in.Hosted = session.ExecutorStarting, true
			in.Turns = []storedTurn{queuedT("q1")}
		}), accepted(stop, announce).then(ensureAgentInput{})},
		{"restarted waiting for input, hosted", waiting, repair(func(in *restartedInput) {
			in.Executor, in.Hosted = session.ExecutorReconnecting, true
		}), accepted(reconnecting, effStartAgent{How: startAttach}, announce)},
		{"restarted at rest, its agent gone from the config", waiting, restartedInput{}, accepted(announce)},
		{"restarted mid-turn", inRunning, repair(midTurn),
			accepted(interruptP1, orphan, stop, toWaiting, announce)},
		{"restarted mid-turn, its agent gone from the config", inRunning, repair(func(in *restartedInput) { midTurn(in); in.AgentAvailable = false }),
			accepted(interruptP1, orphan, stop, toWaiting, announce)},
		{"restarted mid-turn with prompts queued", inRunning, repair(func(in *restartedInput) {
			midTurn(in)
			in.Turns = append(in.Turns, queuedT("q1"), queuedT("q2"))
		}), accepted(interruptP1, queueHeld(true), orphan, stop, toWaiting, announce)},
		{"restarted mid-turn behind a held queue", view{State: session.SessionRunning, QueueHeld: true}, repair(func(in *restartedInput) {
			midTurn(in)
			in.Turns = append(in.Turns, queuedT("q1"))
		}), accepted(interruptP1, orphan, stop, toWaiting, announce)},
		{"restarted mid-turn asking a permission", inRunning, repair(func(in *restartedInput) { midTurn(in); in.Permissions = []string{"perm1", "perm2"} }),
			accepted(interruptP1, expire("perm1"), expire("perm2"), orphan, stop, toWaiting, announce)},
		{"restarted mid-turn on an in-process agent", inRunning, repair(func(in *restartedInput) { midTurn(in); in.Orphan = false }),
			accepted(interruptP1, stop, toWaiting, announce)},
		{"restarted mid-turn, its agent already exited", inRunning, repair(func(in *restartedInput) {
			in.Turns, in.Executor, in.Orphan = []storedTurn{running("p1")}, session.ExecutorError, true
		}), accepted(interruptP1, toWaiting, announce)},
		{"restarted with a turn about to start", waiting, repair(func(in *restartedInput) { in.Turns = []storedTurn{queuedT("q1")} }),
			accepted(interruptedTurn("q1", reasonRestart, nil, "", causeInfo{}, ""), follow)},
		{"restarted with turns about to start", waiting, repair(func(in *restartedInput) { in.Turns = []storedTurn{queuedT("q1"), queuedT("q2")} }),
			accepted(interruptedTurn("q1", reasonRestart, nil, "", causeInfo{}, ""), queueHeld(true), follow)},
		{"restarted with a queue held by an earlier restart", heldWaiting, repair(func(in *restartedInput) { in.Turns = []storedTurn{queuedT("q1"), queuedT("q2")} }),
			accepted(follow)},
		{"restarted idle with its agent ready", waiting, repair(func(in *restartedInput) { in.Executor, in.Orphan = session.ExecutorReady, true }),
			accepted(orphan, stop, follow)},
		{"restarted idle with a permission outside a turn", waiting, repair(func(in *restartedInput) { in.Permissions = []string{"perm1"} }),
			accepted(expire("perm1"), follow)},
		{"restarted while its agent started", view{State: session.SessionStarting}, repair(func(in *restartedInput) { in.Executor, in.Orphan = session.ExecutorStarting, true }),
			accepted(orphan, stop, startedToWaiting, announce)},
		{"restarted while its agent started, no process yet", view{State: session.SessionStarting}, repair(func(in *restartedInput) { in.Executor = session.ExecutorStarting }),
			accepted(stop, startedToWaiting, announce)},
		{"restarted while its first prompt started the agent", view{State: session.SessionStarting}, repair(func(in *restartedInput) {
			in.Turns, in.Executor = []storedTurn{queuedT("q1")}, session.ExecutorStarting
		}), accepted(interruptedTurn("q1", reasonRestart, nil, "", causeInfo{}, ""), stop, startedToWaiting, announce)},
	})
}

func TestDecideWriteFailed(t *testing.T) {
	in, closing := writeFailedInput{}, writeFailedInput{ShuttingDown: true}
	reload := accepted(effTimer{Timer: timerReload})
	reloadEveryState := func(session.SessionState) decision { return reload }
	cases := perState("write failed", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated: reload, session.SessionStarting: reload, session.SessionRunning: reload, session.SessionWaitingForInput: reload,
	}, reloadEveryState))
	waiting := inState(session.SessionRunning)
	reloading := with(waiting, func(v *view) { v.Reloading = true })
	backedOffReload := func(d time.Duration) decision { return accepted(effTimer{Timer: timerReload, After: d}) }
	cases = append(cases, []decideCase{
		{"write failed while a reload waits", reloading, in, accepted()},
		{"write failed as the writer closed", waiting, closing, accepted()},
		{"write failed as the writer closed while a reload waits", reloading, closing, accepted()},
		{"write failed while stopping", with(waiting, func(v *view) { v.Stopping = true }), in, reload},
		{"write failed after a reload's write failed", backedOff(waiting, reloadBackoffMin), in, backedOffReload(reloadBackoffMin)},
		{"write failed as the backoff nears its cap", backedOff(waiting, reloadBackoffMax-time.Second), in,
			backedOffReload(reloadBackoffMax - time.Second)},
		{"write failed at the backoff's cap", backedOff(waiting, reloadBackoffMax), in, backedOffReload(reloadBackoffMax)},
		{"write failed while a backed-off reload waits", with(backedOff(waiting, time.Second), func(v *view) { v.Reloading = true }), in,
			accepted()},
		{"write failed names the change and its error", waiting, writeFailedInput{Change: "sessions.turnEnded", Err: errStale}, reload},
	}...)
	runDecideCases(t, cases)
}

// TestNextBackoff: the reload after the next failure waits twice as long
// as this one (the first reloadBackoffMin), up to reloadBackoffMax.
func TestNextBackoff(t *testing.T) {
	for _, c := range []struct {
		name     string
		now, got time.Duration
	}{
		{"first reload at once", 0, reloadBackoffMin},
		{"doubles", reloadBackoffMin, 2 * reloadBackoffMin},
		{"nears its cap", reloadBackoffMax - time.Second, reloadBackoffMax},
		{"at its cap", reloadBackoffMax, reloadBackoffMax},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := nextBackoff(c.now); got != c.got {
				t.Fatalf("nextBackoff(%v): got %v, want %v", c.now, got, c.got)
			}
		})
	}
}

// backedOff is v with the reload after the next failed write waiting d.
func backedOff(v view, d time.Duration) view {
	v.Backoff = d
	return v
}

// TestDecideReloaded: what the actor records once it read the session
// back after a failed write, for what the store holds against what is
// live (what it believes of the queue: TestStoredQueue).
func TestDecideReloaded(t *testing.T) {
	stored := func(id string, s session.TurnState) storedTurn { return storedTurn{PromptID: id, State: s} }
	done, p1Running := stored("p0", session.TurnCompleted), stored("p1", session.TurnRunning)
	reloaded := func(s session.SessionState, turns ...storedTurn) reloadedInput {
		return reloadedInput{State: s, Turns: turns}
	}
	agrees := accepted().then(nextInput{})
	// The store agrees with the typical session of each state.
	var cases []decideCase
	for _, s := range allStates {
		turns := []storedTurn{done}
		if s == session.SessionRunning {
			turns = append(turns, p1Running)
		}
		cases = append(cases, decideCase{"reloaded, the store agrees/" + string(s), inState(s), reloaded(s, turns...), agrees})
	}
	running, idle := inState(session.SessionRunning), inState(session.SessionWaitingForInput)
	admitting := func(ids ...string) func(*view) {
		return func(v *view) {
			for _, id := range ids {
				v.Queue = append(v.Queue, queuedView{PromptID: id, Admitting: true})
			}
		}
	}
	pending := func(in reloadedInput, ps ...storedPermission) reloadedInput {
		in.Pending = ps
		return in
	}
	allowed := &permissionEnd{State: session.PermissionSelected, OptionID: "ok"}
	expired := permissionEnd{State: session.PermissionExpired}
	lostTurn := accepted(lostOutcome("p1"), stateChange(session.SessionRunning, session.SessionWaitingForInput), effPushRecovery{}).then(nextInput{})
	cases = append(cases, []decideCase{
		{"reloaded after a turn's end was lost", idle, reloaded(session.SessionRunning, done, p1Running), lostTurn},
		{"reloaded after a turn's end was lost, the state stored", idle, reloaded(session.SessionWaitingForInput, done, p1Running),
			accepted(lostOutcome("p1"), effPushRecovery{}).then(nextInput{})},
		// Every reload tries every repair again: the backoff between
		// reloads (decideWriteFailed) is what keeps it from looping.
		{"reloaded after the repairs' writes failed", backedOff(idle, time.Second), reloaded(session.SessionRunning, done, p1Running), lostTurn},
		{"reloaded after two turns' ends were lost", idle,
			reloaded(session.SessionWaitingForInput, stored("p1", session.TurnRunning), stored("p2", session.TurnRunning)),
			accepted(lostOutcome("p1"), lostOutcome("p2"), effPushRecovery{}).then(nextInput{})},
		{"reloaded with only the session state lost", idle, reloaded(session.SessionRunning, done),
			accepted(stateChange(session.SessionRunning, session.SessionWaitingForInput), effPushRecovery{}).then(nextInput{})},
		{"reloaded with only the session state lost, turns queued", idle, reloaded(session.SessionRunning, done, stored("q1", session.TurnQueued)),
			accepted(stateChange(session.SessionRunning, session.SessionWaitingForInput), effPushRecovery{}).then(nextInput{})},
		{"reloaded mid-turn, the state stored RUNNING", running, reloaded(session.SessionRunning, done, p1Running), agrees},
		{"reloaded mid-turn, the turn stored queued", running, reloaded(session.SessionWaitingForInput, done, stored("p1", session.TurnQueued)), agrees},
		{"reloaded mid-turn with an older turn lost", running, reloaded(session.SessionRunning, stored("p0", session.TurnRunning), p1Running),
			accepted(lostOutcome("p0"), effPushRecovery{}).then(nextInput{})},
		{"reloaded with turns queued", with(running, func(v *view) { v.Queue = queued("q1", "q2") }),
			reloaded(session.SessionRunning, done, p1Running, stored("q1", session.TurnQueued), stored("q2", session.TurnQueued)),
			agrees},
		{"reloaded with a queued turn the actor had ended", idle,
			reloaded(session.SessionWaitingForInput, done, stored("q1", session.TurnQueued)),
			agrees},
		{"reloaded with a queued turn whose end was stored", with(idle, func(v *view) { v.Queue = queued("q1") }),
			reloaded(session.SessionWaitingForInput, done, stored("q1", session.TurnCancelled)), agrees},
		{"reloaded with turns being admitted", with(running, func(v *view) { v.Queue = queued("q1"); admitting("q3", "q2")(v) }),
			reloaded(session.SessionRunning, done, p1Running, stored("q1", session.TurnQueued)),
			agrees},
		{"reloaded with a turn being admitted the store holds", with(running, admitting("q1")),
			reloaded(session.SessionRunning, done, p1Running, stored("q1", session.TurnQueued), stored("q2", session.TurnQueued)),
			agrees},
		{"reloaded with nothing stored but a turn being admitted", with(inState(session.SessionCreated), admitting("q1")),
			reloaded(session.SessionCreated), agrees},
		{"reloaded after a close", inState(session.SessionCompleted), reloaded(session.SessionCompleted, done, p1Running),
			accepted(lostOutcome("p1"), effPushRecovery{}).then(nextInput{})},
		{"reloaded after a close, a queued turn's cancel refused", inState(session.SessionCompleted),
			reloaded(session.SessionCompleted, done, stored("q1", session.TurnQueued)),
			acc(endCancelled("q1", "", true), effPushRecovery{}).then(nextInput{})},
		{"reloaded after a close whose state was refused", inState(session.SessionCompleted), reloaded(session.SessionWaitingForInput, done),
			accepted(stateChange(session.SessionWaitingForInput, session.SessionCompleted), effPushRecovery{}).then(nextInput{})},
		{"reloaded after a close whose state was refused, RUNNING stored", inState(session.SessionCompleted), reloaded(session.SessionRunning, done),
			accepted(stateChange(session.SessionRunning, session.SessionCompleted), effPushRecovery{}).then(nextInput{})},
		{"reloaded after a close, a permission's cancel refused", inState(session.SessionCompleted),
			pending(reloaded(session.SessionCompleted, done), storedPermission{ID: "perm1"}),
			accepted(resolved("perm1", session.PermissionCancelled, ""), effPushRecovery{}).then(nextInput{})},
		{"reloaded after the executor's status was refused", idle, reloadedInput{State: session.SessionWaitingForInput, Turns: []storedTurn{done}, ExecutorLacks: true},
			accepted(effRecord{Event: &session.ExecutorStatusData{}}).then(nextInput{})},
		{"reloaded after a turn's end and the executor's status were refused", idle,
			reloadedInput{State: session.SessionRunning, Turns: []storedTurn{done, p1Running}, ExecutorLacks: true},
			accepted(effRecord{Event: &session.ExecutorStatusData{}}, lostOutcome("p1"), stateChange(session.SessionRunning, session.SessionWaitingForInput), effPushRecovery{}).then(nextInput{})},
		{"reloaded with a permission the agent waits on", running,
			pending(reloaded(session.SessionRunning, done, p1Running), storedPermission{ID: "perm1", Live: true}), agrees},
		{"reloaded after a permission's expiry was lost", idle,
			pending(reloaded(session.SessionWaitingForInput, done), storedPermission{ID: "perm1"}),
			accepted(resolved("perm1", expired.State, ""), effPushRecovery{}).then(nextInput{})},
		{"reloaded after a permission's answer was lost", running,
			pending(reloaded(session.SessionRunning, done, p1Running), storedPermission{ID: "perm1", End: allowed}, storedPermission{ID: "perm2", Live: true}),
			accepted(resolved("perm1", allowed.State, allowed.OptionID), effPushRecovery{}).then(nextInput{})},
		{"reloaded after a turn's end and its permissions' were lost", idle,
			pending(reloaded(session.SessionRunning, done, p1Running), storedPermission{ID: "perm1", End: &permissionEnd{State: session.PermissionCancelled}}),
			accepted(lostOutcome("p1"), resolved("perm1", session.PermissionCancelled, ""),
				stateChange(session.SessionRunning, session.SessionWaitingForInput), effPushRecovery{}).then(nextInput{})},
	}...)
	runDecideCases(t, cases)
}

// TestStoredQueue: the queue a reload believes, for what the store holds
// queued and what is live.
func TestStoredQueue(t *testing.T) {
	stored := func(id string, s session.TurnState) storedTurn { return storedTurn{PromptID: id, State: s} }
	done, p1Running := stored("p0", session.TurnCompleted), stored("p1", session.TurnRunning)
	q1, q2 := stored("q1", session.TurnQueued), stored("q2", session.TurnQueued)
	for _, c := range []struct {
		name      string
		closed    bool
		running   string
		turns     []storedTurn
		admitting []string
		want      []string
	}{
		{"nothing queued", false, "", []storedTurn{done}, nil, nil},
		{"turns queued, the state lost", false, "", []storedTurn{done, q1}, nil, []string{"q1"}},
		{"turns queued mid-turn", false, "p1", []storedTurn{done, p1Running, q1, q2}, nil, []string{"q1", "q2"}},
		{"the running turn stored queued", false, "p1", []storedTurn{done, stored("p1", session.TurnQueued)}, nil, nil},
		{"turns being admitted", false, "p1", []storedTurn{done, p1Running, q1}, []string{"q3", "q2"}, []string{"q1", "q3", "q2"}},
		{"a turn being admitted the store holds", false, "p1", []storedTurn{done, p1Running, q1, q2}, []string{"q1"}, []string{"q1", "q2"}},
		{"nothing stored but a turn being admitted", false, "", nil, []string{"q1"}, []string{"q1"}},
		{"after a close: the queued turns' ends are repairs", true, "", []storedTurn{done, q1}, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := storedQueue(c.closed, c.running, c.turns, c.admitting); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got queue %v, want %v", got, c.want)
			}
		})
	}
}

func TestDecideEnsureAgent(t *testing.T) {
	in := ensureAgentInput{}
	first := accepted(effStartAgent{Reserve: true})
	cases := perState("ensure agent", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         first,
		session.SessionStarting:        accepted(),
		session.SessionRunning:         accepted(),
		session.SessionWaitingForInput: accepted(),
	}, func(session.SessionState) decision { return accepted() }))
	// stopped: its agent stopped idle (or exited) after turn p0, and the
	// executor kept the ACP session to restore.
	stopped := with(inState(session.SessionWaitingForInput), func(v *view) {
		v.Agent, v.HasSlot, v.Connected, v.StoredSession, v.HasTurns = agentNone, false, false, true, true
	})
	cases = append(cases, []decideCase{
		{"ensure agent after an idle stop", stopped, in,
			accepted(effStartAgent{Restore: true, HadHistory: true, Reserve: true})},
		{"ensure agent with its slot reserved", with(stopped, func(v *view) { v.HasSlot = true }), in,
			accepted(effStartAgent{Restore: true, HadHistory: true})},
		{"ensure agent with history but no stored session", with(stopped, func(v *view) { v.StoredSession = false }), in,
			accepted(effStartAgent{HadHistory: true, Reserve: true})},
		{"ensure agent with a stored session but no turns", with(stopped, func(v *view) { v.HasTurns = false }), in,
			accepted(effStartAgent{Restore: true, Reserve: true})},
		{"ensure agent while its connection opens the session", with(stopped, func(v *view) { v.Connected = true }), in, accepted()},
		{"ensure agent while stopping", with(stopped, func(v *view) { v.Stopping = true }), in, accepted()},
		{"ensure agent of a closed session", with(stopped, func(v *view) { v.State = session.SessionCompleted }), in, accepted()},
	}...)
	runDecideCases(t, cases)
}

func TestDecideAgentStarted(t *testing.T) {
	ok, stale := agentStartedInput{Current: true}, agentStartedInput{}
	err := errcode.New(errcode.AgentStartFailed, "agent did not start")
	failed := agentStartedInput{Current: true, Err: err, Fingerprint: "fp1"}
	// The executor (zero in these tables) is recorded error, with the
	// fingerprint of the profile the start failed with.
	failedRecord := effRecord{Event: &session.ExecutorStatusData{Status: session.ExecutorError, Error: "agent did not start",
		ErrorCode: "agent_start_failed", ErrorProfile: "fp1"}}
	adopt := accepted(effStartAgent{How: startAdopt})
	discard := accepted(effStopAgent{How: stopDiscard},
		effWaiters{Notify: true, Err: errcode.New(errcode.SessionTerminal, "session closed while its agent was starting")})
	startFailedIn := func(s session.SessionState) decision {
		effs := append([]effect{failedRecord}, toWaiting(s)...)
		return accepted(append(effs, effPushRecovery{}, effWaiters{Notify: true, Err: err})...)
	}
	startFailed := startFailedIn(session.SessionStarting)
	discardClosed := func(session.SessionState) decision { return discard }
	// A start reports in STARTING; the other states are reached while it
	// ran (a close, a restart's repair, a turn of the previous agent).
	cases := perState("agent started", ok, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated: adopt, session.SessionStarting: adopt, session.SessionRunning: adopt, session.SessionWaitingForInput: adopt,
	}, discardClosed))
	cases = append(cases, perState("agent start failed", failed, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated: startFailedIn(session.SessionCreated), session.SessionStarting: startFailed,
		session.SessionRunning: startFailedIn(session.SessionRunning), session.SessionWaitingForInput: startFailedIn(session.SessionWaitingForInput),
	}, discardClosed))...)
	starting := with(inState(session.SessionStarting), func(v *view) { v.Agent = agentStarting })
	cases = append(cases, []decideCase{
		{"agent started for a start since replaced", starting, stale, discard},
		{"agent start failed for a start since replaced", starting, agentStartedInput{Err: err}, discard},
		{"agent started while stopping", with(starting, func(v *view) { v.Stopping = true }), ok, discard},
		{"agent start failed with prompts queued", with(starting, func(v *view) { v.Queue = queued("q1") }), failed,
			acc(failedRecord,
				endFailed("q1", "agent_start_failed", "agent did not start"),
				stateChange(session.SessionStarting, session.SessionWaitingForInput), effPushRecovery{}, effWaiters{Notify: true, Err: err})},
		{"agent start failed with a held queue", with(starting, func(v *view) { v.Queue, v.QueueHeld = queued("q1"), true }), failed, startFailed},
	}...)
	runDecideCases(t, cases)
}

func TestDecideStartFailed(t *testing.T) {
	err := errcode.New(errcode.AgentStartFailed, "agent did not start")
	in := startFailedInput{Err: err}
	failedRecord := effRecord{Event: &session.ExecutorStatusData{Status: session.ExecutorError, Error: "agent did not start", ErrorCode: "agent_start_failed"}}
	tailIn := func(s session.SessionState) []effect {
		return append(toWaiting(s), effPushRecovery{}, effWaiters{Notify: true, Err: err})
	}
	tail := tailIn(session.SessionStarting)
	failQ1 := endFailed("q1", "agent_start_failed", "agent did not start")
	// A start fails in CREATED (the first prompt started it) and STARTING
	// (a resume or a restart after an exit).
	starting := with(inState(session.SessionStarting), func(v *view) { v.Agent = agentStarting })
	cases := []decideCase{
		{"start failed/CREATED", with(inState(session.SessionCreated), func(v *view) { v.Queue = queued("q1") }), in,
			acc(failedRecord, failQ1, tailIn(session.SessionCreated))},
		{"start failed/STARTING", starting, in, accepted(append([]effect{failedRecord}, tail...)...)},
		{"start failed with a held queue", with(starting, func(v *view) { v.Queue, v.QueueHeld = queued("q1"), true }), in,
			accepted(append([]effect{failedRecord}, tail...)...)},
		// The same failure again is on the executor already: not recorded
		// twice.
		{"start failed again the same way", with(starting, func(v *view) {
			v.Executor = session.Executor{Status: session.ExecutorError, ErrorMessage: "agent did not start", ErrorCode: "agent_start_failed"}
		}), in, accepted(tail...)},
		{"start failed with a plain error", with(starting, func(v *view) { v.Queue = queued("q1") }), startFailedInput{Err: errors.New("exec: no such file")},
			acc(effRecord{Event: &session.ExecutorStatusData{Status: session.ExecutorError, Error: "exec: no such file", ErrorCode: "internal_error"}},
				endFailed("q1", "internal_error", "exec: no such file"),
				stateChange(session.SessionStarting, session.SessionWaitingForInput), effPushRecovery{}, effWaiters{Notify: true, Err: errors.New("exec: no such file")})},
	}
	runDecideCases(t, cases)
}

func TestDecideStartSucceeded(t *testing.T) {
	starting := inState(session.SessionStarting)
	run := []effect{effWaiters{Notify: true}, effPushRecovery{}, effTimer{Timer: timerIdle}}
	load := resumedInfo{Strategy: session.StrategyNativeLoad, ContextRestored: true}
	resume := resumedInfo{Strategy: session.StrategyNativeResume, ContextRestored: true}
	fresh := resumedInfo{Strategy: session.StrategyFresh, Fallback: "unsupported"}
	runDecideCases(t, []decideCase{
		{"started first", starting, startSucceededInput{}, accepted(run...).then(nextInput{})},
		{"started by a native resume", starting, startSucceededInput{Resumed: resume, HadHistory: true},
			accepted(append([]effect{resumedAs(resume)}, run...)...).then(nextInput{})},
		{"started by a load that replayed", starting, startSucceededInput{Resumed: load, HadHistory: true, Replayed: 4},
			accepted(append([]effect{resumedAs(load)}, run...)...).then(nextInput{})},
		{"started by a load that replayed nothing yet", starting, startSucceededInput{Resumed: load, HadHistory: true},
			accepted(effTimer{Timer: timerSettle, Settle: replaySettledInput{Resumed: load}})},
		{"started by a load that replayed nothing yet, history injectable", starting,
			startSucceededInput{Resumed: load, HadHistory: true, Gen: 3, Inject: true},
			accepted(effTimer{Timer: timerSettle, Settle: replaySettledInput{Resumed: load, Gen: 3, Inject: true}})},
		{"started by a load of a session without history", starting, startSucceededInput{Resumed: load},
			accepted(append([]effect{resumedAs(load)}, run...)...).then(nextInput{})},
		{"started fresh after a fallback", starting, startSucceededInput{Resumed: fresh, HadHistory: true},
			accepted(append([]effect{resumedAs(fresh)}, run...)...).then(nextInput{})},
	})
}

func TestDecideReplaySettled(t *testing.T) {
	settling := with(inState(session.SessionStarting), func(v *view) { v.Settling = true })
	run := []effect{effWaiters{Notify: true}, effPushRecovery{}, effTimer{Timer: timerIdle}}
	load := resumedInfo{Strategy: session.StrategyNativeLoad, ContextRestored: true}
	lost := resumedInfo{Strategy: session.StrategyFresh, Fallback: "empty_replay"}
	injected := resumedInfo{Strategy: session.StrategyHistoryInjection, Fallback: "empty_replay"}
	runDecideCases(t, []decideCase{
		{"replay settled late", settling, replaySettledInput{Resumed: load, Current: true, Replayed: 3},
			accepted(append([]effect{resumedAs(load)}, run...)...).then(nextInput{})},
		{"replay settled empty", settling, replaySettledInput{Resumed: load, Current: true},
			accepted(append([]effect{resumedAs(lost)}, run...)...).then(nextInput{})},
		{"replay settled empty with history injection", settling, replaySettledInput{Resumed: load, Current: true, Inject: true},
			accepted(append([]effect{resumedAs(injected)}, run...)...).then(nextInput{})},
		{"replay settled for a previous agent", settling, replaySettledInput{Resumed: load}, accepted()},
		{"replay settled after the settle ended", inState(session.SessionStarting), replaySettledInput{Resumed: load, Current: true}, accepted()},
	})
}

// TestDecideRestore: how a start opens the agent's ACP session, for every
// combination of capabilities and every answer to each call.
func TestDecideRestore(t *testing.T) {
	did := func(c restoreCall, o tryOutcome) restoreTry { return restoreTry{Call: c, Outcome: o} }
	next := func(c restoreCall) restoreStep { return restoreStep{Call: c} }
	done := func(strategy string, restored bool, fallback string) restoreStep {
		return restoreStep{Resumed: resumedInfo{Strategy: strategy, ContextRestored: restored, Fallback: fallback}}
	}
	failed := func(fallback string) restoreStep {
		return restoreStep{Failed: true, Resumed: resumedInfo{Fallback: fallback}}
	}
	first := restoreInput{}
	both := restoreInput{Restore: true, Resume: true, Load: true, HadHistory: true}
	loadOnly := restoreInput{Restore: true, Load: true, HadHistory: true}
	resumeOnly := restoreInput{Restore: true, Resume: true, HadHistory: true}
	neither := restoreInput{Restore: true, HadHistory: true}
	fork := restoreInput{ForkSource: true, Fork: true, HadHistory: true, Inject: true}
	forkless := restoreInput{ForkSource: true, HadHistory: true, Inject: true}
	after := func(in restoreInput, tried ...restoreTry) restoreInput { in.Tried = tried; return in }
	type restoreCase struct {
		name string
		in   restoreInput
		want restoreStep
	}
	cases := []restoreCase{
		{"first start", first, next(callNew)},
		{"first start opened", after(first, did(callNew, tryOK)), done("", false, "")},
		{"first start failed", after(first, did(callNew, tryFailed)), failed("")},
		{"history without a stored session", restoreInput{HadHistory: true}, next(callNew)},
		{"history without a stored session, opened", after(restoreInput{HadHistory: true}, did(callNew, tryOK)), done(session.StrategyFresh, false, "")},
		{"history without a stored session, injected", after(restoreInput{HadHistory: true, Inject: true}, did(callNew, tryOK)),
			done(session.StrategyHistoryInjection, false, "")},

		{"resume and load advertised", both, next(callResume)},
		{"resumed", after(both, did(callResume, tryOK)), done(session.StrategyNativeResume, true, "")},
		{"resume unsupported: load", after(both, did(callResume, tryUnsupported)), next(callLoad)},
		{"resume unsupported, loaded", after(both, did(callResume, tryUnsupported), did(callLoad, tryOK)), done(session.StrategyNativeLoad, true, "")},
		{"resume unsupported, load unsupported: new", after(both, did(callResume, tryUnsupported), did(callLoad, tryUnsupported)), next(callNew)},
		{"resume unsupported, load unsupported, new opened",
			after(both, did(callResume, tryUnsupported), did(callLoad, tryUnsupported), did(callNew, tryOK)), done(session.StrategyFresh, false, "unsupported")},
		{"resume unsupported, load of an unknown session: new", after(both, did(callResume, tryUnsupported), did(callLoad, tryUnknownSession)), next(callNew)},
		{"resume unsupported, load of an unknown session, new opened",
			after(both, did(callResume, tryUnsupported), did(callLoad, tryUnknownSession), did(callNew, tryOK)), done(session.StrategyFresh, false, "unknown_session")},
		{"resume unsupported, load failed", after(both, did(callResume, tryUnsupported), did(callLoad, tryFailed)), failed("unsupported")},
		{"resume of an unknown session: new, not load", after(both, did(callResume, tryUnknownSession)), next(callNew)},
		{"resume of an unknown session, new opened", after(both, did(callResume, tryUnknownSession), did(callNew, tryOK)),
			done(session.StrategyFresh, false, "unknown_session")},
		{"resume of an unknown session, new failed", after(both, did(callResume, tryUnknownSession), did(callNew, tryFailed)), failed("")},
		{"resume failed: the identity is kept", after(both, did(callResume, tryFailed)), failed("")},

		{"load advertised", loadOnly, next(callLoad)},
		{"loaded", after(loadOnly, did(callLoad, tryOK)), done(session.StrategyNativeLoad, true, "")},
		{"load unsupported: new", after(loadOnly, did(callLoad, tryUnsupported)), next(callNew)},
		{"load of an unknown session: new", after(loadOnly, did(callLoad, tryUnknownSession)), next(callNew)},
		{"load failed: the identity is kept", after(loadOnly, did(callLoad, tryFailed)), failed("")},

		{"resume advertised", resumeOnly, next(callResume)},
		{"resume unsupported without load: new", after(resumeOnly, did(callResume, tryUnsupported)), next(callNew)},
		{"resume unsupported without load, new opened", after(resumeOnly, did(callResume, tryUnsupported), did(callNew, tryOK)),
			done(session.StrategyFresh, false, "unsupported")},

		{"neither advertised: new", neither, next(callNew)},
		{"neither advertised, new opened", after(neither, did(callNew, tryOK)), done(session.StrategyFresh, false, "unsupported")},
		{"neither advertised, new opened with injection", after(restoreInput{Restore: true, HadHistory: true, Inject: true}, did(callNew, tryOK)),
			done(session.StrategyHistoryInjection, false, "unsupported")},
		{"neither advertised, no history, new opened", after(restoreInput{Restore: true}, did(callNew, tryOK)), done("", false, "unsupported")},
		{"neither advertised, new failed", after(neither, did(callNew, tryFailed)), failed("")},
		{"new answered unsupported: nothing left", after(neither, did(callNew, tryUnsupported)), failed("")},

		{"fork advertised", fork, next(callFork)},
		{"forked", after(fork, did(callFork, tryOK)), done(session.StrategyNativeFork, true, "")},
		{"fork not advertised: new", forkless, next(callNew)},
		{"fork not advertised, new opened with injection", after(forkless, did(callNew, tryOK)),
			done(session.StrategyHistoryInjection, false, "unsupported")},
		{"no fork source: new", restoreInput{Fork: true, HadHistory: true, Inject: true}, next(callNew)},
		{"no fork source, new opened with injection", after(restoreInput{Fork: true, HadHistory: true, Inject: true}, did(callNew, tryOK)),
			done(session.StrategyHistoryInjection, false, "")},
		{"fork unsupported: new", after(fork, did(callFork, tryUnsupported)), next(callNew)},
		{"fork of an unknown session: new", after(fork, did(callFork, tryUnknownSession)), next(callNew)},
		{"fork of an unknown session, new opened", after(fork, did(callFork, tryUnknownSession), did(callNew, tryOK)),
			done(session.StrategyHistoryInjection, false, "unknown_session")},
		{"fork made while the origin went on: new", after(fork, did(callFork, tryStale)), next(callNew)},
		{"fork made while the origin went on, new opened", after(fork, did(callFork, tryStale), did(callNew, tryOK)),
			done(session.StrategyHistoryInjection, false, "origin_moved_on")},
		{"fork failed: new, not the start's failure", after(fork, did(callFork, tryFailed)), next(callNew)},
		{"fork failed, new opened", after(fork, did(callFork, tryFailed), did(callNew, tryOK)),
			done(session.StrategyHistoryInjection, false, "fork_failed")},
		{"fork failed, new failed", after(fork, did(callFork, tryFailed), did(callNew, tryFailed)), failed("")},
		{"a stored session of its own goes first", restoreInput{Restore: true, ForkSource: true, Resume: true, Fork: true, HadHistory: true}, next(callResume)},
	}
	runNamed(t, cases, func(c restoreCase) string { return c.name }, func(t *testing.T, c restoreCase) {
		if got := decideRestore(c.in); !reflect.DeepEqual(got, c.want) {
			t.Fatalf("got %+v, want %+v", got, c.want)
		}
	})
}

// TestDecideShutdown: a daemon stop stops the agent and records nothing of
// the session's turns or permissions, whatever it was doing.
func TestDecideShutdown(t *testing.T) {
	in := shutdownCmd{}
	stop := accepted(effStopAgent{How: stopShutdown, Why: restartedWhy})
	mark := accepted(effStopAgent{How: stopShutdown})
	cases := perState("shutdown", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         mark,
		session.SessionStarting:        mark,
		session.SessionRunning:         stop,
		session.SessionWaitingForInput: stop,
	}, func(session.SessionState) decision { return mark }))
	running := inState(session.SessionRunning)
	cases = append(cases, []decideCase{
		{"shutdown mid-turn with prompts queued and a permission open", with(running, func(v *view) {
			v.Queue, v.OpenPermissions, v.MaxPermissions = queued("q1", "q2"), 1, 4
		}), in, stop},
		{"shutdown mid-turn after a cancel", with(running, func(v *view) { v.Running.CancelRequested = true }), in, stop},
		{"shutdown mid-turn of a hosted agent", with(running, func(v *view) { v.Hosted = true }), in, mark},
		{"shutdown of a hosted agent at rest", with(inState(session.SessionWaitingForInput), func(v *view) { v.Hosted = true }), in, mark},
		{"shutdown with prompts held since a restart", with(inState(session.SessionWaitingForInput), func(v *view) {
			v.Queue, v.QueueHeld = queued("q1"), true
		}), in, stop},
		{"shutdown during a close", with(running, func(v *view) { v.Stopping = true }), in, stop},
		{"shutdown while a load waits for its replay", with(inState(session.SessionStarting), func(v *view) {
			v.Agent, v.Connected, v.Settling = agentReady, true, true
		}), in, stop},
		{"shutdown after an idle stop", with(inState(session.SessionWaitingForInput), func(v *view) {
			v.Agent, v.HasSlot, v.Connected = agentNone, false, false
		}), in, mark},
	}...)
	runDecideCases(t, cases)
}
