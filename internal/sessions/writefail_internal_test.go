package sessions

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/onetruth"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
)

// fakeTimers stands for Manager.after: it keeps the timers asked for, and
// the test fires them, so a backoff is observed without waiting for it.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	d              time.Duration
	f              func()
	fired, stopped bool
}

func (c *fakeTimers) after(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{d: d, f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.fired && !t.stopped
		t.stopped = true
		return was
	}
}

// armed are the timers neither fired nor stopped.
func (c *fakeTimers) armed() []*fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*fakeTimer
	for _, t := range c.timers {
		if !t.fired && !t.stopped {
			out = append(out, t)
		}
	}
	return out
}

// next waits until exactly one timer is armed and returns it.
func (c *fakeTimers) next(t *testing.T) *fakeTimer {
	t.Helper()
	deadline := testDeadline(t)
	for {
		armed := c.armed()
		if len(armed) > 1 {
			t.Fatalf("got %d reloads pending, want one at a time", len(armed))
		}
		if len(armed) == 1 {
			return armed[0]
		}
		select {
		case <-deadline:
			t.Fatal("no reload was scheduled after a failed repair")
		case <-time.After(time.Millisecond):
		}
	}
}

func (c *fakeTimers) fire(ft *fakeTimer) {
	c.mu.Lock()
	ft.fired = true
	c.mu.Unlock()
	ft.f()
}

// writes is how many writes the session's actor has submitted, once
// every write submitted so far has reported, the actor has heard of those
// that failed, and no reload is on its way but one waiting for its
// backoff's timer (which the test fires). It used to look twice and
// return: a reload queued meanwhile could still be making its repairs.
func (s *scene) writes(t *testing.T) uint64 {
	t.Helper()
	ctx := context.Background()
	a, err := s.r.mgr.actor(ctx, s.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	deadline := testDeadline(t)
	var n uint64
	for visits := 0; ; visits++ {
		// Once a no-op write is answered, every earlier write has
		// reported and its callbacks have posted to the actor.
		if _, err := s.r.w.Do(ctx, func(*store.Store, events.Emit) error { return nil }); err != nil {
			t.Fatal(err)
		}
		prev, queued := n, false
		if err := a.do(ctx, func() { n, queued = a.version, a.reloading && a.timers[timerReload] == nil }); err != nil {
			t.Fatal(err)
		}
		if visits > 0 && n == prev && !queued {
			return n
		}
		select {
		case <-deadline:
			t.Fatalf("the actor never settled (%d writes, a reload queued: %v)", n, queued)
		default:
		}
	}
}

// logDiffs compares the session's log with its actor's live state and
// with its rows, on the actor once its writes have committed; backoff is
// the actor's then.
func (s *scene) logDiffs(t *testing.T) (diffs []string, backoff time.Duration) {
	t.Helper()
	ctx := context.Background()
	a, err := s.r.mgr.actor(ctx, s.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	err = a.do(ctx, func() {
		a.atCommit(ctx)
		backoff = a.backoff
		fold, err := events.FoldSession(ctx, s.r.st, a.id)
		if err != nil {
			diffs = []string{err.Error()}
			return
		}
		rows, err := rowsState(ctx, s.r.st, a.id)
		if err != nil {
			diffs = []string{err.Error()}
			return
		}
		diffs = append(actorDiff(a, fold), onetruth.Diff(fold, rows)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	return diffs, backoff
}

// TestRepairsRetryWithBackoffUntilStored: a turn's end that the store
// refuses, and the repair a reload records for it, are tried again while
// the store refuses writes: one reload pending at a time, each after a
// backoff that doubles up to its cap, each making the same writes, and
// none between two reloads (no loop as fast as the store refuses). Once
// the store takes writes again the next reload records the turn's end,
// the log and the rows agree, nothing more is scheduled, and the backoff
// is reset. Before, the repair was tried once and the turn stayed running
// in the log for good.
func TestRepairsRetryWithBackoffUntilStored(t *testing.T) {
	ctx := context.Background()
	r := newFakeRig(t)
	clock := &fakeTimers{}
	r.mgr.after = clock.after
	s := r.readySession(t)
	p := s.prompt(t, "hello")
	prompt := s.agent.prompt(t)
	s.waitEvent(t, events.TurnStarted)
	remove := storetest.Fault(t, r.dir, "outage", "INSERT", "events", "1 = 1")
	prompt.answer("end_turn")

	// The end fails, the reload at once repairs, the repair fails: from
	// here every reload waits its backoff.
	want := reloadBackoffMin
	var perRound uint64
	for round := range 10 {
		ft := clock.next(t)
		if ft.d != want {
			t.Fatalf("round %d: got backoff %s, want %s", round, ft.d, want)
		}
		before := s.writes(t)
		if again := s.writes(t); again != before {
			t.Fatalf("round %d: %d writes while the backoff runs, want none", round, again-before)
		}
		clock.fire(ft)
		next := clock.next(t)
		n := s.writes(t) - before
		if n == 0 || perRound != 0 && n != perRound {
			t.Fatalf("round %d: the reload made %d writes, want the same repairs as the first round (%d)", round, n, perRound)
		}
		perRound = n
		want = min(2*want, reloadBackoffMax)
		if next.d != want {
			t.Fatalf("round %d: got next backoff %s, want %s", round, next.d, want)
		}
	}

	remove()
	clock.fire(clock.next(t))
	s.waitEvent(t, events.TurnFailed)
	s.writes(t)
	if armed := clock.armed(); len(armed) != 0 {
		t.Fatalf("got %d reloads pending once the repairs are stored, want none", len(armed))
	}
	tr, err := r.st.GetTurn(ctx, s.sess.ID, p.Turn.PromptID)
	if err != nil || tr.State != session.TurnFailed || tr.ErrorCode != string(errcode.StoreWriteFailed) {
		t.Fatalf("got turn %s (%q), %v; want %s (%s)", tr.State, tr.ErrorCode, err, session.TurnFailed, errcode.StoreWriteFailed)
	}
	diffs, backoff := s.logDiffs(t)
	if len(diffs) > 0 {
		t.Errorf("the log differs from the actor and the rows:\n  %s", joinLines(diffs))
	}
	if backoff != 0 {
		t.Errorf("got backoff %s once the store took the repairs, want it reset", backoff)
	}
}

// TestPendingRetryStopsWithTheActor: a reload waiting for its backoff when
// the session's actor ends (a daemon shutdown) has its timer stopped: it
// belongs to the actor and outlives it in nothing.
func TestPendingRetryStopsWithTheActor(t *testing.T) {
	r := newFakeRig(t)
	clock := &fakeTimers{}
	r.mgr.after = clock.after
	s := r.readySession(t)
	s.prompt(t, "hello")
	prompt := s.agent.prompt(t)
	s.waitEvent(t, events.TurnStarted)
	storetest.Fault(t, r.dir, "outage", "INSERT", "events", "1 = 1")
	prompt.answer("end_turn")
	ft := clock.next(t)
	r.restart()
	deadline := testDeadline(t)
	for !func() bool { clock.mu.Lock(); defer clock.mu.Unlock(); return ft.stopped }() {
		select {
		case <-deadline:
			t.Fatal("the pending reload's timer outlived its actor")
		case <-time.After(time.Millisecond):
		}
	}
}

// TestLostPermissionEndIsRecordedAgain: a permission request whose
// closing the store refused (the agent exited meanwhile: expired; the
// user answered: selected) is closed in the log as it was closed, by the
// reload once the store takes writes again. It used to stay pending in
// the log while no agent waited on it.
func TestLostPermissionEndIsRecordedAgain(t *testing.T) {
	cases := []struct {
		name  string
		close func(t *testing.T, s *scene, id string)
		want  session.PermissionState
	}{
		{"the agent exits", func(t *testing.T, s *scene, _ string) { s.agent.end(acp.Exit{Code: 1}) }, session.PermissionExpired},
		{"the user answers", func(t *testing.T, s *scene, id string) {
			if _, err := s.r.mgr.AnswerPermission(context.Background(), s.sess.ID, id, acp.PermissionOutcome{OptionID: "ok"}); !errcode.Is(err, errcode.StoreWriteFailed) {
				t.Fatalf("answer while the store refuses: got %v, want %s", err, errcode.StoreWriteFailed)
			}
		}, session.PermissionSelected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newFakeRig(t)
			clock := &fakeTimers{}
			r.mgr.after = clock.after
			s := r.readySession(t)
			s.prompt(t, "hello")
			s.agent.prompt(t)
			s.agent.askPermission(acp.PermissionRequest{ID: "perm1", SessionID: "fake-acp-session", Tool: acp.ToolCall{ID: "tc1"},
				Options: []acp.PermissionOption{{ID: "ok", Name: "Allow", Kind: "allow_once"}}})
			s.waitEvent(t, events.PermissionRequested)
			asked, err := r.st.ListPermissions(ctx, s.sess.ID, session.PermissionPending)
			if err != nil || len(asked) != 1 {
				t.Fatalf("got pending permissions %+v, %v; want the one asked", asked, err)
			}
			remove := storetest.Fault(t, r.dir, "outage", "UPDATE", "permission_requests", "1 = 1")
			tc.close(t, s, asked[0].ID)
			// The reload at once failed its repair: the next one waits,
			// and fails again.
			clock.fire(clock.next(t))
			ft := clock.next(t)
			remove()
			clock.fire(ft)
			s.writes(t)
			pending, err := r.st.ListPermissions(ctx, s.sess.ID, session.PermissionPending)
			if err != nil || len(pending) != 0 {
				t.Fatalf("got pending permissions %+v, %v; want none", pending, err)
			}
			perms, err := r.st.ListPermissions(ctx, s.sess.ID)
			if err != nil || len(perms) != 1 || perms[0].State != tc.want || tc.want == session.PermissionSelected && perms[0].SelectedOptionID != "ok" {
				t.Fatalf("got permissions %+v, %v; want one %s", perms, err, tc.want)
			}
			if d, _ := s.logDiffs(t); d != nil {
				t.Fatalf("the log differs from the actor and the rows:\n  %s", joinLines(d))
			}
		})
	}
}

// TestRefusedStartIsNotRecordedByTheEnd: a turn whose turn.started the
// store refused (its user message could not be added) fails, and its end
// records no start: the rows, the log and the actor agree that it never
// started. The end used to write the whole turn row, with the start time
// only the actor knew.
func TestRefusedStartIsNotRecordedByTheEnd(t *testing.T) {
	ctx := context.Background()
	r := newFakeRig(t)
	s := r.readySession(t)
	remove := storetest.Fault(t, r.dir, "no_messages", "INSERT", "messages", "1 = 1")
	p := s.prompt(t, "hello")
	s.waitEvent(t, events.TurnFailed)
	remove()
	s.writes(t)
	tr, err := r.st.GetTurn(ctx, s.sess.ID, p.Turn.PromptID)
	if err != nil || tr.State != session.TurnFailed || tr.StartedAt != nil {
		t.Fatalf("got turn %s started at %v, %v; want %s, never started", tr.State, tr.StartedAt, err, session.TurnFailed)
	}
	diffs, _ := s.logDiffs(t)
	if len(diffs) > 0 {
		t.Errorf("the log differs from the actor and the rows:\n  %s", joinLines(diffs))
	}
}
