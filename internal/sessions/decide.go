package sessions

import (
	"encoding/json"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// This file and its two siblings are a session's decision table: for
// every command a client sends and every input an agent produces, what the
// session does. decide is pure (no I/O, no clock, no randomness, no
// actor): it reads a view of the session and returns a decision, which the
// actor performs (see perform in effects.go). The actor is decide's only
// caller. The values it works on (view, inputs, decision, effects) are in
// decision.go and decision_effects.go.
//
//   - decide.go (here): the dispatch, and the commands clients send.
//   - decide_agent.go: what the agent reports (a turn's end, an exit, a
//     permission request, each session/update) and the actor's own inputs
//     (an admission's write reported, the idle clock, what runs next).
//   - decide_lifecycle.go: an agent's start and its outcome, a failed
//     write and the reload after it, a daemon's shutdown, and a session
//     taken up from the store (at start-up and at an actor's load, both
//     performed by the actor: reconcile.go).
//     decideRestore, the ACP calls that restore a session, is there too:
//     pure like decide, but followed by the start itself, off the actor,
//     since only the started agent says what it can.

// decide is the session's decision for one command or agent input.
func decide(v view, in input) decision {
	switch in := in.(type) {
	case promptCmd:
		return decidePrompt(v, in)
	case cancelCmd:
		return decideCancel(v, in)
	case closeCmd:
		return decideClose(v)
	case continueCmd:
		return decideContinue(v, in)
	case withdrawCmd:
		return decideWithdraw(v, in)
	case infoCmd:
		return decideInfo(v, in)
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
	case rewoundInput:
		return decideRewound(v, in)
	case restartedInput:
		return decideRestarted(v, in)
	case updateInput:
		d := decideUpdate(v, in)
		if d.Refusal == nil && !d.Replayed {
			d.Effects = append(stallEnded(v, in), d.Effects...)
		}
		return d
	case setBudgetCmd:
		return decideSetBudget(v, in)
	case turnBudgetInput:
		return decideTurnBudget(v, in)
	case stallInput:
		return decideStall(v, in)
	case writeFailedInput:
		return decideWriteFailed(v, in)
	case reloadedInput:
		return decideReloaded(v, in)
	case ensureAgentInput:
		return decideEnsureAgent(v)
	case shutdownCmd:
		return decideShutdown(v)
	case agentStartedInput:
		return decideAgentStarted(v, in)
	}
	return refuse(errcode.New(errcode.Internal, "no decision for %T", in))
}

func accept(effs ...effect) decision { return decision{Effects: effs} }

// then has the actor decide ins, in order, once d's effects are
// performed, on the state they leave: what runs next (nextInput), and
// whether an agent must start (ensureAgentInput).
func (d decision) then(ins ...input) decision {
	d.Then = append(d.Then, ins...)
	return d
}

func refuse(e *errcode.Error) decision { return decision{Refusal: e} }

// record is the effect that records event p, of turn promptID ("" when it
// names none): the events a decision decides are built here, from the
// view, and the actor folds each into what it holds as it emits it
// (actor.record).
func record(promptID string, p session.EventPayload) effect {
	p.Base().PromptID = promptID
	return effRecord{Event: p}
}

// moveTo records the session's move from state from to state to; nothing
// when it is there already, or closed (a terminal state is final).
func moveTo(from, to session.SessionState) []effect {
	if from == to || from.Terminal() {
		return nil
	}
	return []effect{record("", &session.SessionStateChangedData{State: to, PreviousState: from})}
}

// holdQueue records the queued turns held for the user (held), or let go.
func holdQueue(held bool) effect { return record("", &session.SessionQueueHeldData{Held: held}) }

// endTurn records the end of turn promptID (p: its terminal event, which
// takes it out of the queue or off the agent) and announces the plan it
// leaves.
func endTurn(promptID string, p session.EventPayload) []effect {
	return []effect{record(promptID, p), effPushRecovery{}}
}

// completed, failed and cancelled are a turn's terminal events: it
// completed with stopReason, failed with code and message, or was
// cancelled, with stopReason (session.Withdrawn: its client withdrew it
// from the queue) and whether the user's cancel ended it (requested).
func completed(stopReason string) *session.TurnCompletedData {
	return &session.TurnCompletedData{State: session.TurnCompleted, StopReason: stopReason}
}

func failed(code, message string) *session.TurnFailedData {
	return &session.TurnFailedData{State: session.TurnFailed, Code: code, Message: message}
}

func cancelled(stopReason string, requested bool) *session.TurnCancelledData {
	c := &session.TurnCancelledData{State: session.TurnCancelled, StopReason: stopReason, CancelRequested: requested}
	if stopReason == session.Withdrawn {
		c.Reason = session.Withdrawn
	}
	return c
}

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
	return []effect{effAdmit{Front: front, Reserve: v.needsSlot()}}
}

// decidePrompt: a prompt runs now, waits in the queue, or is refused.
func decidePrompt(v view, c promptCmd) decision {
	if t := v.Turn; t != nil {
		if !t.SamePrompt {
			return refuse(errcode.New(errcode.PromptIDConflict, "promptId %q was already used for a different prompt", c.PromptID))
		}
		// A retry shares the first request's outcome (if that is not
		// durable yet, it never claims a turn that may never exist).
		return accept(effAdmit{Existing: t.PromptID, Admitting: t.Admitting})
	}
	if v.closed() {
		return refuse(terminalErr(v))
	}
	if v.Rewinding {
		return refuse(errcode.New(errcode.RewindInProgress, "the session's files are being rewound: prompt again once the rewind is done"))
	}
	if err := overBudget(v); err != nil {
		return refuse(err)
	}
	if c.Unsupported != "" {
		return refuse(errcode.New(errcode.PromptContentUnsupported,
			"the agent does not take %s blocks (its promptCapabilities say so)", c.Unsupported).With("blockType", c.Unsupported))
	}
	busy := v.Running != nil || len(v.Queue) > 0
	if busy && c.Multitask == MultitaskReject {
		return refuse(errcode.New(errcode.TurnActive, "a turn is already running").With("promptId", v.activePromptID()))
	}
	if len(v.Queue) >= v.QueueLimit {
		return refuse(errcode.New(errcode.PromptQueueFull, "%d prompts are already queued", len(v.Queue)).With("retryAfter", 5))
	}
	effs := v.admission(false)
	if v.TitleSource == session.TitleNone && c.Title != "" {
		// The first prompt titles a session nobody named.
		effs = append(effs, retitle(v, c.Title, session.TitlePrompt)...)
	}
	return accept(effs...)
}

// decideInfo renames or archives the session: the user's title replaces
// any other; both are allowed on a closed session too (they change what
// the session is called and where it is listed, not what it did), the
// only events that may follow session.closed.
func decideInfo(v view, c infoCmd) decision {
	var effs []effect
	if c.Title != nil {
		effs = append(effs, retitle(v, *c.Title, session.TitleUser)...)
	}
	if c.Archived != nil && *c.Archived != v.Archived {
		effs = append(effs, record("", &session.SessionArchivedData{Archived: *c.Archived}))
	}
	return accept(effs...)
}

// retitle records the session's title from source, unless the current
// one ranks higher or it changes nothing.
func retitle(v view, title string, source session.TitleSource) []effect {
	if title == "" || !source.Replaces(v.TitleSource) || (title == v.Title && source == v.TitleSource) {
		return nil
	}
	return []effect{record("", &session.SessionTitleChangedData{Title: title, Source: source})}
}

// decideCancel records the user's intent, asks the agent to stop, answers
// the turn's open permission requests and drops queued prompts (unless
// c.KeepQueue: they stay, held or not, and the next runs when the
// cancelled turn has ended).
func decideCancel(v view, c cancelCmd) decision {
	if v.State.Terminal() {
		// A closed session has nothing to cancel, and its log ends with
		// session.closed: nothing is written for it any more.
		return accept()
	}
	var d decision
	for _, q := range v.Queue {
		if c.KeepQueue {
			break
		}
		d.Effects = append(d.Effects, endTurn(q.PromptID, cancelled("", true))...)
		d.Cancel.Dequeued = append(d.Cancel.Dequeued, q.PromptID)
	}
	if v.QueueHeld && !c.KeepQueue {
		d.Effects = append(d.Effects, holdQueue(false), effPushRecovery{})
	}
	d.Cancel.Cancelled = len(d.Cancel.Dequeued) > 0
	r := v.Running
	if r == nil {
		// Idle: a cancel still records the user's intent for an
		// interrupted last turn, so it is clean and a racing continue
		// cannot revive it.
		if t := v.Last; t != nil && t.State == session.TurnInterrupted && !t.CancelRequested && len(d.Cancel.Dequeued) == 0 {
			d.Effects = append(d.Effects, record(t.PromptID, &session.TurnCancelRequestedData{}), effPushRecovery{})
			d.Cancel.PromptID, d.Cancel.Cancelled = t.PromptID, true
		}
		return d
	}
	d.Cancel.PromptID, d.Cancel.Cancelled = r.PromptID, true
	if r.CancelRequested {
		return d
	}
	d.Effects = append(d.Effects, record(r.PromptID, &session.TurnCancelRequestedData{}),
		effAnswerPermissions{PromptID: r.PromptID, State: session.PermissionCancelled}, effCancelAgent{})
	return d
}

// decideClose ends the session; closing a closed session does nothing.
// The agent is stopped by the caller, off the actor.
func decideClose(v view) decision {
	if v.State.Terminal() {
		return accept()
	}
	d := accept(effStopAgent{How: stopClosing})
	for _, q := range v.Queue {
		d.Effects = append(d.Effects, endTurn(q.PromptID, cancelled("", true))...)
	}
	if r := v.Running; r != nil {
		d.Effects = append(d.Effects, endTurn(r.PromptID, cancelled("", true))...)
	}
	d.Effects = append(d.Effects, effAnswerPermissions{State: session.PermissionCancelled})
	d.Effects = append(d.Effects, moveTo(v.State, session.SessionCompleted)...)
	d.Effects = append(d.Effects, effPushRecovery{})
	return d
}

// decideContinue admits a planned continuation if nothing changed since
// it was planned (errStale sends the caller back to planning). It runs
// first; prompts held since a restart follow it.
func decideContinue(v view, c continueCmd) decision {
	if !c.Plan.CanContinue {
		return decision{Refusal: declined(c.Plan)}
	}
	if v.Rewinding {
		return refuse(errcode.New(errcode.RewindInProgress, "the session's files are being rewound: continue once the rewind is done"))
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
	d := accept(endTurn(c.PromptID, cancelled(session.Withdrawn, false))...)
	if len(v.Queue) == 1 && v.QueueHeld {
		d.Effects = append(d.Effects, holdQueue(false), effPushRecovery{})
	}
	return d.then(nextInput{})
}

// checkMode holds a mode choice to the modes the agent announced; a
// stopped session stores it unchecked when no agent announced any yet.
func checkMode(v view, modeID string) *errcode.Error {
	if s, ok := acp.ParseModes(v.Modes); ok && !s.Has(modeID) {
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
	o, ok := acp.FindConfigOption(v.ConfigOptions, optionID)
	if !ok {
		return errcode.New(errcode.UnknownConfigOption, "the agent offers no config option %q", optionID).With("optionId", optionID)
	}
	if !o.Accepts(value) {
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
	return accept(effSetOption{Now: v.Agent == agentReady})
}

// decideAnswer applies a client's answer to an open permission request. A
// request that is not live is refused permission_already_resolved; the
// actor reads its stored state for the answer (or that it is unknown).
func decideAnswer(v view, c answerPermissionCmd) decision {
	p := v.Permission
	if p == nil {
		return refuse(errcode.New(errcode.PermissionResolved, "permission request %s is not open", c.RequestID))
	}
	state := session.PermissionCancelled
	if !c.Cancelled {
		valid := false
		for _, o := range p.Options {
			valid = valid || o == c.OptionID
		}
		if !valid {
			return refuse(errcode.New(errcode.InvalidPermissionOpt, "optionId %q is not one of the offered options", c.OptionID))
		}
		state = session.PermissionSelected
	}
	return accept(effAnswerPermissions{RequestID: c.RequestID, State: state, OptionID: c.OptionID})
}

// decideResume starts the agent if none runs; concurrent resumes share
// one start.
func decideResume(v view) decision {
	if v.closed() {
		return refuse(terminalErr(v))
	}
	if v.Agent == agentReady {
		return accept(effWaiters{Ready: true})
	}
	return accept(effWaiters{Reserve: v.needsSlot()}).then(ensureAgentInput{})
}
