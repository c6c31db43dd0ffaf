package sessions

import (
	"context"
	"time"

	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
)

// Closing a session: Manager.Close, the request flow of DELETE
// /session/{id}, and what its actor does for it.

// closeWriteGrace bounds how long Close waits, beyond the agent's stop
// grace, for its writes to commit once the client has gone away.
const closeWriteGrace = 30 * time.Second

// Close ends the session: the running turn is cancelled, the agent stopped
// and the session marked COMPLETED. Closing a closed session is a no-op.
//
// Once asked, a close runs to its end on a context of its own (bounded by
// the stop grace and closeWriteGrace), even if the client goes away: a
// session half closed would keep its agent and its actor until a restart.
func (m *Manager) Close(ctx context.Context, sessionID string) (session.Session, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.StopGrace+closeWriteGrace)
	defer cancel()
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return session.Session{}, err
	}
	c, err := mailbox.Call(ctx, a.mb, a.close)
	if err != nil {
		return session.Session{}, err
	}
	// From here the actor is retired whatever happens: it is stopping.
	defer m.retire(a)
	if c.conn != nil {
		c.conn.Stop()
	}
	// Record the stop and wait until it is durable.
	if c.open {
		if err := a.do(ctx, func() { a.closed(c.conn) }); err != nil {
			return session.Session{}, err
		}
	}
	if err := a.sync(ctx); err != nil {
		return session.Session{}, err
	}
	m.releaseWorktree(ctx, a)
	return m.store.GetSession(ctx, sessionID)
}

func (m *Manager) retire(a *actor) {
	m.mu.Lock()
	own := m.actors[a.id] == a
	if own {
		delete(m.actors, a.id)
	}
	m.mu.Unlock()
	a.mb.Close()
	if own && m.cfg.Ownership != nil {
		// A closed session needs no owner.
		m.cfg.Ownership.Release(context.WithoutCancel(m.life), a.id)
	}
}

// close ends the session and returns the agent connection for the caller
// to stop outside the actor (stopping can take the whole grace period);
// closed then records the stop and the final session.closed event.
func (a *actor) close() (closing, error) {
	d, err := a.decideAndPerform(closeCmd{})
	if err != nil || len(d.Effects) == 0 {
		return closing{}, err // closed already
	}
	return closing{conn: a.conn, open: true}, nil
}

// closing is what close hands to the caller: the agent to stop, and
// whether this call is the one that closed the session.
type closing struct {
	conn runtimes.Agent
	open bool
}

// closed records the stopped agent and ends the session's log with
// session.closed, the last event its streams deliver. The event carries
// the session's final state and its write stores it too: should the
// state change before it have been refused, the actor, retired now, never
// reloads, and the row must still follow the log.
func (a *actor) closed(conn runtimes.Agent) {
	a.recordStopped(conn, "")
	state := a.sess.State
	a.emit(a.draft("", &session.SessionClosedData{State: state}))
}
