package sessions

import (
	"context"
	"sync"
	"time"

	"github.com/tether/tether/internal/mailbox"
)

// Ownership is the cluster's lease table (internal/cluster.Leases) when
// several tetherd nodes share one database: a node brings a session to
// life (its actor) only while it holds the session's lease. Nil when this
// daemon is the database's only writer.
type Ownership interface {
	// Acquire takes the session's lease for this node, or fails with
	// errcode.SessionOwnedElsewhere when another live node holds it.
	Acquire(ctx context.Context, sessionID string) (int64, error)
	// Release gives the session's lease up.
	Release(ctx context.Context, sessionID string)
	// Generation is the generation of the session's lease this node
	// holds now (false: none).
	Generation(sessionID string) (int64, bool)
}

// leaseOf is the generation of the session's lease this node holds now
// (0 alone, or without one).
func (m *Manager) leaseOf(sessionID string) int64 {
	if m.cfg.Ownership == nil {
		return 0
	}
	gen, _ := m.cfg.Ownership.Generation(sessionID)
	return gen
}

// Drop unloads sessions whose leases this node lost (another node took
// them, or this node could not renew them in time). Their actors stop
// as at a shutdown: a standalone agent is stopped (its next owner could
// not reach it; its turn is interrupted there), a hosted one is left
// running on its host for the next owner, which attaches to it. Nothing
// is written for them: it would be refused anyway (fenced).
func (m *Manager) Drop(ids []string) { m.unload(ids, "session unloaded: this node lost its lease") }

// HandOver unloads sessions this node gives to another (cluster.Rebalance)
// as Drop does; their hosted agents stay on their hosts for the next owner.
func (m *Manager) HandOver(ids []string) { m.unload(ids, "session handed over to another node") }

// Movable picks, of sessions ids, those that can be handed over without
// interrupting a turn: loaded here, their agent on an executor host,
// attached and settled, nothing being started or stopped.
func (m *Manager) Movable(ids []string) []string {
	var out []string
	for _, id := range ids {
		m.mu.Lock()
		a := m.actors[id]
		m.mu.Unlock()
		if a == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(m.life, time.Second)
		ok, err := mailbox.Call(ctx, a.mb, func() (bool, error) {
			return a.hosted() && a.conn != nil && !a.starting && !a.attachOpen && !a.stopping, nil
		})
		cancel()
		if err == nil && ok {
			out = append(out, id)
		}
	}
	return out
}

func (m *Manager) unload(ids []string, why string) {
	m.mu.Lock()
	var actors []*actor
	for _, id := range ids {
		if a := m.actors[id]; a != nil {
			delete(m.actors, id)
			actors = append(actors, a)
		}
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range actors {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(m.life, m.cfg.StopGrace+closeWriteGrace)
			defer cancel()
			type dropping struct {
				stop   stopping
				hosted detacher
			}
			d, _ := mailbox.Call(ctx, a.mb, func() (dropping, error) {
				s, err := a.shutdown()
				h, _ := a.conn.(detacher) // read on the actor: it owns conn
				return dropping{s, h}, err
			})
			switch {
			case d.stop.conn != nil:
				d.stop.conn.Stop()
			case d.hosted != nil:
				d.hosted.Detach()
			}
			a.mb.Close()
			m.cfg.Logger.Info(why, "session", a.id)
		})
	}
	wg.Wait()
}

// detacher is a hosted agent the daemon can stop following without
// stopping it (executor.Agent): its records are left on the host for the
// session's next owner.
type detacher interface{ Detach() }

// TakeOver brings to life sessions whose leases this node has just taken
// from a node that went away (cluster.Takeover): the start-up repair for
// those sessions, in one pass. A hosted agent is attached again and its turn goes on;
// a standalone one died with its node, so its turn is interrupted and can
// be continued.
func (m *Manager) TakeOver(ctx context.Context, sessionIDs []string) error {
	want := make(map[string]bool, len(sessionIDs))
	for _, id := range sessionIDs {
		want[id] = true
	}
	_, err := m.reconcile(ctx, func(id string) bool { return want[id] })
	return err
}
