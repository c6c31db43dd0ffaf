package sessions

import (
	"strings"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Late output: a remote host cut off past --host-lost-after has its
// sessions' turns interrupted (executor_lost), but its agents go on, and
// what they send is kept in the host's outbox. When the host comes back,
// the daemon takes it before it stops them (internal/executor: a lost
// Agent delivers until its exit): it belongs to the interrupted turn, as
// its late output, after a system message that says so, so that what the
// agent did is neither lost nor mistaken for the reply of a later turn.

// lateRun is the turn an executor host's loss interrupted, with the
// incarnation (gen) of the agent that ran it, whose updates are its late
// output, and where that output goes (run, like a running turn's).
type lateRun struct {
	gen int
	run *turnRun
	// announced: the system message that opens the late output is written.
	announced bool
	// takeUp: the agent was attached to for its late output after a
	// daemon restart (latetakeup.go); thenStart: a start waits for it.
	takeUp, thenStart bool
}

// lateNotice opens a turn's late output in the transcript.
const lateNotice = "Late output: the agent went on while its executor host was unreachable. " +
	"What it sent then follows, received when the host came back."

// isLate reports whether an update of incarnation gen is the lost agent's
// late output: it is that agent's, and the agent is no longer the
// session's (its loss took it; a new one may run since).
func (a *actor) isLate(gen int) bool {
	l := a.late
	return l != nil && gen == l.gen && (gen != a.gen || a.conn == nil)
}

// onLate records u as the interrupted turn's late output, as decideUpdate
// decides for a turn that runs: text joins its messages, tool calls and
// plans their records. What does not belong to a turn (commands, modes,
// options of an agent that is gone) is dropped.
func (a *actor) onLate(u acp.Update) {
	l := a.late
	if u.Kind == acp.UpdateLateEnd {
		a.endLate()
		return
	}
	v := a.view()
	v.Running, v.Replaying = l.run.view(), false
	in := updateInput{Kind: u.Kind, MessageID: u.MessageID, Block: u.Block != nil, Empty: u.Block == nil && u.Text == "", Current: true}
	var keep []effect
	for _, e := range decide(v, in).Effects {
		switch e.(type) {
		case effStartMessage, effAppendChunk, effRecordToolCall, effRecordPlan, effSplitMessage:
			keep = append(keep, e)
		}
	}
	if len(keep) == 0 {
		return
	}
	if !l.announced {
		l.announced = true
		a.addSystemMessage(l.run.turn.PromptID, lateNotice)
		l.run.split = true
	}
	// The effects act on the running turn: the late one, for this update.
	running := a.running
	a.running = l.run
	a.applyUpdate(decision{Effects: keep}, u)
	a.running = running
}

// endLate closes the late output: the lost agent sent its last (its host
// stopped it). A tool call it left unfinished then never finishes, so it
// gets the synthetic failed result the interruption gave the others, and
// the plan no longer sees it running.
func (a *actor) endLate() {
	l := a.late
	a.late = nil
	a.lateCandidate = ""
	if l.thenStart {
		// Outside the exit record's write (withRecord): the start writes
		// offsets of its own.
		a.mb.post(a.ensureAgent)
	}
	if !l.announced {
		return // nothing came late: the interruption failed what was open
	}
	promptID, cause := l.run.turn.PromptID, strings.ReplaceAll(l.run.turn.InterruptReason, "_", " ")
	a.write(func(tx *store.Store, emit events.Emit) error {
		_, err := failDanglingToolCalls(a.ctx(), tx, emit, a, promptID, cause)
		return err
	})
	a.pushRecovery()
}

// addSystemMessage adds a system message to turn promptID's transcript.
// Its id is taken now, as startMessage takes a message's, so that the
// transcript (in id order) shows it before the messages that follow it,
// as the log does, however the writer batches the two.
func (a *actor) addSystemMessage(promptID, text string) {
	id, idErr := a.m.store.NewMessageID(a.ctx())
	a.write(func(tx *store.Store, emit events.Emit) error {
		if idErr != nil {
			return idErr
		}
		m, err := tx.AddMessage(a.ctx(), session.Message{ID: id, SessionID: a.id, PromptID: promptID, Role: session.RoleSystem, Text: text})
		if err == nil {
			emit(messageAdded(a, m))
		}
		return err
	})
}
