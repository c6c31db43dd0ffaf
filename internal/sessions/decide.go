package sessions

import (
	"encoding/json"
	"errors"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/recovery"
	"github.com/tether/tether/internal/store"
)

// This file is a session's decision table: for every command a client
// sends and every input an agent produces, what the session does. decide
// is pure (no I/O, no clock, no randomness, no actor): it reads a view of
// the session and returns a decision, which the actor performs (see
// perform in effects.go). The actor is decide's only caller.

// agentPhase is where the session's agent stands.
type agentPhase uint8

const (
	// agentNone: no agent process, none starting.
	agentNone agentPhase = iota
	// agentStarting: a start or restore is in progress.
	agentStarting
	// agentReady: an agent runs its ACP session and can take calls.
	agentReady
)

// view is what a decision needs to know about the session, copied out of
// the actor. Fields about "the turn" or "the permission" describe the one
// the input names; they are nil when it names none or none is known.
type view struct {
	State    store.SessionState
	Stopping bool // a close or a daemon shutdown began
	Agent    agentPhase
	Settling bool // a load that replayed nothing waits for a late replay
	HasSlot  bool // an agent-cap slot is reserved for this session
	// Running is the turn on the agent; nil when idle.
	Running *runningView
	// Queue is the admitted turns waiting, in run order.
	Queue      []queuedView
	QueueHeld  bool // held since a restart until a continue or a prompt
	QueueLimit int
	// Last is the most recently admitted turn (nil when none).
	Last *turnView
	// Turn is the turn the input's prompt id names, when known.
	Turn *turnView
	// Permission is the open permission request the input names, when live.
	Permission *permissionView
	// Version counts the session's writes (optimistic concurrency for
	// continue admission).
	Version uint64
	// Modes and ConfigOptions are what the agent announced (ACP JSON).
	Modes, ConfigOptions json.RawMessage
}

// runningView is the turn on the agent.
type runningView struct {
	PromptID        string
	CancelRequested bool
}

// queuedView is one queued turn; Admitting while its admitting write has
// not reported (it never reaches the agent before).
type queuedView struct {
	PromptID  string
	Admitting bool
}

// turnView is a known turn.
type turnView struct {
	PromptID        string
	State           store.TurnState
	Kind            store.TurnKind
	CancelRequested bool
	// SamePrompt: the input's prompt equals the turn's (idempotent retry).
	SamePrompt bool
	Admitting  bool
}

// permissionView is an open permission request: the option ids offered.
type permissionView struct {
	Options []string
}

// input is a command or an agent input to decide on.
type input interface{ isInput() }

// Commands (from clients).
type (
	// promptCmd admits a prompt (POST /session/{id}/prompt).
	promptCmd struct{ PromptID, Multitask string }
	// cancelCmd cancels the running turn and drops queued ones.
	cancelCmd struct{}
	// closeCmd ends the session.
	closeCmd struct{}
	// continueCmd admits a planned continuation made at Version.
	continueCmd struct {
		PromptID string
		Version  uint64
	}
	// withdrawCmd takes a queued prompt out of the queue.
	withdrawCmd struct{ PromptID string }
	// setModeCmd sets the session's mode.
	setModeCmd struct{ ModeID string }
	// setConfigCmd sets one config option.
	setConfigCmd struct {
		OptionID string
		Value    json.RawMessage
	}
	// answerPermissionCmd answers an open permission request.
	answerPermissionCmd struct {
		RequestID string
		Cancelled bool
		OptionID  string
	}
)

// Agent inputs.
type (
	// turnEndedInput: the agent answered session/prompt for PromptID.
	// Disconnected means the agent is gone (its exit decides); Failed
	// that it answered an error, classified as ErrorCode.
	turnEndedInput struct {
		PromptID, StopReason    string
		Failed, Disconnected    bool
		ErrorCode, ErrorMessage string
	}
	// agentExitedInput: the current agent process ended (stale exits are
	// filtered by the actor, which knows the incarnation).
	agentExitedInput struct{ Exit exitInfo }
	// startFailedInput: the agent could not be started or restored.
	startFailedInput struct{ Err error }
	// nextInput asks what runs next (after any change that may free the
	// agent or fill the queue).
	nextInput struct{}
)

func (promptCmd) isInput()           {}
func (cancelCmd) isInput()           {}
func (closeCmd) isInput()            {}
func (continueCmd) isInput()         {}
func (withdrawCmd) isInput()         {}
func (setModeCmd) isInput()          {}
func (setConfigCmd) isInput()        {}
func (answerPermissionCmd) isInput() {}
func (turnEndedInput) isInput()      {}
func (agentExitedInput) isInput()    {}
func (startFailedInput) isInput()    {}
func (nextInput) isInput()           {}

// decision is decide's answer: refused (Refusal, and no effects) or
// accepted with the effects to perform, in order. New session and turn
// states are effects (effSetState, effEndTurn, effInterruptTurn).
type decision struct {
	Refusal *errcode.Error
	Effects []effect
	// Cancel is what a cancel reports.
	Cancel CancelResult
}

// effect is one thing the actor does for a decision.
type effect interface{ isEffect() }

type (
	// effReserveSlot reserves an agent-cap slot; it is the only effect
	// that can fail, and comes first, so a refusal stores nothing.
	effReserveSlot struct{}
	// effAnswerExisting answers a repeated prompt id with its turn.
	effAnswerExisting struct {
		PromptID  string
		Admitting bool
	}
	// effEnqueue admits the command's turn into the queue (Front: ahead
	// of the turns held since a restart).
	effEnqueue struct{ Front bool }
	// effStartTurn takes the head of the queue to the agent.
	effStartTurn struct{ PromptID string }
	// effEndTurn persists a terminal outcome of a turn.
	effEndTurn struct {
		PromptID                string
		State                   store.TurnState
		CancelRequested         bool
		StopReason              string
		ErrorCode, ErrorMessage string
	}
	// effInterruptTurn ends a turn that lost its agent.
	effInterruptTurn struct {
		PromptID, Reason string
		Exit             exitInfo
	}
	// effMarkCancelRequested records the user's cancel on a turn.
	effMarkCancelRequested struct{ PromptID string }
	// effRemoveQueued takes one turn out of the queue; effDropQueue all.
	effRemoveQueued struct{ PromptID string }
	effDropQueue    struct{}
	// effReleaseHeld clears the hold on the queue.
	effReleaseHeld struct{}
	// effClosePermissions answers the open requests of a turn ("" = all).
	effClosePermissions struct {
		PromptID string
		State    store.PermissionState
	}
	// effResolvePermission answers one request with the client's answer.
	effResolvePermission struct {
		RequestID string
		State     store.PermissionState
		OptionID  string
	}
	// effCancelAgent sends session/cancel and arms the cancel grace.
	effCancelAgent struct{}
	// effStopRunningAgent ends the process of the running turn's agent.
	effStopRunningAgent struct{}
	// effClearRunning forgets the running turn (and its cancel grace).
	effClearRunning struct{}
	// effSetState changes the session state.
	effSetState struct{ State store.SessionState }
	// effPushRecovery announces the recovery plan if it changed.
	effPushRecovery struct{}
	// effMarkStopping: exits from here on are expected.
	effMarkStopping struct{}
	// effBumpGen makes late messages from the current agent stale.
	effBumpGen struct{}
	// effClearSettling ends a pending load settle.
	effClearSettling struct{}
	// effForgetAgent drops the agent after an expected exit.
	effForgetAgent struct{}
	// effRecordExit records an unexpected exit on the executor.
	effRecordExit struct{ Exit exitInfo }
	// effRecordStartError records a failed start on the executor.
	effRecordStartError struct{ Err error }
	// effNotifyWaiters tells resume callers how the start went.
	effNotifyWaiters struct{ Err error }
	// effEnsureAgent starts (or restores) the agent if none runs.
	effEnsureAgent struct{}
	// effDropSlot releases the agent-cap slot once no agent needs it.
	effDropSlot struct{}
	// effTouchLastSeen notes the agent as seen now.
	effTouchLastSeen struct{}
	// effStartNext decides again, on the state the effects before it
	// left, what runs next (nextInput).
	effStartNext struct{}
	// effArmIdle restarts the idle clock.
	effArmIdle struct{}
	// effApplyOption sends a mode or config choice to the running agent
	// (stored once it took it); effStoreOption stores it for the next start.
	effApplyOption struct{}
	effStoreOption struct{}
)

func (effReserveSlot) isEffect()         {}
func (effAnswerExisting) isEffect()      {}
func (effEnqueue) isEffect()             {}
func (effStartTurn) isEffect()           {}
func (effEndTurn) isEffect()             {}
func (effInterruptTurn) isEffect()       {}
func (effMarkCancelRequested) isEffect() {}
func (effRemoveQueued) isEffect()        {}
func (effDropQueue) isEffect()           {}
func (effReleaseHeld) isEffect()         {}
func (effClosePermissions) isEffect()    {}
func (effResolvePermission) isEffect()   {}
func (effCancelAgent) isEffect()         {}
func (effStopRunningAgent) isEffect()    {}
func (effClearRunning) isEffect()        {}
func (effSetState) isEffect()            {}
func (effPushRecovery) isEffect()        {}
func (effMarkStopping) isEffect()        {}
func (effBumpGen) isEffect()             {}
func (effClearSettling) isEffect()       {}
func (effForgetAgent) isEffect()         {}
func (effRecordExit) isEffect()          {}
func (effRecordStartError) isEffect()    {}
func (effNotifyWaiters) isEffect()       {}
func (effEnsureAgent) isEffect()         {}
func (effDropSlot) isEffect()            {}
func (effTouchLastSeen) isEffect()       {}
func (effStartNext) isEffect()           {}
func (effArmIdle) isEffect()             {}
func (effApplyOption) isEffect()         {}
func (effStoreOption) isEffect()         {}

// exitInfo is how an agent process ended (acp.Exit, as a plain value).
type exitInfo struct {
	Code           int
	Signal, Stderr string
}

// errStale means the session changed between planning and admission.
var errStale = errcode.New(errcode.Internal, "session changed during admission")

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
