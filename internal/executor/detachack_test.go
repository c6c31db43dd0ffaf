package executor

import (
	"fmt"
	"testing"
	"time"
)

// TestNoAckAfterDetach: an Agent that ended on this daemon's side only
// (Detach here; Close and a fenced command end it the same way) is
// forgotten while the host keeps its session's records for the next
// owner's attach, so nothing more of them may be acknowledged: the host
// drops what is acknowledged. Each session's handler holds record 1 (the
// window of one is full) while record 2 waits for a credit; the session
// is detached, and then its handler commits record 1. Before, the waiting
// record 2 could be counted committed unseen once the agent ended (its
// wait for a credit saw Done before the Agent was forgotten, or it was
// taken from the queue just before), and sendAcks, which did not check
// that the agent was still registered, acknowledged it: the host dropped
// a record nobody stored. Whether the waiting record saw Done first is
// down to the scheduler, so the test detaches many sessions (each one,
// before, a record acknowledged with probability one half or more).
func TestNoAckAfterDetach(t *testing.T) {
	const sessions = 24
	f := newFakeHost(t, nil)
	h := newTestHost(t, f, func(c *HostConfig) { c.UpdateWindow = 1 })
	// A session that stays: its acknowledgements, sent after everything
	// the detached sessions could have caused, bound the wait.
	marker := newRecHandler(true)
	startAgent(t, h, "marker", marker)

	for i := range sessions {
		sid := fmt.Sprintf("s%d", i)
		rh := newRecHandler(false)
		a := startAgent(t, h, sid, rh)
		f.chunk(sid)
		f.chunk(sid)
		rh.waitUpdates(t, 1)
		waitAgent(t, a, "record 2 waiting for a credit", func() bool {
			return a.lastSeen == 2 && a.queuedLocked() == 0 && a.delivering
		})
		a.Detach()
		rh.done(0, 1) // the handler commits record 1 after all
	}
	for want := uint64(1); want <= 2; want++ {
		f.chunk("marker")
		f.waitFor(t, fmt.Sprintf("the marker's record %d acknowledged", want), func() bool { return f.lastAckLocked("marker") == want })
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range sessions {
		sid := fmt.Sprintf("s%d", i)
		if got := f.lastAckLocked(sid); got != 0 {
			t.Errorf("session %s: got records up to %d acknowledged after its Detach, want none (the host keeps them for the next owner)", sid, got)
		}
	}
}

// waitAgent waits until cond, called under a.mu, holds.
func waitAgent(t *testing.T, a *Agent, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guardTimeout)
	for {
		a.mu.Lock()
		ok := cond()
		a.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
