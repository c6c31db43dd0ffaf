package sessions

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/runtimes"
)

// A credentials check on the detached runtime (checkCredentials) starts a
// throwaway session on the local executor host and stops it. A daemon
// killed between the two leaves it there: the host keeps the agent
// running and the session's directory, for good, since no session of the
// store names it (a host that lingers out and is started again takes the
// directory up again). A later daemon takes such leftovers up and stops
// them (sweepCredentialChecks), sparing the checks it runs itself: at
// start-up if the host runs, else once a session starts the host. The
// sweep never starts a host itself: a daemon whose sessions do not run on
// it (--executor standalone) leaves no host process behind.

// credentialsCheckPrefix opens the id of a credentials check's session
// on an executor host; no stored session has such an id (they are UUIDs).
const credentialsCheckPrefix = "credentials-check-"

// sweepWait bounds how long the sweep waits for the local executor host
// to answer once the daemon has it; a host that does not answer by then
// is swept at the next start.
const sweepWait = time.Minute

// checksRunning is the set of credentials checks this daemon runs now,
// which the sweep leaves alone.
type checksRunning struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (c *checksRunning) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids = map[string]bool{}
	}
	c.ids[id] = true
}

func (c *checksRunning) remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ids, id)
}

func (c *checksRunning) has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[id]
}

// sweepCredentialChecks stops the credentials checks an earlier daemon
// left on the local executor host, once the daemon has the host (it runs
// at start-up, or a session started it) and the host answers. A check
// whose agent was still starting refuses its stop: it is tried again
// until none is left (bounded by sweepWait).
func (m *Manager) sweepCredentialChecks() {
	aw, ok := m.cfg.Executors.(runtimes.HostAwaiter)
	if !ok {
		return
	}
	kind, host, err := m.cfg.Executors.Choose(runtimes.ExecutorDetached, "")
	if err != nil {
		return // no local executor host
	}
	rt, err := aw.AwaitRuntime(m.life, kind, host)
	if err != nil {
		return
	}
	hr, ok1 := rt.(runtimes.HostRuntime)
	ls, ok2 := rt.(runtimes.SessionLister)
	if !ok1 || !ok2 {
		return
	}
	ctx, cancel := context.WithTimeout(m.life, sweepWait)
	defer cancel()
	for {
		left, err := m.leftChecks(ctx, ls)
		if err == nil && len(left) == 0 {
			return
		}
		for _, id := range left {
			conn, err := hr.Attach(ctx, runtimes.AttachRequest{SessionID: id, Handler: acp.NoPrompts{}, Logger: m.cfg.Logger})
			if err != nil {
				m.cfg.Logger.Debug("a credentials check left on the executor host could not be taken up", "check", id, "err", err)
				continue
			}
			conn.Stop()
			m.cfg.Logger.Info("stopping a credentials check an earlier daemon left on the executor host", "check", id)
		}
		select {
		case <-ctx.Done():
			m.cfg.Logger.Debug("credentials checks left on the executor host not swept", "left", left, "err", err)
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// leftChecks lists the credentials checks the host holds that this
// daemon does not run.
func (m *Manager) leftChecks(ctx context.Context, ls runtimes.SessionLister) ([]string, error) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ids, err := ls.SessionIDs(sctx)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, id := range ids {
		if strings.HasPrefix(id, credentialsCheckPrefix) && !m.checks.has(id) {
			left = append(left, id)
		}
	}
	return left, nil
}
