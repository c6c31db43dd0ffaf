package sessions

import (
	"context"
	"strings"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/credentials"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
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
	// daemon restart (takeUpLate); thenStart: a start waits for it.
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
	in := updateOf(u, true)
	in.Late = true
	d := decide(v, in)
	if len(d.Effects) == 0 {
		return
	}
	if !l.announced {
		l.announced = true
		// Without the record's offset, which the record's own write
		// carries: the writer may commit the notice alone, and a restart
		// then would attach past a record the store does not have.
		off := a.recordOffset
		a.recordOffset = 0
		a.addSystemMessage(l.run.turn.PromptID, lateNotice)
		a.recordOffset = off
		l.run.split = true
	}
	// The effects act on the running turn: the late one, for this update.
	running := a.running
	a.running = l.run
	_ = a.perform(d, nil)
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
		a.mb.Post(a.ensureAgent)
	}
	if !l.announced {
		return // nothing came late: the interruption failed what was open
	}
	promptID, cause := l.run.turn.PromptID, strings.ReplaceAll(l.run.turn.InterruptReason, "_", " ")
	a.change(toolCallsFailed{Session: a.id, TaskID: a.sess.TaskID, PromptID: promptID, Cause: cause})
	a.pushRecovery()
}

// addSystemMessage adds a system message to turn promptID's transcript.
// Its id is taken now, as startMessage takes a message's, so that the
// transcript (in id order) shows it before the messages that follow it,
// as the log does, however the writer batches the two.
func (a *actor) addSystemMessage(promptID, text string) {
	id, err := a.m.store.NewMessageID(a.ctx())
	if err != nil {
		a.change(noID{a.id, err})
		return
	}
	a.emit(a.messageDraft(session.Message{ID: id, PromptID: promptID, Role: session.RoleSystem, Text: text}, "", 0))
}

// Late output across a daemon restart (issue 28, item 5). The lost
// agent's late output (above) is awaited in memory: a daemon that
// stops while the host is lost, or while the output is being delivered,
// forgets it, and the agent would run on its host for good, its records
// kept there, until a later start replaced the session. The store says
// enough to take it up again: the session's last turn that ran was
// interrupted by executor_lost, its executor row names the host and what
// was committed (HostOffset, HostOffsetBase), and no agent has been
// started since (the row is not ready). Whether the host still holds the
// agent only the host can say: when it connects, the sessions it holds
// are taken up (takeUpLateOutput), and the actor attaches to the agent as
// to a lost one (executor.Host.AttachLate), from the committed offset:
// the rest of its records become the turn's late output, then the host
// stops it. A start the session asks for meanwhile (a continue, a prompt,
// a resume) waits until the late output is in: before anything else. A
// host lost again fails the take-up at once: the start is then tried
// (and refused, executor_unavailable), the take-up left to the host's
// next connection.

// takeUpLateOutput has the sessions an executor host holds checked for
// late output to take up, each time the host connects (lateCandidate
// says which are). With several nodes, a session is taken up by the node
// that owns it, or can take its lease.
func (m *Manager) takeUpLateOutput() {
	w, ok := m.cfg.Executors.(runtimes.ConnectWatcher)
	if !ok {
		return
	}
	w.WatchConnects(m.life, func(ids []string) {
		for _, id := range ids {
			if strings.HasPrefix(id, credentials.CheckPrefix) {
				continue
			}
			m.mu.Lock()
			a := m.actors[id]
			m.mu.Unlock()
			if a == nil {
				// Late output is a lost host's: its session's executor is
				// not live. One whose executor is live is attached by the
				// start-up repair or, on a node of a cluster, the takeover
				// scan, which shares a dead node's sessions out: loading
				// (and leasing) every session the host names here piled
				// them onto whichever node reached the host first.
				ex, err := m.store.GetExecutor(m.life, id)
				if err != nil || executorLive(ex.Status) {
					continue
				}
				if a, err = m.actor(m.life, id); err != nil {
					continue // not ours (another node's), or no such session
				}
			}
			a.mb.Post(func() { a.takeUpLate(false) })
		}
	})
}

// lostTurnOf is the turn whose late output a session loaded from the
// store may still have on its host: its last turn that ran, if its host's
// loss interrupted it and no agent was started since. turns are in seq
// order.
func lostTurnOf(exec session.Executor, turns []session.Turn) string {
	switch exec.Status {
	case session.ExecutorReady, session.ExecutorReconnecting, session.ExecutorStarting:
		return "" // an agent is attached again, or being started
	}
	if exec.Runtime == session.RuntimeStandalone || exec.Runtime == "" {
		return ""
	}
	for i := len(turns) - 1; i >= 0; i-- {
		t := turns[i]
		if t.State == session.TurnQueued {
			continue
		}
		if t.State == session.TurnInterrupted && t.InterruptReason == reasonExecutorLost {
			return t.PromptID
		}
		return ""
	}
	return ""
}

// takeUpLate attaches to the lost agent of the session's lateCandidate
// turn to take its late output, if it may still have some; thenStart
// asks for ensureAgent once that is over. It reports whether the late
// output is being taken up (a start then waits for it).
func (a *actor) takeUpLate(thenStart bool) bool {
	if l := a.late; l != nil && l.takeUp {
		l.thenStart = l.thenStart || thenStart
		return true
	}
	if a.lateCandidate == "" || a.late != nil || a.conn != nil || a.starting || a.stopping || a.sess.State.Terminal() {
		return false
	}
	t, ok := a.turns[a.lateCandidate]
	if !ok || t.State != session.TurnInterrupted || t.InterruptReason != reasonExecutorLost {
		a.lateCandidate = ""
		return false
	}
	rt, err := a.m.cfg.Executors.Runtime(a.exec.Runtime, a.exec.Host)
	la, ok := rt.(runtimes.LateAttacher)
	if err != nil || !ok {
		a.lateCandidate = ""
		return false
	}
	a.gen++
	gen := a.gen
	l := &lateRun{gen: gen, run: &turnRun{turn: t, split: true}, takeUp: true, thenStart: thenStart}
	a.late = l
	from := uint64(0)
	if a.exec.HostOffset > a.exec.HostOffsetBase {
		from = a.exec.HostOffset - a.exec.HostOffsetBase
	}
	req := runtimes.AttachRequest{SessionID: a.id, From: from, Handler: &agentHandler{a: a, gen: gen}, Logger: a.log}
	a.m.spawn(func() {
		ctx := a.m.life
		announced, out, err := a.lateSoFar(ctx, t.PromptID)
		if err != nil {
			a.mb.Post(func() { a.lateAttached(l, nil, err) })
			return
		}
		// Posted before the attach, whose records the handler posts
		// after it: the first late record finds where the output stands.
		a.mb.Post(func() {
			if a.late == l {
				l.announced = announced
				if announced {
					// The late output began before the restart: it goes on
					// where the log left it.
					l.run = &turnRun{turn: t}
					l.run.resumeOutput(out)
				}
			}
		})
		conn, err := la.AttachLate(ctx, req)
		a.mb.Post(func() { a.lateAttached(l, conn, err) })
	})
	a.log.Info("taking up the late output of a turn its executor host's loss interrupted", "prompt", t.PromptID, "from", from)
	return true
}

// lateSoFar reads what the store has of turn promptID's late output:
// whether its notice is written, and where its output stands.
func (a *actor) lateSoFar(ctx context.Context, promptID string) (announced bool, out turnOutput, err error) {
	msgs, err := a.m.store.ListTurnMessages(ctx, a.id, promptID)
	if err != nil {
		return false, out, err
	}
	for _, m := range msgs {
		if m.Role == session.RoleSystem && m.Text == lateNotice {
			announced = true
		}
	}
	if !announced {
		return false, out, nil
	}
	out, err = a.m.turnOutputOf(ctx, a.id, promptID)
	return true, out, err
}

// lateAttached follows the attach that takes up l: a host that holds no
// such session had nothing late left; one that could not be reached is
// asked again when it connects (or at the next start). Attached, the
// agent's records come as late output until its exit (endLate), or its
// host forgets it without one (lateGone).
func (a *actor) lateAttached(l *lateRun, conn runtimes.Agent, err error) {
	if a.late != l {
		return // over already
	}
	if err != nil {
		a.late = nil
		if errcode.Is(err, errcode.HostSessionUnknown) {
			a.lateCandidate = ""
		}
		a.log.Info("late output not taken up", "err", err)
		if l.thenStart {
			// Not ensureAgent: it would try the take-up again, at once
			// (a lost host fails it without waiting), for good.
			a.ensureAgentNow()
		}
		return
	}
	if gone := conn.Gone(); gone != nil {
		a.m.spawn(func() {
			select {
			case <-gone:
				a.mb.Post(func() { a.lateGone(l) })
			case <-a.m.life.Done():
			}
		})
	}
}

// lateGone: the host is done with the lost agent. Its exit record, if it
// came, ended the late output already (endLate); without one (the host no
// longer held the session) nothing more comes.
func (a *actor) lateGone(l *lateRun) {
	if a.late != l || a.m.life.Err() != nil {
		return // over, or the daemon is stopping (the next one takes it up)
	}
	a.late = nil
	a.lateCandidate = ""
	if l.thenStart {
		a.ensureAgent()
	}
}
