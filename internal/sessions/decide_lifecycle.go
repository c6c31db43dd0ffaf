package sessions

import (
	"slices"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// The decision table, continued: a session's life around its agent and its
// store. An agent's start (ensureAgentInput; decideRestore, which the start
// itself follows off the actor, on the capabilities the agent announced;
// agentStartedInput and what follows it), a failed write and the reload
// after it, a daemon's shutdown, and a session taken up from the store
// with nothing live (restartedInput): at start-up, and whenever an actor
// loads a session.

// decideEnsureAgent starts an agent if none runs or starts and the session
// still takes work, reserving its slot first if it has none (admission
// reserves it before it stores anything, so failing here is for paths that
// could not ask: the start then fails visibly rather than waits). A stored
// ACP session is restored; decideRestore chooses how, once the agent has
// said what it can.
func decideEnsureAgent(v view) decision {
	if v.Connected || v.Agent != agentNone || v.closed() {
		return accept()
	}
	return accept(effStartAgent{How: startNew, Restore: v.StoredSession, HadHistory: v.HasTurns, Reserve: !v.HasSlot})
}

// decideRestore is the next ACP call of a start, from the agent's
// capabilities and the calls made so far: a stored session is resumed when
// the agent advertises session/resume, else loaded when it advertises
// session/load, else a new session is opened. It falls back (resume to
// load, either to new) only when the agent says "unsupported" or "unknown
// session" (an unknown session is not loaded: load would not know it
// either); any other failure fails the start and keeps the stored
// identity, so the session stays resumable. A fork's first start
// (ForkSource: its origin's ACP session holds exactly the fork's
// transcript) copies that session with session/fork when the agent
// advertises it (native_fork); any failure of the copy falls back to a
// new session. A new session restores no context: it is reported fresh
// (or history_injection, when the profile can inject the history) if the
// session had any, with why the stored one could not be restored or
// copied. It is pure, like decide, but runs off the actor, in the start
// (Manager.start), on what the start knows.
func decideRestore(in restoreInput) restoreStep {
	if len(in.Tried) == 0 {
		switch {
		case !in.Restore && in.ForkSource && in.Fork:
			return restoreStep{Call: callFork}
		case !in.Restore:
			return restoreStep{Call: callNew}
		case in.Resume:
			return restoreStep{Call: callResume}
		case in.Load:
			return restoreStep{Call: callLoad}
		}
		return restoreStep{Call: callNew}
	}
	fallback := ""
	for _, t := range in.Tried {
		switch t.Outcome {
		case tryUnsupported:
			fallback = "unsupported"
		case tryUnknownSession:
			fallback = "unknown_session"
		case tryStale:
			fallback = "origin_moved_on"
		case tryFailed:
			if t.Call == callFork { // the only failure fallen back from
				fallback = "fork_failed"
			}
		}
	}
	last := in.Tried[len(in.Tried)-1]
	switch last.Outcome {
	case tryOK:
		switch last.Call {
		case callResume:
			return restoreStep{Resumed: resumedInfo{Strategy: session.StrategyNativeResume, ContextRestored: true}}
		case callLoad:
			return restoreStep{Resumed: resumedInfo{Strategy: session.StrategyNativeLoad, ContextRestored: true}}
		case callFork:
			return restoreStep{Resumed: resumedInfo{Strategy: session.StrategyNativeFork, ContextRestored: true}}
		}
		r := resumedInfo{Fallback: fallback}
		if (in.Restore || in.ForkSource) && r.Fallback == "" {
			r.Fallback = "unsupported" // the agent advertises neither resume nor load, or no fork
		}
		if in.HadHistory {
			r.Strategy = session.StrategyFresh
			if in.Inject {
				r.Strategy = session.StrategyHistoryInjection
			}
		}
		return restoreStep{Resumed: r}
	case tryFailed:
		if last.Call == callFork {
			return restoreStep{Call: callNew}
		}
		if last.Call == callNew {
			return restoreStep{Failed: true}
		}
		return restoreStep{Failed: true, Resumed: resumedInfo{Fallback: fallback}}
	}
	if last.Call == callNew {
		return restoreStep{Failed: true} // nothing left to fall back to
	}
	if last.Call == callResume && last.Outcome == tryUnsupported && in.Load {
		return restoreStep{Call: callLoad}
	}
	return restoreStep{Call: callNew}
}

// decideAgentStarted takes a start's report: a start the session no
// longer wants (a newer one began, or the session is closing) is undone;
// a failed one leaves the session usable and resumable
// (decideStartFailed); an agent that started becomes the session's.
func decideAgentStarted(v view, in agentStartedInput) decision {
	if !in.Current || v.closed() {
		return accept(effStopAgent{How: stopDiscard},
			effWaiters{Notify: true, Err: errcode.New(errcode.SessionTerminal, "session closed while its agent was starting")})
	}
	if in.Err != nil {
		return decideStartFailed(v, startFailedInput{Err: in.Err, Fingerprint: in.Fingerprint})
	}
	return accept(effStartAgent{How: startAdopt})
}

// decideStartFailed leaves the session usable and resumable: the error is
// visible on the executor, queued turns fail visibly.
func decideStartFailed(v view, in startFailedInput) decision {
	d := accept()
	ex, msg, code := v.Executor, errcode.MessageOf(in.Err), string(errcode.CodeOf(in.Err))
	if ex.Status != session.ExecutorError || ex.ErrorMessage != msg || ex.ErrorCode != code {
		// The same failure again is recorded and announced already.
		ex.Status, ex.ErrorMessage, ex.ErrorCode, ex.ErrorProfile = session.ExecutorError, msg, code, in.Fingerprint
		d.Effects = append(d.Effects, record("", session.ExecutorStatusOf(ex)))
	}
	if !v.QueueHeld {
		// Prompts held since a restart stay queued: they were not what
		// started the agent, and the user decides when they run.
		code, msg := string(errcode.CodeOf(in.Err)), errcode.MessageOf(in.Err)
		for _, q := range v.Queue {
			d.Effects = append(d.Effects, endTurn(q.PromptID, failed(code, msg))...)
		}
	}
	d.Effects = append(d.Effects, moveTo(v.State, session.SessionWaitingForInput)...)
	d.Effects = append(d.Effects, effPushRecovery{}, effWaiters{Notify: true, Err: in.Err})
	return d
}

// decideStartSucceeded finishes a start, unless a load replayed nothing
// yet: some agents replay after answering the load, so prompts wait a
// moment before the context is taken as lost (a replay is then never
// taken for a reply).
func decideStartSucceeded(in startSucceededInput) decision {
	if in.Resumed.Strategy == session.StrategyNativeLoad && in.Replayed == 0 && in.HadHistory {
		return accept(effTimer{Timer: timerSettle, Settle: replaySettledInput{Resumed: in.Resumed, Gen: in.Gen, Inject: in.Inject}})
	}
	return started(in.Resumed)
}

// decideReplaySettled decides, after the grace period, whether a load
// restored the conversation: no replay at all means the agent silently
// created an empty session, so its context is lost.
func decideReplaySettled(v view, in replaySettledInput) decision {
	if !in.Current || !v.Settling {
		return accept()
	}
	r := in.Resumed
	if in.Replayed == 0 {
		r = resumedInfo{Strategy: session.StrategyFresh, Fallback: "empty_replay"}
		if in.Inject {
			r.Strategy = session.StrategyHistoryInjection
		}
	}
	return started(r) // session.resumed ends the settle
}

// started announces the restore outcome, releases resume waiters and runs
// what was queued.
func started(r resumedInfo) decision {
	var effs []effect
	if r.Strategy != "" {
		effs = append(effs, record("", &session.SessionResumedData{Strategy: r.Strategy, ContextRestored: r.ContextRestored, FallbackReason: r.Fallback}))
	}
	return accept(append(effs, effWaiters{Notify: true}, effPushRecovery{}, effTimer{Timer: timerIdle})...).then(nextInput{})
}

// decideWriteFailed: a failed write is never silent (the actor logs it as
// it takes it: failed, writefail.go), and the actor then believes the
// store again, once its writes in flight have reported (a
// reload must not read the store while its own changes are still on their
// way to it). One reload serves every failure before it. The reload
// repairs what the store lacks, with writes of its own; should one of
// those fail too (the store still refuses), the next reload waits a
// backoff first, doubled at each failure up to reloadBackoffMax, so that
// a store that refuses for a while is asked again and again, never in a
// loop as fast as it refuses. The backoff is reset once a reload's writes
// are all stored (writefail.go).
func decideWriteFailed(v view, in writeFailedInput) decision {
	if in.ShuttingDown || v.Reloading {
		// The writer closed: the next start reconciles from the store. Or
		// a reload is pending already, and serves this failure too.
		return accept()
	}
	return accept(effTimer{Timer: timerReload, After: v.Backoff})
}

// The backoff of a reload after a failed write that follows a reload
// (decideWriteFailed): the first waits reloadBackoffMin, each next one
// twice as long, up to reloadBackoffMax.
const (
	reloadBackoffMin = 50 * time.Millisecond
	reloadBackoffMax = 5 * time.Second
)

// nextBackoff is the backoff that follows d.
func nextBackoff(d time.Duration) time.Duration {
	if d <= 0 {
		return reloadBackoffMin
	}
	return min(2*d, reloadBackoffMax)
}

// decideReloaded decides what the actor records after a reload to make
// the store agree with what is live: the log is the truth (the actor
// believes what the reload read, as storedQueue orders it: believe,
// writefail.go), and a fact the live session lived through that the log
// lacks is recorded as a new event (storeLacks says which). An executor
// record the store lacks is recorded again, from the actor's own, and a
// session the actor closed that the store shows open is closed again.
// Every reload tries every repair again: one the store refuses fails the
// write, and the next reload, after its backoff (decideWriteFailed),
// tries it again.
func decideReloaded(v view, in reloadedInput) decision {
	running := ""
	if v.Running != nil {
		running = v.Running.PromptID
	}
	closed := v.State.Terminal() || in.State.Terminal()
	repairs := storeLacks(closed, in.State, running, in.Turns, in.Pending)
	if v.State.Terminal() && !in.State.Terminal() {
		// After the reload the actor holds the store's state, which the
		// close moves on again.
		repairs = append(repairs, record("", &session.SessionStateChangedData{State: v.State, PreviousState: in.State}))
	}
	var effs []effect
	if in.ExecutorLacks {
		effs = append(effs, record("", session.ExecutorStatusOf(v.Executor)))
	}
	effs = append(effs, repairs...)
	if len(repairs) > 0 {
		effs = append(effs, effPushRecovery{})
	}
	return accept(effs...).then(nextInput{})
}

// storedQueue is the queue a reload believes: the turns the store holds
// queued (turns, in run order; but the one running live, and none once
// the session is closed: their ends are repairs then), then those still
// being admitted (admitting, in the order they were admitted) that the
// store does not hold yet.
func storedQueue(closed bool, running string, turns []storedTurn, admitting []string) []string {
	var queue []string
	for _, t := range turns {
		if t.State == session.TurnQueued && t.PromptID != running && !closed {
			queue = append(queue, t.PromptID)
		}
	}
	for _, id := range admitting {
		if !slices.Contains(queue, id) {
			queue = append(queue, id)
		}
	}
	return queue
}

// storeLacks is what the log lacks of a session against what is live, as
// a reload and a load record it: closed says the session was closed (by
// the actor, or as the log says), state is the session's state in the
// store, running the live run's turn ("" for none), turns every turn the
// store holds and pending the permission requests it holds pending. A
// turn the store shows running without a live run lost its outcome: it
// fails with store_write_failed, so clients see it end. A queued turn
// stays queued, unless the session was
// closed: the close cancelled it (storedQueue orders the queue). A permission request no agent waits on
// any more is closed as the actor closed it, else expired (cancelled, in
// a closed session: its close cancelled it). A session the store shows
// RUNNING with no turn running waits for input again.
func storeLacks(closed bool, state session.SessionState, running string, turns []storedTurn, pending []storedPermission) (repairs []effect) {
	for _, t := range turns {
		switch {
		case t.PromptID == running:
		case t.State == session.TurnQueued && closed:
			repairs = append(repairs, endTurn(t.PromptID, cancelled("", true))...)
		case t.State == session.TurnRunning:
			repairs = append(repairs, record(t.PromptID, failed(string(errcode.StoreWriteFailed), lostOutcomeMessage)))
		}
	}
	for _, p := range pending {
		if p.Live {
			continue
		}
		end := permissionEnd{State: session.PermissionExpired}
		if closed {
			end.State = session.PermissionCancelled
		}
		if p.End != nil {
			end = *p.End
		}
		repairs = append(repairs, record("", &session.PermissionResolvedData{RequestID: p.ID, State: end.State, OptionID: end.OptionID}))
	}
	if running == "" && state == session.SessionRunning && !closed {
		repairs = append(repairs, moveTo(state, session.SessionWaitingForInput)...)
	}
	return repairs
}

// lostOutcomeMessage is the error of a turn whose outcome the store lost
// (storeLacks): the agent is done with it, and clients waiting for it
// must see it end.
const lostOutcomeMessage = "the turn's outcome could not be stored; see the daemon log"

// restartedWhy is what the executor says of an agent a shutdown stopped.
const restartedWhy = "agent stopped: tetherd restarted"

// decideShutdown: the daemon stops. Only the agent is stopped (off the
// actor), and its executor recorded stopped, so the next start has no
// orphan to look for. A running turn, queued turns and open permission
// requests record nothing: start-up reconciliation records them from the
// store (interrupted by daemon_restart, held, expired), as it does after a
// daemon that died without a shutdown, and from here whatever the dying
// agent answers is not the turn's outcome (Stopping). A hosted agent is
// not stopped at all: it outlives the daemon, which attaches to it again.
func decideShutdown(v view) decision {
	if v.Hosted {
		// The agent lives in its executor host, which outlives the daemon:
		// the next daemon attaches to it again, mid-turn or not.
		return accept(effStopAgent{How: stopShutdown})
	}
	if v.Connected {
		return accept(effStopAgent{How: stopShutdown, Why: restartedWhy})
	}
	return accept(effStopAgent{How: stopShutdown})
}

// decideRestarted takes a session up from the store with nothing of it
// live: what the log leaves open that no agent can still finish is
// recorded as having ended. At start-up (or a takeover of a lost node's
// sessions) it repairs what the previous daemon left: the turn that was
// running is interrupted (daemon_restart); with none running, the first
// queued turn was about to start (its agent never got it), so it is. The
// turns queued behind stay queued, in order, held until the user
// continues or prompts; a queue held since an earlier restart stays
// whole. Pending permissions expire, a live executor is stopped (its
// orphaned process too), the session waits for input, and every client
// is told where it now stands. A session at rest is only announced when
// its agent went away with the old config (clients must learn it cannot
// be continued here). A hosted session loses nothing: its executor is
// reconnecting, and its actor attaches to the agent on the host.
//
// A session closed (in the log) or taken up by a load is repaired as a
// reload with nothing live would (decideTakenUp).
func decideRestarted(v view, in restartedInput) decision {
	if !in.Repair {
		if in.Load || in.AgentAvailable {
			return accept()
		}
		return accept(effPushRecovery{Always: true})
	}
	if in.Hosted && !v.State.Terminal() {
		return decideHostedTakenUp(v, in)
	}
	if in.Load || v.State.Terminal() {
		return decideTakenUp(v, in)
	}
	var effs []effect
	live := in.Executor == session.ExecutorReady || in.Executor == session.ExecutorStarting
	interrupted := v.QueueHeld || slices.ContainsFunc(in.Turns, func(t storedTurn) bool { return t.State == session.TurnRunning })
	held := v.QueueHeld
	for _, t := range in.Turns {
		switch {
		case t.State != session.TurnQueued:
		case !interrupted:
			interrupted = true
		default:
			if !held {
				held = true
				effs = append(effs, holdQueue(true))
			}
			continue
		}
		effs = append(effs, restartInterruption(t.PromptID, t.State == session.TurnRunning))
	}
	for _, id := range in.Permissions {
		effs = append(effs, record("", &session.PermissionResolvedData{RequestID: id, State: session.PermissionExpired}))
	}
	if live {
		effs = append(effs, stopExecutor(v.Executor, restartedWhy, in.Orphan)...)
	}
	// The state's move moves the task too; a state kept leaves it to the
	// announce.
	effs = append(effs, moveTo(v.State, session.SessionWaitingForInput)...)
	return accept(append(effs, effPushRecovery{Always: true, FollowTask: v.State == session.SessionWaitingForInput})...)
}

// decideHostedTakenUp: the agent of a hosted session went on on its host,
// and nothing was lost: the turn, the queue and the permission requests go
// on there once its actor has attached again (its executor reconnecting
// meanwhile). A start cut short is started again at start-up (the host
// replaces what it had begun), and the queue runs on it; a load only
// records it stopped (the next prompt or resume starts one).
func decideHostedTakenUp(v view, in restartedInput) decision {
	announce := effPushRecovery{Always: !in.Load}
	if in.Executor == session.ExecutorStarting {
		if in.Load {
			return accept(append(stopExecutor(v.Executor, "", false), announce)...)
		}
		return accept(append(stopExecutor(v.Executor, restartedWhy, false), announce)...).then(ensureAgentInput{})
	}
	if in.Load && in.Executor == session.ExecutorReconnecting {
		// Start-up left it reconnecting and announced its plan: the load
		// only attaches (nothing it records would change the plan, and
		// working it out again for every hosted session would hold up the
		// writer while a hundred of them reattach).
		return accept(effStartAgent{How: startAttach})
	}
	return accept(executorIs(v.Executor, session.ExecutorReconnecting), effStartAgent{How: startAttach}, announce)
}

// decideTakenUp repairs a session closed in the log (at start-up or on a
// load) or taken up by a load: no live run and no agent waiting on a
// permission, as a reload would find it (storeLacks): its close, or the
// earlier actor's writes the store refused, left it open. A live
// executor is recorded stopped (an orphaned process of the previous
// daemon stopped too). Start-up announces every session it repaired; a
// load records nothing where nothing is lacking.
func decideTakenUp(v view, in restartedInput) decision {
	closed := v.State.Terminal()
	pending := make([]storedPermission, len(in.Permissions))
	for i, id := range in.Permissions {
		pending[i] = storedPermission{ID: id}
	}
	effs := storeLacks(closed, v.State, "", in.Turns, pending)
	if in.Executor == session.ExecutorReady || in.Executor == session.ExecutorStarting || in.Executor == session.ExecutorReconnecting {
		why := ""
		if !in.Load {
			why = restartedWhy
		}
		effs = append(effs, stopExecutor(v.Executor, why, in.Orphan)...)
	}
	if in.Load && len(effs) == 0 {
		return accept()
	}
	return accept(append(effs, effPushRecovery{Always: !in.Load})...)
}

// reasonRestart is the interruption of a turn tetherd restarted under.
const reasonRestart = "daemon_restart"

// restartInterruption records turn promptID interrupted by the restart
// (turn.interrupted): a turn that was running gets a notice, a queued one
// none.
func restartInterruption(promptID string, running bool) effect {
	p := &session.TurnInterruptedData{State: session.TurnInterrupted, Reason: reasonRestart}
	if running {
		p.Notice = "Turn interrupted: tetherd restarted while it was running."
	}
	return record(promptID, p)
}

// executorIs records executor ex (the view's) in status.
func executorIs(ex session.Executor, status session.ExecutorStatus) effect {
	ex.Status = status
	return record("", session.ExecutorStatusOf(ex))
}

// stopExecutor records executor ex (the view's) stopped, why ("" for no
// message: no agent of the session runs any more); orphan: the agent
// process the previous daemon started is ended first.
func stopExecutor(ex session.Executor, why string, orphan bool) []effect {
	var effs []effect
	if orphan {
		effs = append(effs, effStopAgent{How: stopOrphaned})
	}
	ex.Status, ex.ErrorMessage = session.ExecutorStopped, why
	return append(effs, record("", session.ExecutorStatusOf(ex)))
}
