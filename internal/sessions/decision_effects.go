package sessions

import (
	"time"

	"github.com/tether/tether/internal/session"
)

// The effects a decision (decision.go) returns, in the order the actor
// performs them (effects.go), 12 kinds. They are of three families:
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
//   - effPushRecovery: the recovery plan announced (session.recovery_
//     changed), a projection the event writer works out in the
//     transaction, where it reads what the session's earlier writes
//     left, after the records it follows.
//
// A turn's interruption is a record too (turn.interrupted, decided with
// the system notice that says why; its fold has the write fail the
// turn's unfinished tool calls first), and so is the executor an exit or
// a failed start leaves (exited, decideStartFailed: the input carries the
// time the agent ended and the profile's fingerprint, and what an end is
// to the actor, no agent and no slot, is noted by the handler that takes
// it: agentEnded, dropSlot). So is every session/update the session
// keeps: a message chunk, a new message (its fold takes the id the
// store reserves, so the chunks that follow name it), a tool call, a
// plan, the options the agent announced. The executor status a restart
// or a host's reconnect records is built from the view (executorIs,
// stopExecutor). What a decision decides next, once its effects are
// performed, is its Then.
//
// A kind that does one thing in several ways names the way with a How
// (effStopAgent: stopHow, effStartAgent: startHow), or the timer it arms
// (effTimer: timerKind), which its performer switches on:
// go-check-sumtype checks the kinds, not the ways, so a new way is added
// next to its kind's performer.
//
// One performer (performOne, effects.go) carries out every kind. What
// the command or input holds that an effect needs and is no plain value
// is handed to it in a job, which also carries back what the caller is
// answered with (the admitted turn, the write to wait for).

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
	// effAdmit admits the command's turn into the queue (Front: ahead of
	// the turns held since a restart) and answers the caller with it.
	// Reserve: an agent-cap slot is reserved first, the only thing that
	// can fail: a refusal stores nothing (as with effStartAgent's and
	// effWaiters'). Existing names a turn the prompt id already admitted
	// (a retry), which answers instead (Admitting: its admission is not
	// durable yet, and the retry shares its outcome).
	effAdmit struct {
		Front, Reserve bool
		Existing       string
		Admitting      bool
	}
	// effStartTurn takes the head of the queue to the agent.
	effStartTurn struct{ PromptID string }
	// effAnswerPermissions answers open permission requests to the agent
	// and records them resolved in State: RequestID with the client's
	// answer (OptionID), else every open request of turn PromptID ("" =
	// all), cancelled.
	effAnswerPermissions struct {
		RequestID, PromptID string
		State               session.PermissionState
		OptionID            string
	}
	// effCancelAgent sends session/cancel and arms the cancel grace.
	effCancelAgent struct{}
	// effStopAgent stops an agent, as How says (stopHow); Why is kept as
	// the executor's message where it records one.
	effStopAgent struct {
		How stopHow
		Why string
	}
	// effPushRecovery announces the recovery plan if it changed (Always:
	// even unchanged, as start-up tells every client where each session
	// it repaired stands; FollowTask: start-up moves the task to the
	// state its session, which it keeps, implies).
	effPushRecovery struct{ Always, FollowTask bool }
	// effWaiters: a resume waits for the start in progress (or about to
	// begin; Reserve: a slot first), or is answered at once (Ready: the
	// agent runs); Notify: the start ended, and every resume waiting is
	// told how (Err).
	effWaiters struct {
		Reserve, Ready, Notify bool
		Err                    error
	}
	// effSetOption sends a mode or config choice to the running agent
	// (Now; stored once it took it), else stores it for the next start.
	effSetOption struct{ Now bool }
	// effAskPermission records the agent's question for PromptID ("" =
	// outside a turn) and puts it to the user; Declined, it is answered
	// "cancelled" instead (TooMany: the open-request bound).
	effAskPermission struct {
		PromptID          string
		Declined, TooMany bool
	}

	// effTimer arms one of the actor's timers (Timer): After from now
	// the actor takes what it stands for (timerKind). One of each kind
	// runs: arming it again replaces it. Restart: the agent's idle time
	// starts over now (timerIdle). Settle: what the settle decides
	// (timerSettle).
	effTimer struct {
		Timer   timerKind
		After   time.Duration
		Restart bool
		Settle  replaySettledInput
	}

	// A failed write's effect (writefail.go).
	//

	// effStartAgent gives the session an agent, as How says (startHow):
	// a new start (Restore its stored ACP session, whose replay is then
	// expected; HadHistory to report how the context was kept when none
	// can be restored; Reserve: a slot first, a refusal fails the start),
	// the agent a start made (the job's), or the agent on the executor
	// host (attach; at start-up, once the repairs are committed).
	effStartAgent struct {
		How                          startHow
		Restore, HadHistory, Reserve bool
	}
)

// stopHow is which agent effStopAgent stops, and how.
type stopHow uint8

const (
	// stopRunning ends the process of the running turn's agent (it
	// disconnected: its exit records the outcome).
	stopRunning stopHow = iota
	// stopRetire stops the agent on purpose, Why: it was idle too long,
	// or it will not serve the session again (it lost it). The session
	// keeps its identity; the next prompt, continue or resume restores it
	// in a new agent.
	stopRetire
	// stopDiscard stops the agent of a start the session no longer wants
	// and releases its slot.
	stopDiscard
	// stopOrphaned ends the agent process the previous daemon started for
	// the session (its executor is recorded stopped beside).
	stopOrphaned
	// stopClosing: a close began: exits from here on are expected, and
	// whatever its agent still sends is stale (a new generation): nothing
	// may follow session.closed. The caller stops the agent, off the
	// actor.
	stopClosing
	// stopShutdown: a daemon stop began: exits from here on are expected.
	// With Why, the agent is handed to the caller to stop off the actor
	// (stopping can take the whole grace period), which then records the
	// executor stopped, Why; without, it is left running (hosted: it
	// outlives the daemon).
	stopShutdown
)

// timerKind is which of the actor's timers effTimer arms.
type timerKind uint8

const (
	// timerIdle: the idle clock; it decides whether the agent has idled
	// for AgentIdleTimeout (idleCheckInput). After 0: the whole timeout,
	// from now.
	timerIdle timerKind = iota
	// timerSettle holds prompts back for ReplayGrace (the session is
	// settling while it runs): a load that replayed nothing may still
	// replay after its answer; then the load is settled (Settle, with
	// what it replayed meanwhile: replaySettledInput).
	timerSettle
	// timerReload reloads the session once its writes in flight have
	// reported (writefail.go), After 0: at once; the reload after the
	// next failure waits twice as long (nextBackoff).
	timerReload
	// timerTurnBudget rings when the running turn has run for its
	// budget's time (turnBudgetInput); timerStall when it may have been
	// silent for the stall limit (stallInput). Both are armed from the
	// turn and the budget (actor.armBudget), not from After alone.
	timerTurnBudget
	timerStall
	timerKinds
)

// startHow is how effStartAgent gives the session an agent.
type startHow uint8

const (
	// startNew starts (or restores) an agent.
	startNew startHow = iota
	// startAdopt ends the start in progress and makes the agent it
	// started the session's, which then finishes the start
	// (startSucceededInput).
	startAdopt
	// startAttach attaches to the agent on the executor host.
	startAttach
)

func (effRecord) isEffect()            {}
func (effAdmit) isEffect()             {}
func (effStartTurn) isEffect()         {}
func (effAnswerPermissions) isEffect() {}
func (effCancelAgent) isEffect()       {}
func (effStopAgent) isEffect()         {}
func (effPushRecovery) isEffect()      {}
func (effWaiters) isEffect()           {}
func (effSetOption) isEffect()         {}
func (effAskPermission) isEffect()     {}
func (effTimer) isEffect()             {}
func (effStartAgent) isEffect()        {}
