package sessions

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
)

// The actor's evolve: what each domain event a decision records (effRecord)
// changes of what the actor holds live, beside handing it to the event
// writer, which projects its rows, commits it and only then publishes it.
// decide builds the event from its view (decide.go: record); record folds
// it here, one case per event type, and emits it, so the actor's fields
// and the log it writes say the same.

// record folds event p, of the turn its PromptID names ("" for none), into
// the actor's live fields and emits it. It returns the write (nil when the
// event changes nothing: a session already in the state it names, or
// closed; or when the actor collects a batch).
func (a *actor) record(p session.EventPayload) *events.Pending {
	promptID := p.Base().PromptID
	if session.ApplyToSession(&a.sess, p, time.Now().UTC()) {
		return a.emit(a.draft(promptID, p))
	}
	switch p := p.(type) {
	case *session.SessionStateChangedData:
		// A terminal state is final: whatever still runs after a close
		// (an admission committing, a turn ending) cannot reopen the
		// session. The state the change leaves is the actor's: a decision
		// made on it never differs, but should an effect before this one
		// have moved it, the log says where it moved from.
		if a.sess.State == p.State || a.sess.State.Terminal() {
			return nil
		}
		p.PreviousState, a.sess.State = a.sess.State, p.State
		// Its projection moves the task too (events.TaskFollow).
	case *session.SessionResumedData:
		// The start is over, and a load's settle with it.
		a.settling = false
		a.sess.InjectContext, a.sess.ContextLost = p.Context()
		if p.Strategy == session.StrategyNativeLoad {
			// What the load replayed settles the last turn's delivery
			// (turn.delivered, after this event).
			defer a.reconcileDelivery()
		}
	case *session.TurnCancelRequestedData:
		t := a.turn(promptID)
		t.CancelRequested = true
		if r := a.running; r != nil && r.turn.PromptID == promptID {
			r.turn = t
		}
		a.turns[promptID] = t
	case *session.TurnCompletedData, *session.TurnFailedData, *session.TurnCancelledData:
		return a.endTurn(promptID, p)
	case *session.TurnInterruptedData:
		return a.interruptTurn(promptID, p)
	case *session.SessionRewoundData:
		// The turns it marks stay, out of the agent's context; an undo
		// unmarks them. The session keeps it for an undo.
		for ids, rewound := range map[*[]string]bool{&p.Rewound: true, &p.Restored: false} {
			for _, id := range *ids {
				if t, ok := a.turns[id]; ok {
					t.Rewound = rewound
					a.turns[id] = t
				}
			}
		}
		a.sess.LastRewind = p.Rewind()
	case *session.BudgetExceededData:
		if r := a.running; r != nil && r.turn.PromptID == promptID {
			r.budgetStop = p.Message
		}
	case *session.TurnStalledData, *session.TurnStallEndedData:
		t := a.turn(promptID)
		session.StallTurn(&t, p)
		if r := a.running; r != nil && r.turn.PromptID == promptID {
			r.turn = t
		}
		a.turns[promptID] = t
	case *session.UsageUpdatedData:
		a.sess.Usage = p.Session
		if p.Turn != nil && promptID != "" {
			t := a.turn(promptID)
			t.Usage = *p.Turn
			if r := a.running; r != nil && r.turn.PromptID == promptID {
				r.turn = t
			}
			a.turns[promptID] = t
		}
	case *session.PlanUpdatedData:
		a.sess.Plan = p.Entries
		// Text that follows the plan reads after it, not glued before it.
		a.splitMessage()
	case *session.MessageAddedData:
		return a.startMessage(p)
	case *session.MessageChunkData:
		// Appended to the running turn's open message: one row append,
		// no read.
		a.running.noteChunk(p.AgentMessageID)
	case *session.SessionOptionsChangedData:
		// What the agent announced: the raw mode state takes its current
		// mode (the event carries the modes as clients see them).
		a.commands, a.mode, a.configOptions = p.AvailableCommands, p.CurrentMode, p.ConfigOptions
		var id string
		if json.Unmarshal(p.CurrentMode, &id) == nil {
			a.modes = acp.WithCurrentMode(a.modes, id)
		}
	case *session.ToolCallStartedData, *session.ToolCallData:
		// Text that follows the call reads after it, not glued before it.
		a.splitMessage()
	case *session.ExecutorStatusData:
		// Decided from the view's executor (executorIs, stopExecutor,
		// exited): the record is the executor whole, but for the host
		// offsets, which are the outbox's bookkeeping.
		x := p.Executor()
		x.SessionID, x.HostOffset, x.HostOffsetBase, x.UpdatedAt = a.id, a.exec.HostOffset, a.exec.HostOffsetBase, a.exec.UpdatedAt
		a.exec = x
	case *session.PermissionResolvedData:
		// Resolved only while the store still holds it pending (a repair
		// after a reload may find its first write stored after all), and
		// numbered under the request's turn, which the row knows.
		return a.change(permissionResolved{Session: a.id, TaskID: a.sess.TaskID, RequestID: p.RequestID,
			End: permissionEnd{State: p.State, OptionID: p.OptionID}})
	}
	// An event that changes nothing the actor holds live needs no case:
	// it is emitted as decided (the replay test compares the actor with
	// the fold of its log, so a case left out where one is needed fails
	// there).
	return a.emit(a.draft(promptID, p))
}

// setState records the session's move to state s (session.state_changed),
// unless it is there already or closed.
func (a *actor) setState(s session.SessionState) {
	a.record(&session.SessionStateChangedData{State: s, PreviousState: a.sess.State})
}

// endTurn folds the end of turn promptID (p, its terminal event) into the
// actor: the turn leaves the agent or the queue, and its record takes the
// end's state and outcome, and the time it is recorded at. The event
// written is made from that record (turnEnded), so it carries that time
// and whatever the record held already (a cancel the user asked for).
func (a *actor) endTurn(promptID string, p session.EventPayload) *events.Pending {
	now := time.Now().UTC()
	if r := a.running; r != nil && r.turn.PromptID == promptID && a.ready() && !a.stopping {
		seen := now
		a.exec.LastSeenAt = &seen // its agent answered: seen now
	}
	a.leaveAgent(promptID)
	a.queue = slices.DeleteFunc(a.queue, func(q session.Turn) bool { return q.PromptID == promptID })
	t := a.turns[promptID]
	t.EndedAt = &now
	switch p := p.(type) {
	case *session.TurnCompletedData:
		t.State = session.TurnCompleted
		if p.StopReason != "" {
			t.StopReason = p.StopReason
		}
	case *session.TurnFailedData:
		t.State, t.ErrorCode, t.ErrorMessage = session.TurnFailed, p.Code, p.Message
	case *session.TurnCancelledData:
		t.State = session.TurnCancelled
		t.CancelRequested = t.CancelRequested || p.CancelRequested
		if p.StopReason != "" {
			t.StopReason = p.StopReason
		}
		if p.Reason == session.BudgetExceeded {
			t.ErrorCode, t.ErrorMessage = p.Reason, p.Message
		}
	}
	t.StalledAt = nil
	t.SessionID = a.id
	a.turns[promptID] = t
	w := a.change(turnEnded{TaskID: a.sess.TaskID, Turn: t})
	if session.StoppedByBudget(t) {
		// Continued like an interrupted turn: its report says what it
		// changed in the workspace, as an interruption's does.
		a.m.reportChanges(a.id, promptID)
	}
	return w
}

// leaveAgent forgets the running turn (and its cancel grace) when it is
// promptID, which is ending: the agent answered, or is gone.
func (a *actor) leaveAgent(promptID string) {
	r := a.running
	if r == nil || r.turn.PromptID != promptID {
		return
	}
	a.running = nil
	if r.cancelTimer != nil {
		r.cancelTimer.Stop()
	}
}
