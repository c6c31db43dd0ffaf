package sessions

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/session"
)

// ResumeOnStart restores resumable sessions in the background (eager mode),
// newest first, at most concurrency at a time. Failures are visible on each
// session; they never stop the others. It respects the agent caps: once the
// daemon-wide cap is reached the rest stay lazy (restored on first use).
//
// The sessions start-up reconciliation brought to life (an actor each) are
// decided on their own, each once the attach of its hosted agent, if any,
// has settled: an agent the host still runs needs nothing, and one the
// host lost (a reboot took the host and its agents) has its turn
// interrupted (executor_lost) and is then restored like any other. A host
// slow to answer so holds up no other session.
func (m *Manager) ResumeOnStart(ctx context.Context, concurrency int) {
	if concurrency <= 0 {
		concurrency = 4
	}
	e := &eagerResume{m: m, sem: make(chan struct{}, concurrency)}
	live := map[string]bool{}
	for _, a := range m.actorList() {
		live[a.id] = true
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			if settled := m.awaitAttach(ctx, a); settled != nil {
				select {
				case <-settled:
				case <-a.mb.Done():
					return
				case <-ctx.Done():
					return
				}
			}
			e.resume(ctx, a.id)
		}()
	}
	sessions, err := m.store.ListSessionsByState(ctx, session.SessionWaitingForInput)
	if err != nil {
		m.cfg.Logger.Error("eager resume: list sessions", "err", err)
	}
	sort.Slice(sessions, func(i, j int) bool { return sessions[i].UpdatedAt.After(sessions[j].UpdatedAt) })
	for _, s := range sessions {
		if e.full.Load() {
			break
		}
		if !live[s.ID] {
			e.resume(ctx, s.ID)
		}
	}
	e.wg.Wait()
	if e.full.Load() {
		m.cfg.Logger.Info("eager resume stopped at the agent limit; the other sessions restore on first use", "maxAgents", m.cfg.MaxAgents)
	}
}

// eagerResume is one ResumeOnStart pass: its slots, and whether the
// daemon-wide agent cap was reached.
type eagerResume struct {
	m    *Manager
	sem  chan struct{}
	wg   sync.WaitGroup
	full atomic.Bool
}

// resume restores the session in a slot of the pass if it waits for
// input and needs its agent.
func (e *eagerResume) resume(ctx context.Context, id string) {
	m := e.m
	if e.full.Load() {
		return
	}
	st, err := m.Status(ctx, id)
	if err != nil || st.Session.State != session.SessionWaitingForInput || !st.NeedsResume || !st.IsResumable {
		return
	}
	if m.knownAuthFailure(st.Executor, st.Session.AgentProfileID) {
		m.cfg.Logger.Info("eager resume skipped: the agent asked for credentials with this profile; change the profile or resume the session",
			"session", id, "agent", st.Session.AgentProfileID)
		return
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	e.wg.Add(1)
	go func() {
		defer func() { <-e.sem; e.wg.Done() }()
		_, err := m.Resume(ctx, id)
		var de *errcode.Error
		switch {
		case errors.As(err, &de) && de.Code == errcode.AgentLimitReached:
			if de.Details["scope"] == "daemon" {
				e.full.Store(true)
			}
			m.cfg.Logger.Info("eager resume skipped: agent limit", "session", id, "err", err)
		case err != nil:
			m.cfg.Logger.Warn("eager resume failed", "session", id, "err", err)
		}
	}()
}

// actorList are the sessions that have an actor now.
func (m *Manager) actorList() []*actor {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Collect(maps.Values(m.actors))
}

// awaitAttach returns a channel closed once the attach of a's hosted
// agent has settled (settleAttach), or nil when no attach is open. It
// asks on the actor, after whatever was posted to it before: an attach
// start-up reconciliation posted is open by then.
func (m *Manager) awaitAttach(ctx context.Context, a *actor) <-chan struct{} {
	ch, err := mailbox.Call(ctx, a.mb, func() (chan struct{}, error) {
		if !a.attachOpen {
			return nil, nil
		}
		ch := make(chan struct{})
		a.attachWaiters = append(a.attachWaiters, ch)
		return ch, nil
	})
	if err != nil {
		return nil
	}
	return ch
}
