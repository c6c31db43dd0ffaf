package sessions

import (
	"time"

	"github.com/tether/tether/internal/session"
)

// The effects a decision (decision.go) returns, in the order the actor
// performs them (effects.go). They are of two families:
//
//   - effRecord: a domain event the decision decided (the session's
//     state, a turn's end, a queue hold, a permission closed, a plan, how
//     a start restored the session), built from the view. The actor folds
//     it into what it holds live and emits it (actor.record, record.go):
//     a turn's end takes the turn off the agent or out of the queue, and
//     so on, so no effect changes the actor's record of the session on
//     its own.
//   - Runtime I/O: everything else (start, stop, cancel, prompt, attach,
//     answer the agent or the caller, timers, slots). The bookkeeping
//     that goes with one (the actor's generation, its stopping, settling
//     and starting flags, when the agent was last seen) is done by that
//     effect's performer or by the fold of the event it goes with, never
//     by an effect of its own.
//
// A few records are effects of their own still: a turn's interruption
// (effInterruptTurn, effRestartInterrupt: their tool calls are failed in
// the writer's transaction, and a system message says why), the
// executor (effRecordExecutor: its row is written beside its event, not
// projected from it), the task following its session (effTaskFollow) and
// a session/update's transcript (effRecordChunk, effRecordToolCall: they
// need the update's content).

// effect is one thing the actor does for a decision. It is a sum type:
// go-check-sumtype (make vet) fails the build when a type switch over it
// without a default misses a kind, so the performer (performOne) names
// every kind.
//
//sumtype:decl
type effect interface{ isEffect() }

type (
	// effRecord records a domain event the decision decided, built from
	// the view (record, decide.go): the actor folds it into what it holds
	// and emits it (actor.record, record.go), and the event writer
	// projects its rows, commits it and publishes it.
	effRecord struct{ Event session.EventPayload }
	// effAnswerExisting answers a repeated prompt id with its turn.
	effAnswerExisting struct {
		PromptID  string
		Admitting bool
	}
	// effEnqueue admits the command's turn into the queue (Front: ahead
	// of the turns held since a restart). Reserve: an agent-cap slot is
	// reserved first, the only thing that can fail: a refusal stores
	// nothing (as with effAwaitStart's and effStartAgent's).
	effEnqueue struct{ Front, Reserve bool }
	// effStartTurn takes the head of the queue to the agent.
	effStartTurn struct{ PromptID string }
	// effInterruptTurn ends a turn that lost its agent: its process
	// ended (Exit), or it lost the session it served (Cause: what it
	// said). A turn its executor host's loss interrupted (reason
	// executor_lost) is the one the lost agent's late output goes to,
	// should the host come back (late.go).
	effInterruptTurn struct {
		PromptID, Reason string
		Exit             exitInfo
		// Cause, when set, is kept as the turn's error (code, message).
		Cause causeInfo
	}
	// effClosePermissions answers the open requests of a turn ("" = all).
	effClosePermissions struct {
		PromptID string
		State    session.PermissionState
	}
	// effResolvePermission answers one request with the client's answer.
	effResolvePermission struct {
		RequestID string
		State     session.PermissionState
		OptionID  string
	}
	// effCancelAgent sends session/cancel and arms the cancel grace.
	effCancelAgent struct{}
	// effStopRunningAgent ends the process of the running turn's agent.
	effStopRunningAgent struct{}
	// effMarkStopping: a close (Close) or a daemon stop began: exits
	// from here on are expected. A close also makes whatever its agent
	// still sends stale (a new generation): nothing may follow
	// session.closed.
	effMarkStopping struct{ Close bool }
	// effPushRecovery announces the recovery plan if it changed (Always:
	// even unchanged, as start-up tells every client where each session
	// it repaired stands).
	effPushRecovery struct{ Always bool }
	// effAgentExited: the agent process ended. It is forgotten, and a
	// pending load settle with it; unless Expected (a close or a daemon
	// stop ended it), the exit is recorded on the executor (with a Cause,
	// status error and its code). Its slot is released unless KeepSlot: a
	// fresh agent starts in it for the prompts queued.
	effAgentExited struct {
		Exit     exitInfo
		Cause    causeInfo
		Expected bool
		KeepSlot bool
	}
	// effRecordStartError ends a start that failed: the error is recorded
	// on the executor, and the slot released.
	effRecordStartError struct{ Err error }
	// effNotifyWaiters tells resume callers how the start went.
	effNotifyWaiters struct{ Err error }
	// effEnsureAgent starts (or restores) the agent if none runs.
	effEnsureAgent struct{}
	// effStartNext decides again, on the state the effects before it
	// left, what runs next (nextInput).
	effStartNext struct{}
	// effArmIdle restarts the idle clock.
	effArmIdle struct{}
	// effSetOption sends a mode or config choice to the running agent
	// (Now; stored once it took it), else stores it for the next start.
	effSetOption struct{ Now bool }
	// effAwaitStart makes a resume wait for the start in progress (or
	// about to begin); Ready: the agent runs, it is answered at once.
	effAwaitStart struct{ Reserve, Ready bool }
	// effAskPermission records the agent's question for PromptID ("" =
	// outside a turn) and puts it to the user; Declined, it is answered
	// "cancelled" instead (TooMany: the open-request bound).
	effAskPermission struct {
		PromptID          string
		Declined, TooMany bool
	}
	// effSettleAdmission forgets that PromptID's admission is pending:
	// its turn takes the number the log gave it (Seq), or, when its
	// admitting write failed (Err), is taken back, as if never asked
	// (Rehold: the queue it released is held again).
	effSettleAdmission struct {
		PromptID string
		Seq      int64
		Err      error
		Rehold   bool
	}
	// effIdleWait looks at the idle clock again after Left (Busy: the
	// agent has work, so its idle time starts over now).
	effIdleWait struct {
		Left time.Duration
		Busy bool
	}
	// effRetireAgent stops the agent on purpose, Why: it was idle too
	// long, or it will not serve the session again (it lost it). The
	// session keeps its identity; the next prompt, continue or resume
	// restores it in a new agent.
	effRetireAgent struct{ Why string }
	// effAwaitReplay holds prompts back for a grace period: a load that
	// replayed nothing may still replay after its answer.
	// What it then settles on: how the start restored the session, the
	// generation of its agent, and whether its profile can inject the
	// history (replaySettledInput).
	effAwaitReplay struct {
		Resumed resumedInfo
		Gen     int
		Inject  bool
	}

	// A session/update's effects, performed by onUpdate (transcript.go),
	// which holds the update's content.
	//
	// effIgnoreUpdate stores the update nowhere: a session/load replays
	// it (Replayed: history already stored, counted), or it is agent
	// output after its turn ended (dropped).
	effIgnoreUpdate struct{ Replayed bool }
	// effRecordChunk records the chunk in PromptID's turn: it starts a
	// new message of Role (New), or is appended to the open one. Either
	// notes the chunk's ACP MessageID and ends a split.
	effRecordChunk struct {
		PromptID, MessageID string
		Role                session.MessageRole
		New                 bool
	}
	// effSplitMessage ends the running turn's current message: text that
	// follows reads after what came between, not glued before it.
	effSplitMessage struct{}
	// effRecordToolCall stores the update's tool call (Started: it is
	// new, tool_call.started) in PromptID's turn.
	effRecordToolCall struct {
		PromptID string
		Started  bool
	}
	// effAdoptOptions keeps what the agent announced (its commands, its
	// current mode or its config options) and announces the session's
	// options.
	effAdoptOptions struct{}

	// A failed write's effects (writefail.go).
	//
	// effWriteFailed logs a failure: of a write (Change names it), or of
	// a reload's read (Change ""). With Reload, the session is reloaded
	// after After (0: at once) once every write in flight has reported,
	// and the reload after the next failure waits Next.
	effWriteFailed struct {
		Change      string
		Err         error
		Reload      bool
		After, Next time.Duration
	}
	// effReload believes the store again (performed by reload, which holds
	// what it read): the session, executor and turns as stored, except
	// the live facts (the running turn, turns still being admitted), and
	// Queue as the queue, in order. Executor: the executor is recorded
	// as the actor has it, which the store lacks.
	effReload struct {
		Queue    []string
		Executor bool
	}

	// effStartAgent starts an agent: Restore its stored ACP session (whose
	// replay is then expected), HadHistory to report how the context was
	// kept when none can be restored.
	// Reserve: a slot first (a refusal fails the start).
	effStartAgent struct{ Restore, HadHistory, Reserve bool }
	// effDiscardStart stops the agent of a start the session no longer
	// wants and releases its slot; effAdoptAgent ends the start in
	// progress and makes the agent it started the session's, which then
	// finishes the start (startSucceededInput).
	effDiscardStart struct{}
	effAdoptAgent   struct{}
	// effStopAgent marks the actor stopping (effMarkStopping) and hands
	// the agent to the caller to stop off the actor (stopping can take
	// the whole grace period), which then records the executor stopped,
	// Why.
	effStopAgent struct{ Why string }

	// Taking a session up from the store (restartedInput): at start-up,
	// on an actor built from the start-up scan whose writes reconcile.go
	// commits in one transaction; on a load, on the session's actor.
	//
	// effRestartInterrupt ends a turn the restart interrupted (Running:
	// it was on the agent, and a system message says so).
	effRestartInterrupt struct {
		PromptID string
		Running  bool
	}
	// effRecordExecutor records the executor in Status: reconnecting to
	// its host, or stopped, Why ("" for no message: no agent of the
	// session runs any more; StopOrphan: the agent process the previous
	// daemon started is ended first). The executor row is the actor's,
	// written beside its event rather than projected from it
	// (docs/session.md), so this record is not an effRecord.
	effRecordExecutor struct {
		Status     session.ExecutorStatus
		Why        string
		StopOrphan bool
	}
	// effTaskFollow moves the task to the state its session implies.
	effTaskFollow struct{}
	// effAttachAgent attaches the actor of a hosted session to the agent
	// on the host (at start-up, once the repairs are committed).
	effAttachAgent struct{}
	// effRestartAgent starts a hosted session's agent again once
	// start-up's repairs are committed (its start was cut short).
	effRestartAgent struct{}
)

func (effAttachAgent) isEffect()  {}
func (effRestartAgent) isEffect() {}

func (effRecord) isEffect()            {}
func (effAnswerExisting) isEffect()    {}
func (effEnqueue) isEffect()           {}
func (effStartTurn) isEffect()         {}
func (effInterruptTurn) isEffect()     {}
func (effClosePermissions) isEffect()  {}
func (effResolvePermission) isEffect() {}
func (effCancelAgent) isEffect()       {}
func (effStopRunningAgent) isEffect()  {}
func (effMarkStopping) isEffect()      {}
func (effPushRecovery) isEffect()      {}
func (effAgentExited) isEffect()       {}
func (effRecordStartError) isEffect()  {}
func (effNotifyWaiters) isEffect()     {}
func (effEnsureAgent) isEffect()       {}
func (effStartNext) isEffect()         {}
func (effArmIdle) isEffect()           {}
func (effSetOption) isEffect()         {}
func (effAwaitStart) isEffect()        {}
func (effAskPermission) isEffect()     {}
func (effSettleAdmission) isEffect()   {}
func (effIdleWait) isEffect()          {}
func (effRetireAgent) isEffect()       {}
func (effAwaitReplay) isEffect()       {}
func (effRestartInterrupt) isEffect()  {}
func (effTaskFollow) isEffect()        {}
func (effRecordChunk) isEffect()       {}
func (effSplitMessage) isEffect()      {}
func (effRecordToolCall) isEffect()    {}
func (effIgnoreUpdate) isEffect()      {}
func (effAdoptOptions) isEffect()      {}
func (effWriteFailed) isEffect()       {}
func (effReload) isEffect()            {}
func (effRecordExecutor) isEffect()    {}
func (effStartAgent) isEffect()        {}
func (effStopAgent) isEffect()         {}
func (effDiscardStart) isEffect()      {}
func (effAdoptAgent) isEffect()        {}
