package credentials

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/runtimes"
)

// A credentials check on the detached runtime (Check) starts a
// throwaway session on the local executor host and stops it. A daemon
// killed between the two leaves it there: the host keeps the agent
// running and the session's directory, for good, since no session of the
// store names it (a host that lingers out and is started again takes the
// directory up again). A later daemon takes such leftovers up and stops
// them (Sweep), sparing the checks it runs itself: at
// start-up if the host runs, else once a session starts the host. The
// sweep never starts a host itself: a daemon whose sessions do not run on
// it (--executor standalone) leaves no host process behind.

// CheckPrefix opens the id of a credentials check's session
// on an executor host; no stored session has such an id (they are UUIDs).
const CheckPrefix = "credentials-check-"

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

func (r *checksRunning) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]bool{}
	}
	r.ids[id] = true
}

func (r *checksRunning) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ids, id)
}

func (r *checksRunning) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id]
}

// Sweep stops the credentials checks an earlier daemon
// left on the local executor host, once the daemon has the host (it runs
// at start-up, or a session started it) and the host answers. A check
// whose agent was still starting refuses its stop: it is tried again
// until none is left (bounded by sweepWait).
func (c *Checker) Sweep() {
	aw, ok := c.cfg.Executors.(runtimes.HostAwaiter)
	if !ok {
		return
	}
	kind, host, err := c.cfg.Executors.Choose(runtimes.ExecutorDetached, "")
	if err != nil {
		return // no local executor host
	}
	rt, err := aw.AwaitRuntime(c.cfg.Life, kind, host)
	if err != nil {
		return
	}
	hr, ok1 := rt.(runtimes.HostRuntime)
	ls, ok2 := rt.(runtimes.SessionLister)
	if !ok1 || !ok2 {
		return
	}
	ctx, cancel := context.WithTimeout(c.cfg.Life, sweepWait)
	defer cancel()
	for {
		left, err := c.leftChecks(ctx, ls)
		if err == nil && len(left) == 0 {
			return
		}
		for _, id := range left {
			conn, err := hr.Attach(ctx, runtimes.AttachRequest{SessionID: id, Handler: acp.NoPrompts{}, Logger: c.cfg.Logger})
			if err != nil {
				c.cfg.Logger.Debug("a credentials check left on the executor host could not be taken up", "check", id, "err", err)
				continue
			}
			conn.Stop()
			c.cfg.Logger.Info("stopping a credentials check an earlier daemon left on the executor host", "check", id)
		}
		select {
		case <-ctx.Done():
			c.cfg.Logger.Debug("credentials checks left on the executor host not swept", "left", left, "err", err)
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// leftChecks lists the credentials checks the host holds that this
// daemon does not run.
func (c *Checker) leftChecks(ctx context.Context, ls runtimes.SessionLister) ([]string, error) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ids, err := ls.SessionIDs(sctx)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, id := range ids {
		if strings.HasPrefix(id, CheckPrefix) && !c.running.has(id) {
			left = append(left, id)
		}
	}
	return left, nil
}
