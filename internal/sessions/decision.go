package sessions

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// The values decide (decide.go) works on: the view of a session it reads,
// the commands and agent inputs it decides, and the decision it returns
// with its effects (listed in decision_effects.go). All are plain values:
// no actor, no connection.

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
	State    session.SessionState
	Stopping bool // a close or a daemon shutdown began
	Agent    agentPhase
	Settling bool // a load that replayed nothing waits for a late replay
	// Rewinding: the executor restores the files for a rewind.
	Rewinding bool
	HasSlot   bool // an agent-cap slot is reserved for this session
	// Connected: the actor holds an agent connection (ready, or still
	// opening its ACP session).
	Connected bool
	// Waiting: resumes wait for an agent to be ready (effWaiters).
	Waiting bool
	// Hosted: the session's agent runs in an executor host, which
	// outlives the daemon.
	Hosted bool
	// StoredSession: the executor holds the ACP session id of an earlier
	// start, to restore; HasTurns: the session has turns (history).
	StoredSession, HasTurns bool
	// Reloading: a reload after a failed write is pending (waiting for
	// its backoff, or for the writes in flight); Backoff is how long the
	// reload after the next failed write waits first (0: not at all).
	Reloading bool
	Backoff   time.Duration
	// Replaying: a session/load may still be replaying history (until the
	// next turn starts: some agents replay after their answer).
	Replaying bool
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
	// OpenPermissions counts the open permission requests, at most
	// MaxPermissions.
	OpenPermissions, MaxPermissions int
	// Version counts the session's writes (optimistic concurrency for
	// continue admission).
	Version uint64
	// Modes, ConfigOptions, Commands and Mode (its current mode id, a
	// JSON string) are what the agent announced (ACP JSON).
	Modes, ConfigOptions, Commands, Mode json.RawMessage
	// Executor is the executor as the actor records it: an executor
	// status a decision records is built from it.
	Executor session.Executor
	// Title, TitleSource and Archived are what the session is called, by
	// whom, and whether it is put away.
	Title       string
	TitleSource session.TitleSource
	Archived    bool
	// Usage is what the session's agent says it used so far, and Budget
	// what it may use.
	Usage  session.Usage
	Budget session.Budget
}

// runningView is the turn on the agent, and where its transcript stands.
type runningView struct {
	PromptID        string
	CancelRequested bool
	// MessageID is the ACP messageId of the turn's last message chunk;
	// Split is set when a tool call, plan or permission came after it.
	MessageID string
	Split     bool
	// OpenMessage is the message the turn's chunks go to (0: none), of
	// OpenRole.
	OpenMessage int64
	OpenRole    session.MessageRole
	// Usage is what the agent says the turn used so far.
	Usage session.Usage
	// Stalled: the turn is stalled now (turn.stalled). BudgetStop: a
	// budget stopped it (budget.exceeded), and BudgetMessage says how.
	Stalled       bool
	BudgetStop    bool
	BudgetMessage string
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
	State           session.TurnState
	Kind            session.TurnKind
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
	//
	// Title is what the prompt would title a session that has none
	// (session.PromptTitle of its text).
	promptCmd struct {
		PromptID, Multitask, Title string
		// Unsupported is the first block type of the prompt the agent
		// said it does not take (promptCapabilities), else "".
		Unsupported string
	}
	// cancelCmd cancels the running turn and drops queued ones, or keeps
	// them queued (KeepQueue: the user stopped one answer, not the prompts
	// queued behind it).
	cancelCmd struct{ KeepQueue bool }
	// closeCmd ends the session.
	closeCmd struct{}
	// continueCmd admits a continuation planned (Plan, by session.Plan)
	// on the session as it stood at Version.
	continueCmd struct {
		PromptID string
		Version  uint64
		Plan     session.Recovery
	}
	// resumeCmd starts (or restores) the agent if none runs.
	resumeCmd struct{}
	// withdrawCmd takes a queued prompt out of the queue.
	withdrawCmd struct{ PromptID string }
	// infoCmd renames the session (Title) or archives it (Archived); nil
	// leaves that as it is (PATCH /session/{id}).
	infoCmd struct {
		Title    *string
		Archived *bool
	}
	// setModeCmd sets the session's mode.
	setModeCmd struct{ ModeID string }
	// setConfigCmd sets one config option.
	setConfigCmd struct {
		OptionID string
		Value    json.RawMessage
	}
	// shutdownCmd: the daemon stops (Manager.Shutdown).
	shutdownCmd struct{}
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
		// SessionLost: the prompt failed because the agent no longer
		// serves the session (it says the session is unknown, or that
		// what backed it died), though its process lives on.
		SessionLost bool
	}
	// agentExitedInput: the current agent process ended (stale exits are
	// filtered by the actor, which knows the incarnation).
	agentExitedInput struct {
		Exit exitInfo
		// Lost: the daemon lost the agent with its executor host (the host
		// stayed unreachable past its deadline, or died under it).
		Lost bool
		// Cause is what the executor knows of why the agent's records
		// ended where they did (errcode.HostOutboxDamaged), if anything.
		Cause causeInfo
		// At is when it ended: the executor's last sight of it.
		At time.Time
	}
	// startFailedInput: the agent could not be started or restored
	// (Fingerprint: of the agent profile it failed with, which the
	// executor's error keeps so a changed profile is tried again).
	startFailedInput struct {
		Err         error
		Fingerprint string
	}
	// permissionRequestedInput: the agent asks the user for a permission.
	permissionRequestedInput struct{}
	// admittedInput: a turn's admitting write reported, and the actor
	// took its outcome.
	admittedInput struct{ PromptID string }
	// idleCheckInput: the idle clock rang; the agent has been active
	// Elapsed ago and may idle for Timeout.
	idleCheckInput struct{ Elapsed, Timeout time.Duration }
	// startSucceededInput: the agent is up and its ACP session open, as
	// Resumed says (Strategy "" for a first start); Replayed counts the
	// history updates a load has replayed so far. Gen is the started
	// agent's generation and Inject whether its profile can inject the
	// history: what a load that replayed nothing yet settles on later.
	startSucceededInput struct {
		Resumed    resumedInfo
		HadHistory bool
		Replayed   int
		Gen        int
		Inject     bool
	}
	// rewoundInput: the session's executor restored its files for the
	// rewind Plan (rewind.go), changing Files, at At.
	rewoundInput struct {
		Plan  rewindPlan
		Files []session.ChangedFile
		At    time.Time
	}
	// replaySettledInput: the grace for a late load replay is over
	// (Current: for the agent that is still the session's).
	replaySettledInput struct {
		Resumed  resumedInfo
		Current  bool
		Replayed int
		Inject   bool
		// Gen is the agent generation the load started (the actor sets
		// Current from it when the settle runs).
		Gen int
	}
	// updateInput: the agent sent a session/update of Kind (Current: the
	// agent is still the session's). Of a message or thought chunk:
	// MessageID is its ACP messageId, Block that it is not plain text,
	// Empty that it has neither text nor a block. Of a plan: Data, its
	// entries. Of a tool call: Tool, the call.
	updateInput struct {
		Kind         acp.UpdateKind
		MessageID    string
		Text         string
		Block, Empty bool
		// Content is the chunk's content block, when not plain text.
		Content json.RawMessage
		Current bool
		Data    json.RawMessage
		Tool    *acp.ToolCall
		// Late: the lost agent's late output, of the turn its loss
		// interrupted (late.go): only what records output is kept.
		Late bool
	}
	// writeFailedInput: one of the session's writes failed, Change (its
	// kind, for the log; "" when a reload's read failed), with Err
	// (ShuttingDown: because the writer closed).
	writeFailedInput struct {
		Change       string
		Err          error
		ShuttingDown bool
	}
	// reloadedInput: since a write failed, every write in flight has
	// reported, and the store holds the session in State with Turns
	// (every turn, in run order) and the Pending permission requests.
	// ExecutorLacks: the executor row differs from the actor's own record
	// of it (the actor alone writes it: one of those writes was refused).
	reloadedInput struct {
		State         session.SessionState
		Turns         []storedTurn
		Pending       []storedPermission
		ExecutorLacks bool
	}
	// agentStartedInput: a start reported (Current: it is the session's
	// latest; Err: it failed).
	agentStartedInput struct {
		Current     bool
		Err         error
		Fingerprint string
	}
	// ensureAgentInput: the session needs an agent (a prompt, a resume, a
	// queue left by an exit); one is started unless it runs or starts.
	ensureAgentInput struct{}
	// nextInput asks what runs next (after any change that may free the
	// agent or fill the queue).
	nextInput struct{}
	// restartedInput: a session is taken up from the store with nothing
	// of it live, as the log leaves it (the view holds its state and
	// hold): tetherd started (or took over the sessions of a node that
	// went away) and found it active or left open, or (Load) an actor
	// loads it in a running daemon, whose earlier actor of the session,
	// if any, retired or was dropped with writes the store refused.
	// Repair: the store holds something to repair; otherwise it is at
	// rest (waiting for input or closed, no agent, no open turn or
	// permission).
	restartedInput struct {
		Repair bool
		Load   bool
		// Turns are the running and queued turns, in run order.
		Turns []storedTurn
		// Permissions are the pending permission requests' ids, in the
		// order they were asked.
		Permissions []string
		// Executor is the executor row's status; Orphan that it names a
		// standalone process (pid > 0) the old daemon started (never on
		// a load: this daemon stopped its own).
		Executor session.ExecutorStatus
		Orphan   bool
		// AgentAvailable: the session's agent profile still resolves.
		AgentAvailable bool
		// Hosted: the agent runs in an executor host, which outlives the
		// daemon, and was ready (or being reconnected to, or starting)
		// as the log leaves it: it is attached again (started again),
		// not interrupted.
		Hosted bool
	}
)

// storedPermission is a permission request the store holds pending, as
// the actor knows it after a reload: Live while an agent waits for its
// answer (the actor or the executor host holds it), and End the outcome
// the actor gave it whose write the store refused, if it did.
type storedPermission struct {
	ID   string
	Live bool
	End  *permissionEnd
}

// permissionEnd is how a permission request was closed.
type permissionEnd struct {
	State    session.PermissionState
	OptionID string
}

// storedTurn is a turn as the store holds it (one the previous daemon
// left open, or one a reload read back).
type storedTurn struct {
	PromptID string
	State    session.TurnState
}

func (promptCmd) isInput()                {}
func (cancelCmd) isInput()                {}
func (closeCmd) isInput()                 {}
func (continueCmd) isInput()              {}
func (infoCmd) isInput()                  {}
func (withdrawCmd) isInput()              {}
func (setModeCmd) isInput()               {}
func (setConfigCmd) isInput()             {}
func (answerPermissionCmd) isInput()      {}
func (turnEndedInput) isInput()           {}
func (agentExitedInput) isInput()         {}
func (startFailedInput) isInput()         {}
func (nextInput) isInput()                {}
func (startSucceededInput) isInput()      {}
func (replaySettledInput) isInput()       {}
func (rewoundInput) isInput()             {}
func (resumeCmd) isInput()                {}
func (permissionRequestedInput) isInput() {}
func (admittedInput) isInput()            {}
func (idleCheckInput) isInput()           {}
func (restartedInput) isInput()           {}
func (updateInput) isInput()              {}
func (writeFailedInput) isInput()         {}
func (reloadedInput) isInput()            {}
func (ensureAgentInput) isInput()         {}
func (shutdownCmd) isInput()              {}
func (agentStartedInput) isInput()        {}

// decision is decide's answer: refused (Refusal, and no effects) or
// accepted with the effects to perform, in order. The events it decides
// are effects too (effRecord), performed in their place
// among the others.
type decision struct {
	Refusal *errcode.Error
	Effects []effect
	// Then are decided, in order, once Effects are performed, on the
	// state they leave (decision.then): a decision's follow-up is another
	// decision, not an effect.
	Then []input
	// Cancel is what a cancel reports.
	Cancel CancelResult
	// Replayed: the update is history a session/load replays, stored
	// nowhere; the actor counts it for the load's settle.
	Replayed bool
}

// resumedInfo is how a start restored the session (session.resumed).
type resumedInfo struct {
	Strategy        string
	ContextRestored bool
	Fallback        string
}

// exitInfo is how an agent process ended (acp.Exit, as a plain value).
type exitInfo struct {
	Code                 int
	Signal, Stderr, Lost string
}

// causeInfo is an error's stable code and message, as a plain value;
// empty for none.
type causeInfo struct{ Code, Message string }

// causeOf is err's code and message (an *errcode.Error's own message).
func causeOf(err error) causeInfo {
	if err == nil {
		return causeInfo{}
	}
	msg := err.Error()
	var e *errcode.Error
	if errors.As(err, &e) {
		msg = e.Message
	}
	return causeInfo{Code: string(errcode.CodeOf(err)), Message: msg}
}

// errStale means the session changed between planning and admission.
var errStale = errcode.New(errcode.Internal, "session changed during admission")

// How a start opens the agent's ACP session, decided off the actor by
// decideRestore (decide_lifecycle.go) once the agent has said what it can.
type (
	// restoreCall is an ACP call that opens the session (restoreDone:
	// none, the start has its outcome).
	restoreCall uint8
	// tryOutcome is how the agent answered one.
	tryOutcome uint8
	// restoreTry is one call made and its outcome.
	restoreTry struct {
		Call    restoreCall
		Outcome tryOutcome
	}
	// restoreInput is what a start knows: whether there is a stored ACP
	// session to restore, or (ForkSource, a fork's first start) its
	// origin's to copy, the agent's capabilities, whether the session has
	// history and its profile can inject it, and the calls made so far.
	restoreInput struct {
		Restore, ForkSource bool
		Resume, Load, Fork  bool
		HadHistory, Inject  bool
		Tried               []restoreTry
	}
	// restoreStep is the next call, or (Call restoreDone) the outcome:
	// Failed (the last call's error is the start's), and how the session
	// was restored.
	restoreStep struct {
		Call    restoreCall
		Failed  bool
		Resumed resumedInfo
	}
)

const (
	restoreDone restoreCall = iota
	callResume              // session/resume of the stored session
	callLoad                // session/load of it
	callNew                 // session/new
	callFork                // session/fork of the origin's stored session
)

const (
	tryOK             tryOutcome = iota
	tryUnsupported               // the agent cannot do this
	tryUnknownSession            // the agent does not know the stored session
	tryFailed                    // any other failure: the identity is kept
	// tryStale: a fork's origin went on while its session was copied, so
	// the copy may hold more than the fork's transcript; it goes unused.
	tryStale
)
