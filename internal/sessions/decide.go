package sessions

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/recovery"
	"github.com/tether/tether/internal/store"
)

// This file is a session's decision table: for every command a client
// sends and every input an agent produces, what the session does. decide
// is pure (no I/O, no clock, no randomness, no actor): it reads a view of
// the session and returns a decision, which the actor performs (see
// perform in effects.go). The actor is decide's only caller. The values
// it works on (view, inputs, decision, effects) are in decision.go.
//
// Start-up reconciliation decides here too (restartedInput); reconcile.go
// performs its effects in the writer. Not decided here yet: the start itself and the adoption of a started agent (restore.go:
// ensureAgent, onAgentStarted), the transcript updates (transcript.go
// onUpdate), a failed write's reload (writefail.go) and shutdown.

// decide is the session's decision for one command or agent input.
func decide(v view, in input) decision {
	switch in := in.(type) {
	case promptCmd:
		return decidePrompt(v, in)
	case cancelCmd:
		return decideCancel(v)
	case closeCmd:
		return decideClose(v)
	case continueCmd:
		return decideContinue(v, in)
	case withdrawCmd:
		return decideWithdraw(v, in)
	case setModeCmd:
		return decideOption(v, checkMode(v, in.ModeID))
	case setConfigCmd:
		return decideOption(v, checkConfig(v, in.OptionID, in.Value))
	case answerPermissionCmd:
		return decideAnswer(v, in)
	case turnEndedInput:
		return decideTurnEnded(v, in)
	case agentExitedInput:
		return decideAgentExited(v, in)
	case startFailedInput:
		return decideStartFailed(v, in)
	case nextInput:
		return decideNext(v)
	case resumeCmd:
		return decideResume(v)
	case permissionRequestedInput:
		return decidePermissionRequested(v)
	case admittedInput:
		return decideAdmitted(v, in)
	case idleCheckInput:
		return decideIdleCheck(v, in)
	case startSucceededInput:
		return decideStartSucceeded(in)
	case replaySettledInput:
		return decideReplaySettled(v, in)
	case restartedInput:
		return decideRestarted(v, in)
	}
	return refuse(errcode.New(errcode.Internal, "no decision for %T", in))
}

func accept(effs ...effect) decision   { return decision{Effects: effs} }
func refuse(e *errcode.Error) decision { return decision{Refusal: e} }

func terminalErr(v view) *errcode.Error {
	return errcode.New(errcode.SessionTerminal, "session is %s", v.State).With("state", string(v.State))
}

// closed: the session takes no new work.
func (v view) closed() bool { return v.State.Terminal() || v.Stopping }

// needsSlot: admitting work must first reserve an agent slot.
func (v view) needsSlot() bool { return v.Agent == agentNone && !v.HasSlot && !v.closed() }

// activePromptID is the turn a refused prompt is told about.
func (v view) activePromptID() string {
	if v.Running != nil {
		return v.Running.PromptID
	}
	if len(v.Queue) > 0 {
		return v.Queue[0].PromptID
	}
	return ""
}

// admission is the effects that admit a turn: the slot first, if needed.
func (v view) admission(front bool) []effect {
	if v.needsSlot() {
		return []effect{effReserveSlot{}, effEnqueue{Front: front}}
	}
	return []effect{effEnqueue{Front: front}}
}

// decidePrompt: a prompt runs now, waits in the queue, or is refused.
func decidePrompt(v view, c promptCmd) decision {
	if t := v.Turn; t != nil {
		if !t.SamePrompt {
			return refuse(errcode.New(errcode.PromptIDConflict, "promptId %q was already used for a different prompt", c.PromptID))
		}
		// A retry shares the first request's outcome (if that is not
		// durable yet, it never claims a turn that may never exist).
		return accept(effAnswerExisting{PromptID: t.PromptID, Admitting: t.Admitting})
	}
	if v.closed() {
		return refuse(terminalErr(v))
	}
	busy := v.Running != nil || len(v.Queue) > 0
	if busy && c.Multitask == MultitaskReject {
		return refuse(errcode.New(errcode.TurnActive, "a turn is already running").With("promptId", v.activePromptID()))
	}
	if len(v.Queue) >= v.QueueLimit {
		return refuse(errcode.New(errcode.PromptQueueFull, "%d prompts are already queued", len(v.Queue)).With("retryAfter", 5))
	}
	return accept(v.admission(false)...)
}

// decideCancel records the user's intent, asks the agent to stop, answers
// the turn's open permission requests and drops queued prompts.
func decideCancel(v view) decision {
	if v.State.Terminal() {
		// A closed session has nothing to cancel, and its log ends with
		// session.closed: nothing is written for it any more.
		return accept()
	}
	var d decision
	for _, q := range v.Queue {
		d.Effects = append(d.Effects, effEndTurn{PromptID: q.PromptID, State: store.TurnCancelled, CancelRequested: true})
		d.Cancel.Dequeued = append(d.Cancel.Dequeued, q.PromptID)
	}
	if len(v.Queue) > 0 {
		d.Effects = append(d.Effects, effDropQueue{})
	}
	if v.QueueHeld {
		d.Effects = append(d.Effects, effReleaseHeld{}, effPushRecovery{})
	}
	d.Cancel.Cancelled = len(d.Cancel.Dequeued) > 0
	r := v.Running
	if r == nil {
		// Idle: a cancel still records the user's intent for an
		// interrupted last turn, so it is clean and a racing continue
		// cannot revive it.
		if t := v.Last; t != nil && t.State == store.TurnInterrupted && !t.CancelRequested && len(d.Cancel.Dequeued) == 0 {
			d.Effects = append(d.Effects, effMarkCancelRequested{PromptID: t.PromptID}, effPushRecovery{})
			d.Cancel.PromptID, d.Cancel.Cancelled = t.PromptID, true
		}
		return d
	}
	d.Cancel.PromptID, d.Cancel.Cancelled = r.PromptID, true
	if r.CancelRequested {
		return d
	}
	d.Effects = append(d.Effects, effMarkCancelRequested{PromptID: r.PromptID},
		effClosePermissions{PromptID: r.PromptID, State: store.PermissionCancelled}, effCancelAgent{})
	return d
}

// decideClose ends the session; closing a closed session does nothing.
// The agent is stopped by the caller, off the actor.
func decideClose(v view) decision {
	if v.State.Terminal() {
		return accept()
	}
	d := accept(effMarkStopping{})
	for _, q := range v.Queue {
		d.Effects = append(d.Effects, effEndTurn{PromptID: q.PromptID, State: store.TurnCancelled, CancelRequested: true})
	}
	if len(v.Queue) > 0 {
		d.Effects = append(d.Effects, effDropQueue{})
	}
	if r := v.Running; r != nil {
		d.Effects = append(d.Effects, effClearRunning{},
			effEndTurn{PromptID: r.PromptID, State: store.TurnCancelled, CancelRequested: true})
	}
	d.Effects = append(d.Effects, effClosePermissions{State: store.PermissionCancelled},
		effSetState{State: store.SessionCompleted}, effPushRecovery{}, effBumpGen{})
	return d
}

// decideContinue admits a planned continuation if nothing changed since
// it was planned (errStale sends the caller back to planning). It runs
// first; prompts held since a restart follow it.
func decideContinue(v view, c continueCmd) decision {
	if !c.Plan.CanContinue {
		return decision{Refusal: declined(c.Plan)}
	}
	if v.Version != c.Version || v.Running != nil || (len(v.Queue) > 0 && !v.QueueHeld) || v.closed() {
		return refuse(errStale)
	}
	if v.Turn != nil {
		return refuse(errStale) // a concurrent request with this id won; answer from it
	}
	return accept(v.admission(true)...)
}

// decideWithdraw ends a queued turn as withdrawn; others keep their order.
func decideWithdraw(v view, c withdrawCmd) decision {
	t := v.Turn
	if t == nil {
		return refuse(errcode.New(errcode.TurnNotFound, "session has no turn %q", c.PromptID).With("promptId", c.PromptID))
	}
	queued := false
	for _, q := range v.Queue {
		queued = queued || q.PromptID == c.PromptID
	}
	if !queued {
		return refuse(errcode.New(errcode.TurnNotQueued, "turn %q is %s; only a queued turn can be withdrawn", c.PromptID, t.State).
			With("promptId", c.PromptID).With("state", string(t.State)))
	}
	// A turn whose admission is still being written ends after it: writes
	// apply in submission order, so the end always follows the row.
	d := accept(effRemoveQueued{PromptID: c.PromptID},
		effEndTurn{PromptID: c.PromptID, State: store.TurnCancelled, StopReason: recovery.Withdrawn})
	if len(v.Queue) == 1 && v.QueueHeld {
		d.Effects = append(d.Effects, effReleaseHeld{}, effPushRecovery{})
	}
	d.Effects = append(d.Effects, effStartNext{})
	return d
}

// checkMode holds a mode choice to the modes the agent announced; a
// stopped session stores it unchecked when no agent announced any yet.
func checkMode(v view, modeID string) *errcode.Error {
	if s, ok := parseModes(v.Modes); ok && !s.has(modeID) {
		return errcode.New(errcode.UnknownMode, "the agent offers no mode %q", modeID).With("modeId", modeID)
	} else if !ok && v.Agent == agentReady {
		return errcode.New(errcode.UnknownMode, "the agent announced no modes").With("modeId", modeID)
	}
	return nil
}

// checkConfig holds a config choice to the options the agent announced.
func checkConfig(v view, optionID string, value json.RawMessage) *errcode.Error {
	if v.ConfigOptions == nil && v.Agent != agentReady {
		return nil // no agent has announced its options yet
	}
	o, ok := findOption(parseConfig(v.ConfigOptions), optionID)
	if !ok {
		return errcode.New(errcode.UnknownConfigOption, "the agent offers no config option %q", optionID).With("optionId", optionID)
	}
	if !o.accepts(value) {
		return errcode.New(errcode.InvalidConfigValue, "config option %q does not accept %s", optionID, value).With("optionId", optionID)
	}
	return nil
}

// decideOption applies a valid choice now when the agent runs, else
// stores it for the next start.
func decideOption(v view, invalid *errcode.Error) decision {
	if v.closed() {
		return refuse(terminalErr(v))
	}
	if invalid != nil {
		return refuse(invalid)
	}
	if v.Agent == agentReady {
		return accept(effApplyOption{})
	}
	return accept(effStoreOption{})
}

// decideAnswer applies a client's answer to an open permission request. A
// request that is not live is refused permission_already_resolved; the
// actor reads its stored state for the answer (or that it is unknown).
func decideAnswer(v view, c answerPermissionCmd) decision {
	p := v.Permission
	if p == nil {
		return refuse(errcode.New(errcode.PermissionResolved, "permission request %s is not open", c.RequestID))
	}
	state := store.PermissionCancelled
	if !c.Cancelled {
		valid := false
		for _, o := range p.Options {
			valid = valid || o == c.OptionID
		}
		if !valid {
			return refuse(errcode.New(errcode.InvalidPermissionOpt, "optionId %q is not one of the offered options", c.OptionID))
		}
		state = store.PermissionSelected
	}
	return accept(effResolvePermission{RequestID: c.RequestID, State: state, OptionID: c.OptionID})
}

// decideTurnEnded records the agent's answer to a prompt as the turn's
// outcome and runs what is queued next.
func decideTurnEnded(v view, in turnEndedInput) decision {
	if v.Running == nil || v.Running.PromptID != in.PromptID || v.Stopping {
		// After a shutdown began, whatever the dying agent answered is not
		// the turn's outcome: start-up reconciliation records it as
		// interrupted by the restart.
		return accept()
	}
	if in.Disconnected {
		// The agent is gone or going; its exit records the outcome with
		// the exit code. Make sure the process really ends.
		return accept(effStopRunningAgent{})
	}
	end := effEndTurn{PromptID: in.PromptID, State: store.TurnCompleted, StopReason: in.StopReason}
	switch {
	case v.Running.CancelRequested || in.StopReason == "cancelled":
		end.State = store.TurnCancelled // the user's intent wins whatever the agent answered
	case in.Failed:
		end = effEndTurn{PromptID: in.PromptID, State: store.TurnFailed, ErrorCode: in.ErrorCode, ErrorMessage: in.ErrorMessage}
	}
	d := accept(effClearRunning{}, end, effClosePermissions{PromptID: in.PromptID, State: store.PermissionCancelled})
	if v.Agent == agentReady {
		d.Effects = append(d.Effects, effTouchLastSeen{})
	}
	d.Effects = append(d.Effects, effStartNext{}, effArmIdle{})
	return d
}

// decideAgentExited handles the agent process ending, expected or not.
func decideAgentExited(v view, in agentExitedInput) decision {
	d := accept(effClearSettling{})
	if v.Stopping {
		// Close or daemon shutdown stopped it on purpose. Close records the
		// stop itself; after a shutdown, start-up reconciliation marks what
		// was running as interrupted by the restart.
		d.Effects = append(d.Effects, effForgetAgent{}, effDropSlot{})
		return d
	}
	d.Effects = append(d.Effects, effRecordExit{Exit: in.Exit}, effClosePermissions{State: store.PermissionExpired})
	if r := v.Running; r != nil {
		d.Effects = append(d.Effects, effClearRunning{})
		if r.CancelRequested {
			d.Effects = append(d.Effects, effEndTurn{PromptID: r.PromptID, State: store.TurnCancelled})
		} else {
			d.Effects = append(d.Effects, effInterruptTurn{PromptID: r.PromptID, Reason: "agent_exited", Exit: in.Exit})
		}
	}
	if !v.State.Terminal() && len(v.Queue) > 0 && !v.QueueHeld {
		// Queued prompts were accepted; start a fresh agent for them, in
		// the slot the one that exited held.
		return accept(append(d.Effects, effEnsureAgent{})...)
	}
	d.Effects = append(d.Effects, effDropSlot{})
	if v.State.Terminal() {
		return d
	}
	d.Effects = append(d.Effects, effSetState{State: store.SessionWaitingForInput})
	return d
}

// startErrorMessage is what the executor row says of a failed start.
func startErrorMessage(err error) string {
	var de *errcode.Error
	if errors.As(err, &de) {
		return de.Message
	}
	return err.Error()
}

// decideStartFailed leaves the session usable and resumable: the error is
// visible on the executor, queued turns fail visibly.
func decideStartFailed(v view, in startFailedInput) decision {
	d := accept(effRecordStartError{Err: in.Err}, effDropSlot{})
	if !v.QueueHeld {
		// Prompts held since a restart stay queued: they were not what
		// started the agent, and the user decides when they run.
		code, msg := string(errcode.CodeOf(in.Err)), startErrorMessage(in.Err)
		for _, q := range v.Queue {
			d.Effects = append(d.Effects, effEndTurn{PromptID: q.PromptID, State: store.TurnFailed, ErrorCode: code, ErrorMessage: msg})
		}
		if len(v.Queue) > 0 {
			d.Effects = append(d.Effects, effDropQueue{})
		}
	}
	d.Effects = append(d.Effects, effSetState{State: store.SessionWaitingForInput}, effPushRecovery{}, effNotifyWaiters{Err: in.Err})
	return d
}

// decideNext runs the head of the queue if the agent is ready and idle.
func decideNext(v view) decision {
	if v.Running != nil || v.Agent != agentReady || v.Settling || v.Stopping {
		return accept()
	}
	if len(v.Queue) == 0 || v.QueueHeld {
		// Held since a restart: the queue waits for a continue or a prompt.
		return accept(effSetState{State: store.SessionWaitingForInput})
	}
	if v.Queue[0].Admitting {
		return accept() // not durable yet: admitted runs it once it is
	}
	return accept(effStartTurn{PromptID: v.Queue[0].PromptID})
}

// decideResume starts the agent if none runs; concurrent resumes share
// one start.
func decideResume(v view) decision {
	if v.closed() {
		return refuse(terminalErr(v))
	}
	if v.Agent == agentReady {
		return accept(effAgentReady{})
	}
	d := accept(effAwaitStart{}, effEnsureAgent{})
	if v.needsSlot() {
		d.Effects = append([]effect{effReserveSlot{}}, d.Effects...)
	}
	return d
}

// decidePermissionRequested puts an agent's question to the user, unless
// the session is closing, the turn it belongs to was cancelled, or too
// many are open already (answered cancelled: ACP's answer for a question
// that will not be put to the user; the agent may ask again).
func decidePermissionRequested(v view) decision {
	if v.Stopping {
		return accept(effDeclinePermission{})
	}
	promptID := ""
	if r := v.Running; r != nil {
		if r.CancelRequested {
			return accept(effDeclinePermission{})
		}
		promptID = r.PromptID
	}
	if v.OpenPermissions >= v.MaxPermissions {
		return accept(effDeclinePermission{TooMany: true})
	}
	return accept(effAskPermission{PromptID: promptID}, effPushRecovery{})
}

// decideAdmitted settles a turn's admission once its write has reported.
// On success the turn may now run (an agent is started for it if it is
// still queued: a failed start or a cancel may have ended it); on failure
// it is forgotten, as if never asked, and the agent never hears of it.
// Settling twice does nothing.
func decideAdmitted(v view, in admittedInput) decision {
	t := v.Turn
	if t == nil || !t.Admitting {
		return accept()
	}
	settle := effSettleAdmission{PromptID: in.PromptID}
	if in.Err == nil {
		for _, q := range v.Queue {
			if q.PromptID == in.PromptID {
				return accept(settle, effEnsureAgent{}, effStartNext{})
			}
		}
		return accept(settle, effStartNext{})
	}
	left := 0
	for _, q := range v.Queue {
		if q.PromptID != in.PromptID {
			left++
		}
	}
	// The write that released a held queue failed whole: held again.
	return accept(settle, effUnadmit{PromptID: in.PromptID, Err: in.Err, Rehold: t.ReleasedHold && left > 0}, effStartNext{})
}

// idle: the agent has nothing to do: no turn running or queued, no
// permission open, no start or load in progress.
func (v view) idle() bool {
	return v.Agent == agentReady && !v.Settling && !v.Stopping && v.Running == nil &&
		(len(v.Queue) == 0 || v.QueueHeld) && v.OpenPermissions == 0
}

// decideIdleCheck stops the agent once it has been idle for the timeout,
// else looks again when that time would be up.
func decideIdleCheck(v view, in idleCheckInput) decision {
	if v.Agent != agentReady || v.Stopping {
		return accept() // the next start arms the clock again
	}
	if !v.idle() {
		return accept(effIdleBusy{})
	}
	if left := in.Timeout - in.Elapsed; left > 0 {
		return accept(effIdleWait{Left: left})
	}
	return accept(effStopIdle{Timeout: in.Timeout})
}

// decideStartSucceeded finishes a start, unless a load replayed nothing
// yet: some agents replay after answering the load, so prompts wait a
// moment before the context is taken as lost (a replay is then never
// taken for a reply).
func decideStartSucceeded(in startSucceededInput) decision {
	if in.Resumed.Strategy == StrategyNativeLoad && in.Replayed == 0 && in.HadHistory {
		return accept(effAwaitReplay{})
	}
	return accept(started(in.Resumed)...)
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
		r = resumedInfo{Strategy: StrategyFresh, Fallback: "empty_replay"}
		if in.Inject {
			r.Strategy = StrategyHistoryInjection
		}
	}
	return accept(append([]effect{effClearSettling{}}, started(r)...)...)
}

// started announces the restore outcome, releases resume waiters and runs
// what was queued.
func started(r resumedInfo) []effect {
	var effs []effect
	if r.Strategy != "" {
		effs = append(effs, effRecordResumed{Resumed: r})
	}
	if r.Strategy == StrategyNativeLoad {
		effs = append(effs, effReconcileDelivery{})
	}
	return append(effs, effNotifyWaiters{}, effStartNext{}, effPushRecovery{}, effArmIdle{})
}

// decideRestarted repairs what the previous daemon left: the turn that was
// running is interrupted (daemon_restart); with none running, the first
// queued turn was about to start (its agent never got it), so it is. The
// turns queued behind stay queued, in order, held until the user continues
// or prompts; a queue held since an earlier restart stays whole. Pending
// permissions expire, a live executor is stopped (its orphaned process
// too), the session waits for input, and every client is told where it now
// stands. A session at rest is only announced when its agent went away
// with the old config (clients must learn it cannot be continued here).
func decideRestarted(v view, in restartedInput) decision {
	if !in.Repair {
		if in.AgentAvailable {
			return accept()
		}
		return accept(effPushRecovery{})
	}
	var effs []effect
	live := in.Executor == store.ExecutorReady || in.Executor == store.ExecutorStarting
	if live && in.Orphan {
		effs = append(effs, effStopOrphan{})
	}
	interrupted := v.QueueHeld || slices.ContainsFunc(in.Turns, func(t restartTurn) bool { return t.State == store.TurnRunning })
	held := v.QueueHeld
	for _, t := range in.Turns {
		switch {
		case t.State != store.TurnQueued:
		case !interrupted:
			interrupted = true
		default:
			if !held {
				held = true
				effs = append(effs, effHoldQueue{})
			}
			continue
		}
		effs = append(effs, effRestartInterrupt{PromptID: t.PromptID, Running: t.State == store.TurnRunning})
	}
	if in.Permissions > 0 {
		effs = append(effs, effClosePermissions{State: store.PermissionExpired})
	}
	if live {
		effs = append(effs, effStopExecutor{})
	}
	if v.State != store.SessionWaitingForInput {
		effs = append(effs, effSetState{State: store.SessionWaitingForInput})
	} else {
		effs = append(effs, effTaskFollow{})
	}
	return accept(append(effs, effPushRecovery{})...)
}
