package sessions

import (
	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
)

// This file is the actor's side of decide (decide.go): it copies the view
// a decision needs out of the actor, and performs the effects a decision
// returns, with the writes and agent calls they stand for.

// view is the session as decide sees it now.
func (a *actor) view() view {
	v := view{State: a.sess.State, Stopping: a.stopping, Settling: a.settling, Rewinding: a.rewinding, HasSlot: a.slot != nil, Replaying: a.replaying,
		Reloading: a.reloading, Backoff: a.backoff,
		Connected: a.conn != nil, Waiting: len(a.waiters) > 0, Hosted: a.hosted(), StoredSession: a.exec.ResumeToken != "", HasTurns: len(a.turns) > 0,
		QueueHeld: a.sess.QueueHeld, QueueLimit: a.m.cfg.QueueLimit, Version: a.version,
		OpenPermissions: len(a.perms), MaxPermissions: a.m.cfg.MaxPendingPermissions,
		Modes: a.modes, ConfigOptions: a.configOptions, Commands: a.commands, Mode: a.mode, Executor: a.exec,
		Title: a.sess.Title, TitleSource: a.sess.TitleSource, Archived: a.sess.Archived, Usage: a.sess.Usage, Budget: a.sess.Budget}
	switch {
	case a.starting:
		v.Agent = agentStarting
	case a.ready():
		v.Agent = agentReady
	}
	v.Running = a.running.view()
	v.Queue = make([]queuedView, len(a.queue))
	for i, t := range a.queue {
		_, admitting := a.admitting[t.PromptID]
		v.Queue[i] = queuedView{PromptID: t.PromptID, Admitting: admitting}
	}
	v.Last = a.turnView(a.lastPromptID)
	return v
}

// view is how decide sees the turn r (nil: none).
func (r *turnRun) view() *runningView {
	if r == nil {
		return nil
	}
	return &runningView{PromptID: r.turn.PromptID, CancelRequested: r.turn.CancelRequested,
		MessageID: r.msgID, Split: r.split, OpenMessage: r.openMsg, OpenRole: r.openRole, Usage: r.turn.Usage,
		Stalled: r.turn.StalledAt != nil, BudgetStop: r.budgetStop != "", BudgetMessage: r.budgetStop}
}

// viewOf is the view with Turn set to the turn promptID names, if any.
func (a *actor) viewOf(promptID string) view {
	v := a.view()
	v.Turn = a.turnView(promptID)
	return v
}

// turnView describes the turn promptID names, or nil when there is none.
func (a *actor) turnView(promptID string) *turnView {
	if promptID == "" {
		return nil
	}
	t, ok := a.turns[promptID]
	if !ok {
		return nil
	}
	_, admitting := a.admitting[promptID]
	return &turnView{PromptID: t.PromptID, State: t.State, Kind: t.Kind, CancelRequested: t.CancelRequested,
		Admitting: admitting}
}

// turn is the actor's current record of a turn (the running one's own
// copy when it runs).
func (a *actor) turn(promptID string) session.Turn {
	if r := a.running; r != nil && r.turn.PromptID == promptID {
		return r.turn
	}
	return a.turns[promptID]
}

// decideAndPerform decides in on the actor's current state and performs
// what was decided; a refusal is returned.
func (a *actor) decideAndPerform(in input) (decision, error) {
	d := decide(a.view(), in)
	if d.Refusal != nil {
		return d, d.Refusal
	}
	return d, a.perform(d, nil)
}

// job is what the command or input a decision was made for holds that its
// effects need and is no plain value (the turn to admit, the agent's
// question and its reply channel, the client's answer, a start's
// report), and what those effects
// answer it with (the admitted turn, the write to wait for, the request's
// id, the agent to stop or to send an option to). The caller fills the
// first part, performs, and reads the second: no caller performs an
// effect itself.
type job struct {
	// admit is the turn a prompt or a continuation admits (effAdmit).
	admit *session.Turn
	// ask is the agent's question and where its answer goes
	// (effAskPermission); answer the client's answer to one
	// (effAnswerPermissions of RequestID).
	ask    *permissionAsk
	answer acp.PermissionOutcome
	// option stores a mode or config choice (effSetOption).
	option func(a *actor) *events.Pending
	// start is the report of the start decided on (startAdopt,
	// stopDiscard).
	start *startReport
	// repair, at start-up, collects what is done once the repairs are
	// committed (attach, start again) and the turns interrupted.
	repair *repairTally
	// waiter is a resume's channel (effWaiters).
	waiter chan error

	// What the effects answer.
	res     *PromptResult   // effAdmit: the turn, and the write admitting it
	pending *events.Pending // effAnswerPermissions of RequestID, effSetOption stored
	conn    runtimes.Agent  // effSetOption Now: the agent to send it to, with acpID
	acpID   string
	permID  string   // effAskPermission: the request's id ("" declined)
	stop    stopping // effStopAgent stopShutdown: the agent to stop, and why
}

// perform carries out d's effects in order, for the command or input j
// (nil: one that holds nothing an effect needs). An effect that fails
// (an agent-cap slot refused before anything is stored) stops the ones
// after it, and its error is returned.
func (a *actor) perform(d decision, j *job) error {
	if j == nil {
		j = &job{}
	}
	for _, e := range d.Effects {
		if err := a.performOne(e, j); err != nil {
			return err
		}
	}
	for _, in := range d.Then {
		a.decideAgain(in, j)
	}
	return nil
}

// performOne is the one performer: every kind of effect is carried out
// here, with what the job holds.
func (a *actor) performOne(e effect, j *job) error {
	switch e := e.(type) {
	case effRecord:
		a.record(e.Event)
	case effAdmit:
		return a.performAdmit(e, j)
	case effStartTurn:
		a.startTurn(e.PromptID)
	case effAnswerPermissions:
		if e.RequestID == "" {
			a.closePermissions(e.PromptID, e.State)
			break
		}
		p := a.perms[e.RequestID]
		j.pending = a.resolve(e.RequestID, e.State, e.OptionID)
		delete(a.perms, e.RequestID)
		p.reply <- j.answer
	case effCancelAgent:
		a.cancelAgent(a.running)
	case effStopAgent:
		a.stopAgent(e, j)
	case effPushRecovery:
		if e.FollowTask {
			a.change(events.TaskFollow{Session: a.id, TaskID: a.sess.TaskID, State: a.sess.State})
		}
		a.announce(e.Always)
	case effWaiters:
		return a.performWaiters(e, j)
	case effTimer:
		a.arm(e)
	case effArmBudget:
		a.armBudget()
	case effSetOption:
		if e.Now {
			j.conn, j.acpID = a.conn, a.acpID
		} else {
			j.pending = j.option(a)
		}
	case effAskPermission:
		a.performAsk(e, j)
	case effStartAgent:
		a.performStart(e, j)
	}
	return nil
}

// decideAgain decides in on the state a decision's effects left
// (decision.Then), and performs it. At start-up, an agent to start is
// started once the repairs are committed.
func (a *actor) decideAgain(in input, j *job) {
	switch in.(type) {
	case ensureAgentInput:
		if j.repair != nil {
			j.repair.restart = true
			return
		}
		a.ensureAgent()
	default:
		_ = a.perform(decide(a.view(), in), nil)
	}
}

// performStart gives the session an agent (effStartAgent).
func (a *actor) performStart(e effStartAgent, j *job) {
	switch e.How {
	case startNew:
		a.startAgent(e)
	case startAdopt:
		a.starting = false
		a.adoptAgent(j.start.plan, j.start.out)
	case startAttach:
		if j.repair != nil {
			j.repair.attach = true // once the repairs are committed
			return
		}
		a.attach()
	}
}

// stopAgent stops an agent as e says (effStopAgent).
func (a *actor) stopAgent(e effStopAgent, j *job) {
	switch e.How {
	case stopRunning:
		r := a.running
		a.m.spawn(func() { r.conn.Stop() })
	case stopRetire:
		a.log.Info("retiring the agent", "why", e.Why)
		a.retireAgent(e.Why)
	case stopDiscard:
		p, out := j.start.plan, j.start.out
		if out.conn != nil {
			a.m.spawn(func() { out.conn.Stop(); p.slot.release() })
		} else {
			p.slot.release()
		}
		if a.slot == p.slot {
			a.slot = nil
		}
	case stopOrphaned:
		a.stopOrphan()
	case stopClosing:
		a.stopping = true
		a.gen++
	case stopShutdown:
		a.stopping = true
		if e.Why != "" {
			j.stop = stopping{conn: a.conn, why: e.Why}
		}
	}
}

// performWaiters makes a resume wait for the start, or tells the resumes
// waiting how it went (effWaiters).
func (a *actor) performWaiters(e effWaiters, j *job) error {
	switch {
	case e.Notify:
		a.notifyWaiters(e.Err)
	case e.Ready:
		j.waiter <- nil
	default:
		if e.Reserve {
			if err := a.needAgent(); err != nil {
				return err
			}
		}
		a.waiters = append(a.waiters, j.waiter)
	}
	return nil
}
