package sessions

import (
	"fmt"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
)

// This file is the actor's side of decide (decide.go): it copies the view
// a decision needs out of the actor, and performs the effects a decision
// returns, with the writes and agent calls they stand for.

// view is the session as decide sees it now.
func (a *actor) view() view {
	v := view{State: a.sess.State, Stopping: a.stopping, Settling: a.settling, HasSlot: a.slot != nil, Replaying: a.replaying,
		Reloading: a.reloading, Backoff: a.backoff,
		Connected: a.conn != nil, Hosted: a.hosted(), StoredSession: a.exec.ResumeToken != "", HasTurns: len(a.turns) > 0,
		QueueHeld: a.sess.QueueHeld, QueueLimit: a.m.cfg.QueueLimit, Version: a.version,
		OpenPermissions: len(a.perms), MaxPermissions: a.m.cfg.MaxPendingPermissions,
		Modes: a.modes, ConfigOptions: a.configOptions}
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
		MessageID: r.msgID, Split: r.split, OpenMessage: r.openMsg != 0, OpenRole: r.openRole}
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
	adm, admitting := a.admitting[promptID]
	return &turnView{PromptID: t.PromptID, State: t.State, Kind: t.Kind, CancelRequested: t.CancelRequested,
		Admitting: admitting, ReleasedHold: adm.released}
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
	a.perform(d.Effects...)
	return d, nil
}

// perform carries out the effects that need nothing but the actor and
// what the effect carries. The others are performed by the code that
// decided, which holds what they need that is no plain value, or answers
// its caller with them: a prompt's or a continuation's admission
// (effEnqueue, effAnswerExisting: the turn to answer with), a resume
// (effAwaitStart: the caller's channel), an option (effSetOption: the
// agent to send it to, or the write that stores it), a permission request
// (effAskPermission: the agent's question and its reply channel) and a
// client's answer (effResolvePermission: the write to wait for), an
// update's content (onUpdate: effRecordChunk, effRecordToolCall,
// effAdoptOptions, effIgnoreUpdate), what a reload read (reload:
// effReload), a start's outcome (onAgentStarted: effDiscardStart,
// effAdoptAgent), and the agent a shutdown hands over (shutdown:
// effStopAgent).
func (a *actor) perform(effs ...effect) {
	for _, e := range effs {
		a.performOne(e)
	}
}

func (a *actor) performOne(e effect) {
	switch e := e.(type) {
	case effRecord:
		a.record(e.Event)
	case effStartTurn:
		a.startTurn(e.PromptID)
	case effInterruptTurn:
		a.leaveAgent(e.PromptID)
		a.interruptTurn(a.turns[e.PromptID], e.Reason, acp.Exit(e.Exit), e.Cause)
		if e.Reason == reasonExecutorLost {
			a.late = &lateRun{gen: a.gen, run: &turnRun{turn: a.turns[e.PromptID], split: true}}
		}
	case effRetireAgent:
		a.log.Info("retiring the agent", "why", e.Why)
		a.retireAgent(e.Why)
	case effIdleWait:
		if e.Busy {
			a.activeAt = time.Now()
		}
		a.idleTimer.Reset(e.Left)
	case effClosePermissions:
		a.closePermissions(e.PromptID, e.State)
	case effCancelAgent:
		a.cancelAgent(a.running)
	case effStopRunningAgent:
		r := a.running
		a.m.spawn(func() { r.conn.Stop() })
	case effPushRecovery:
		if e.Always {
			a.announceRecovery()
		} else {
			a.pushRecovery()
		}
	case effMarkStopping:
		a.stopping = true
		if e.Close {
			a.gen++
		}
	case effAgentExited:
		a.settling = false
		if e.Expected {
			a.conn = nil
		} else {
			a.recordExit(acp.Exit(e.Exit), e.Cause)
		}
		if !e.KeepSlot {
			a.dropSlot()
		}
	case effRecordStartError:
		a.starting = false
		a.recordStartError(e.Err)
		a.dropSlot()
	case effNotifyWaiters:
		a.notifyWaiters(e.Err)
	case effEnsureAgent:
		a.ensureAgent()
	case effStartNext:
		a.startNext()
	case effArmIdle:
		a.armIdle()
	case effSplitMessage:
		a.splitMessage()
	case effWriteFailed:
		a.reportFailure(e)
	case effRestartInterrupt:
		a.restartInterrupt(e.PromptID, e.Running)
	case effRecordExecutor:
		if e.StopOrphan {
			a.stopOrphan()
		}
		a.exec.Status = e.Status
		if e.Status == session.ExecutorStopped {
			a.exec.ErrorMessage = e.Why
		}
		a.saveExecutor()
	case effTaskFollow:
		a.change(events.TaskFollow{Session: a.id, TaskID: a.sess.TaskID, State: a.sess.State})
	case effStartAgent:
		a.startAgent(e)
	case effAwaitReplay:
		a.awaitReplay(e)
	case effSettleAdmission:
		a.settleAdmission(e)
	case effAttachAgent:
		a.attach()
	case effRestartAgent:
		a.ensureAgent()
	case effAdoptAgent, effAdoptOptions, effAnswerExisting, effAskPermission,
		effAwaitStart, effDiscardStart, effEnqueue, effIgnoreUpdate, effRecordToolCall, effReload,
		effResolvePermission, effRecordChunk, effSetOption, effStopAgent:
		// Command-specific: performed by the loop of the command or input
		// that decided it (see perform). Reaching here is a bug in that
		// loop, not something to guess at. A new effect kind must be
		// named in this switch (go-check-sumtype, make vet).
		a.log.Error("effect not performed", "effect", fmt.Sprintf("%T", e))
	}
}
