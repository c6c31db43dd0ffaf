package sessions

import (
	"cmp"
	"context"
	"slices"

	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/session"
)

// LiveStats is what the daemon's session actors hold now (for /metrics).
type LiveStats struct {
	// Sessions have an actor in this daemon; Agents of them have their
	// agent connected, on whichever runtime.
	Sessions, Agents int
	// Hosted counts the connected agents that run on executor hosts
	// (detached and remote), by runtime and profile, sorted.
	Hosted []AgentCount
}

// AgentCount is how many agents of one profile run on one runtime.
type AgentCount struct {
	Runtime session.Runtime
	Profile string
	N       int
}

// Live reports the sessions with an actor and the agents they have
// connected (for /metrics). An agent on an executor host is not a process
// of this daemon, so /metrics cannot count it as one; it counts the
// agents its sessions hold on their hosts instead.
func (m *Manager) Live(ctx context.Context) LiveStats {
	m.mu.Lock()
	actors := make([]*actor, 0, len(m.actors))
	for _, a := range m.actors {
		actors = append(actors, a)
	}
	m.mu.Unlock()
	st := LiveStats{Sessions: len(actors)}
	hosted := map[AgentCount]int{}
	for _, a := range actors {
		c, err := mailbox.Call(ctx, a.mb, func() (AgentCount, error) {
			if a.conn == nil {
				return AgentCount{}, nil
			} else if !a.hosted() {
				return AgentCount{N: 1}, nil
			}
			return AgentCount{Runtime: a.exec.Runtime, Profile: a.sess.AgentProfileID, N: 1}, nil
		})
		if err != nil || c.N == 0 {
			continue
		}
		st.Agents++
		if c.Runtime != "" {
			hosted[AgentCount{Runtime: c.Runtime, Profile: c.Profile}]++
		}
	}
	for k, n := range hosted {
		k.N = n
		st.Hosted = append(st.Hosted, k)
	}
	slices.SortFunc(st.Hosted, func(a, b AgentCount) int {
		return cmp.Or(cmp.Compare(a.Runtime, b.Runtime), cmp.Compare(a.Profile, b.Profile))
	})
	return st
}

// MailboxStats reports, over the live sessions, the most closures one
// actor has queued now and the most one has ever had queued (for /metrics
// and tests). It reads counters only, so an overloaded session cannot slow
// it down.
func (m *Manager) MailboxStats() (longest, peak int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.actors {
		longest = max(longest, int(a.mb.Queued()))
		peak = max(peak, int(a.mb.Peak()))
	}
	return longest, peak
}
