package sessions

import (
	"context"
	"strings"
	"sync"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/executor"
	"github.com/tether/tether/internal/session"
)

// Late output across a daemon restart (issue 28, item 5). The lost
// agent's late output (late.go) is awaited in memory: a daemon that
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
// a resume) waits until the late output is in: before anything else.

// lateAttacher is a host runtime that can take up a lost agent's late
// output (executor.Host.AttachLate).
type lateAttacher interface {
	AttachLate(ctx context.Context, req AttachRequest) (Agent, error)
}

// goneAgent is an agent that says when its host is done with it
// (executor.Agent.Gone).
type goneAgent interface {
	Gone() <-chan struct{}
}

// AttachLate takes up a lost agent's late output on the host.
func (r hostRuntime) AttachLate(ctx context.Context, req AttachRequest) (Agent, error) {
	a, err := r.h.AttachLate(ctx, req.SessionID, req.From, req.Handler)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// connectWatcher is an Executors whose hosts say when they connect, and
// which sessions they hold then.
type connectWatcher interface {
	WatchConnects(ctx context.Context, fn func(sessionIDs []string))
}

// WatchConnects calls fn with the sessions an executor host holds each
// time it connects, until ctx ends.
func (x *HostExecutors) WatchConnects(ctx context.Context, fn func(sessionIDs []string)) {
	var wg sync.WaitGroup
	for _, in := range x.Pool.List() {
		h, err := x.Pool.Get(in.Name)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			watchConnects(ctx, h, fn)
		}()
	}
	wg.Wait()
}

// watchConnects calls fn at each connection of h (after it came up from
// being down), with the sessions its welcome listed.
func watchConnects(ctx context.Context, h *executor.Host, fn func(sessionIDs []string)) {
	for up := false; ; {
		changed := h.Changed()
		info := h.Info()
		switch now := info.State == executor.StateConnected; {
		case now && !up:
			fn(info.HostSessions)
			up = true
		case !now:
			up = false
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// takeUpLateOutput has the sessions an executor host holds checked for
// late output to take up, each time the host connects (lateCandidate
// says which are). With several nodes, a session is taken up by the node
// that owns it, or can take its lease.
func (m *Manager) takeUpLateOutput() {
	w, ok := m.cfg.Executors.(connectWatcher)
	if !ok {
		return
	}
	w.WatchConnects(m.life, func(ids []string) {
		for _, id := range ids {
			if strings.HasPrefix(id, credentialsCheckPrefix) {
				continue
			}
			a, err := m.actor(m.life, id)
			if err != nil {
				continue // not ours (another node's, or no such session)
			}
			a.mb.post(func() { a.takeUpLate(false) })
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
	la, ok := rt.(lateAttacher)
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
	req := AttachRequest{SessionID: a.id, From: from, Handler: &agentHandler{a: a, gen: gen}, Logger: a.log}
	a.m.spawn(func() {
		ctx := a.m.life
		announced, out, err := a.lateSoFar(ctx, t.PromptID)
		if err != nil {
			a.mb.post(func() { a.lateAttached(l, nil, err) })
			return
		}
		// Posted before the attach, whose records the handler posts
		// after it: the first late record finds where the output stands.
		a.mb.post(func() {
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
		a.mb.post(func() { a.lateAttached(l, conn, err) })
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
	out.typ, out.payload, err = a.m.store.LastTurnEvent(ctx, a.id, promptID, turnOutputTypes)
	if err == nil {
		_, out.added, err = a.m.store.LastTurnEvent(ctx, a.id, promptID, []string{events.MessageAdded})
	}
	return true, out, err
}

// lateAttached follows the attach that takes up l: a host that holds no
// such session had nothing late left; one that could not be reached is
// asked again when it connects (or at the next start). Attached, the
// agent's records come as late output until its exit (endLate), or its
// host forgets it without one (lateGone).
func (a *actor) lateAttached(l *lateRun, conn Agent, err error) {
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
			a.ensureAgent()
		}
		return
	}
	if g, ok := conn.(goneAgent); ok {
		a.m.spawn(func() {
			select {
			case <-g.Gone():
				a.mb.post(func() { a.lateGone(l) })
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
