package onetruth

import (
	"testing"
	"time"

	"github.com/tether/tether/internal/session"
)

// The context and its recovery plan: GET /session/{id}/context names the
// cursor it is consistent with, so the log's facts it serves are compared
// at that cursor exactly: the session's state, the queued turns in the
// order they run (recovery.queuedPromptIds) and whether they are held
// (recovery.queueHeld: queued turns, held by the last session.queue_held,
// and none running).
//
// The plan itself is pushed, not folded: the daemon emits
// session.recovery_changed whenever the plan changes, in the same step as
// the change. So once the daemon has settled (the log does not move while
// the context is read, and no turn runs or waits to run) the plan the
// context serves must be the last one the log carries. One exception: a
// session no turn was ever queued on has had no plan pushed (its creation
// pushes none, and nothing since changed it); its plan is the planner's
// for a session with no turn, in the state the log gives it.

// checkContext compares the context of sid, and once the session has
// settled its recovery plan, with the log.
func (d Daemon) checkContext(t testing.TB, sid string) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		before := d.replay(t, sid)
		var c map[string]any
		if d.get(t, "/session/"+sid+"/context", &c) != 200 {
			return
		}
		after := d.replay(t, sid)
		cursor, _ := c["cursor"].(string)
		at := cursorSeq(t, cursor)
		if at > head(after) {
			t.Errorf("one truth: the context of %s is at cursor %s, beyond the log read after it (head %d)", sid, cursor, head(after))
			return
		}
		f := factsAt(after, at)
		recovery, _ := c["recovery"].(map[string]any)
		if !checkContextFacts(t, sid, c, recovery, f) {
			return
		}
		if ids, running := f.queued(); running || (len(ids) > 0 && !f.queueHeld) {
			// Not settled: a turn runs or is about to; its plan is pushed
			// at its boundaries, and the test may end before the next.
			return
		}
		if head(before) == at && head(after) == at {
			want := f.plan
			if want == nil && len(f.turns) == 0 {
				want = unprompted(f)
			}
			if !jsonEqual(recovery, want) {
				differ(t, "context of "+sid, "recovery plan (the log quiet at "+cursor+")", recovery, want)
			}
			return
		}
		if time.Now().After(end) {
			t.Errorf("one truth: the log of %s did not hold still for %s with no turn running", sid, deadline)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkContextFacts compares the log's facts the context serves with the
// log at the context's cursor; it reports whether they agree.
func checkContextFacts(t testing.TB, sid string, c, recovery map[string]any, f *facts) bool {
	t.Helper()
	ids, running := f.queued()
	served := map[string]any{"state": c["state"], "queuedPromptIds": recovery["queuedPromptIds"], "queueHeld": recovery["queueHeld"] == true}
	if served["queuedPromptIds"] == nil {
		served["queuedPromptIds"] = []string{}
	}
	want := map[string]any{"state": f.state, "queuedPromptIds": ids, "queueHeld": len(ids) > 0 && f.queueHeld && !running}
	if !jsonEqual(served, want) {
		differ(t, "context of "+sid, "at its cursor "+c["cursor"].(string), served, want)
		return false
	}
	return true
}

// unprompted is the plan of a session the log has no turn of: the
// planner's, for its state and context.
func unprompted(f *facts) session.Recovery {
	state, _ := f.state.(string)
	return session.Plan(session.PlanInput{State: session.SessionState(state), ContextLost: f.contextLost, QueueHeld: f.queueHeld})
}
