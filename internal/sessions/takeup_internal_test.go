package sessions

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
)

// TestClosedSessionsRefusedRepairsAreRecorded: a session closed while the
// store refused its permission requests' updates keeps them pending in
// its log, and its actor retires: nothing of it lives on to record them.
// Whatever takes the session up next (a request loading an actor for it,
// a start-up after a clean stop or a crash) records them cancelled, as its
// close meant; a loaded actor holds what the log says. They used to stay
// pending for good, and the retired actor, like any actor loaded later,
// held none (TETHER_REPLAY_SEED=630172 on PostgreSQL found it).
func TestClosedSessionsRefusedRepairsAreRecorded(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		takeUp func(t *testing.T, r *fakeRig, id string)
	}{
		{"on its next load", func(t *testing.T, r *fakeRig, id string) {
			_, err := r.mgr.Prompt(ctx, id, PromptInput{Prompt: textPrompt("after the close")})
			if !errcode.Is(err, errcode.SessionTerminal) {
				t.Fatalf("prompt to the closed session: got %v, want %s", err, errcode.SessionTerminal)
			}
			// The load's repairs commit before anything the actor answers.
			if _, err := r.mgr.Status(ctx, id); err != nil {
				t.Fatal(err)
			}
		}},
		{"at the next start-up", func(t *testing.T, r *fakeRig, id string) {
			r.restart()
			if _, err := r.mgr.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
		}},
		{"at the start-up after a crash", func(t *testing.T, r *fakeRig, id string) {
			r.crash()
			if _, err := r.mgr.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := closedWithRefusedCancels(t, "perm1", "perm2")
			r, id := s.r, s.sess.ID
			tc.takeUp(t, r, id)
			log := foldLog(t, r, id)
			if p := log.PendingPermissions(); len(p) != 0 {
				t.Errorf("pending permission requests in the log: got %d, want none", len(p))
			}
			var states []string
			for _, p := range log.Permissions {
				states = append(states, p.ID+" "+string(p.State))
			}
			if want := []string{"perm1 cancelled", "perm2 cancelled"}; !slices.Equal(states, want) {
				t.Errorf("permission requests in the log: got %q, want %q", states, want)
			}
			if log.Session.State != session.SessionCompleted {
				t.Errorf("session state in the log: got %s, want %s", log.Session.State, session.SessionCompleted)
			}
			// An actor loaded as any request would load it holds what the
			// log says, as the rows do.
			if d, _ := s.logDiffs(t); d != nil {
				t.Errorf("the log differs from the actor and the rows:\n  %s", joinLines(d))
			}
		})
	}
}

// closedWithRefusedCancels closes a session whose agent asks the
// permission requests ids mid-turn while the store refuses every update
// of a permission request, waits until the retired actor can write no
// more, and then lets the store take writes again. The log keeps the
// requests pending.
func closedWithRefusedCancels(t *testing.T, ids ...string) *scene {
	t.Helper()
	ctx := context.Background()
	r := newFakeRig(t)
	s := r.readySession(t)
	s.prompt(t, "run")
	s.agent.prompt(t)
	for _, id := range ids {
		s.agent.askPermission(acp.PermissionRequest{ID: id, SessionID: "fake-acp-session", Tool: acp.ToolCall{ID: "tc-" + id},
			Options: []acp.PermissionOption{{ID: "ok", Name: "Allow", Kind: "allow_once"}}})
		s.waitEvent(t, events.PermissionRequested)
	}
	r.mgr.mu.Lock()
	retired := r.mgr.actors[s.sess.ID]
	r.mgr.mu.Unlock()
	remove := storetest.Fault(t, r.dir, "test_fault", "UPDATE", "permission_requests", "1 = 1")
	if _, err := r.mgr.Close(ctx, s.sess.ID); err != nil {
		t.Logf("close: %v", err) // what it reports of the refused writes is not this test's
	}
	// The retired actor's mailbox is closed: once it has run what it
	// holds, and the writer has committed what that submitted, nothing
	// of the session is written any more.
	deadline := testDeadline(t)
	for retired.mb.Queued() > 0 {
		select {
		case <-deadline:
			t.Fatal("the retired actor never drained its mailbox")
		case <-time.After(time.Millisecond):
		}
	}
	if _, err := r.w.Do(ctx, func(*store.Store, events.Emit) error { return nil }); err != nil {
		t.Fatal(err)
	}
	remove()
	if p := foldLog(t, r, s.sess.ID).PendingPermissions(); len(p) != len(ids) {
		t.Fatalf("pending permission requests in the log after the refused close: got %d, want %d", len(p), len(ids))
	}
	return s
}

// foldLog folds session id's stored log.
func foldLog(t *testing.T, r *fakeRig, id string) *session.State {
	t.Helper()
	st, err := events.FoldSession(context.Background(), r.st, id)
	if err != nil {
		t.Fatalf("fold the log: %v", err)
	}
	return st
}

// TestReloadRecordsARefusedExecutorStatus: an agent that exits while the
// store refuses the executor's updates leaves the executor ready in the
// store. The reload after the failed write records the exit again, as
// the actor knows it (and again after its backoff, for as long as the
// store refuses it): once the store takes writes, the executor is
// stopped, with its session.executor_status event. The reload used to
// take the stored executor for the truth, and the exit was never
// recorded: the executor stayed ready with no agent.
func TestReloadRecordsARefusedExecutorStatus(t *testing.T) {
	ctx := context.Background()
	r := newFakeRig(t)
	s := r.readySession(t)
	remove := storetest.Fault(t, r.dir, "test_fault", "UPDATE", "executors_running", "1 = 1")
	s.agent.end(acp.Exit{Code: 1, Stderr: "boom"})
	deadline := testDeadline(t)
	r.mgr.mu.Lock()
	a := r.mgr.actors[s.sess.ID]
	r.mgr.mu.Unlock()
	for failures := 0; failures == 0; {
		_ = a.do(ctx, func() { failures = int(a.failures) }) // the exit's write was refused
		select {
		case <-deadline:
			t.Fatal("the exit's write never failed")
		case <-time.After(time.Millisecond):
		}
	}
	if ex, err := r.st.GetExecutor(ctx, s.sess.ID); err != nil || ex.Status != session.ExecutorReady {
		t.Fatalf("executor while the store refuses its updates: got %s, %v; want %s", ex.Status, err, session.ExecutorReady)
	}
	remove()
	for {
		ex, err := r.st.GetExecutor(ctx, s.sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Status == session.ExecutorStopped {
			if ex.ExitCode == nil || *ex.ExitCode != 1 {
				t.Errorf("executor's exit code: got %v, want 1", ex.ExitCode)
			}
			break
		}
		select {
		case <-deadline:
			t.Fatalf("executor after the store took writes again: got %s, want %s", ex.Status, session.ExecutorStopped)
		case <-time.After(5 * time.Millisecond):
		}
	}
	var statuses []string
	for _, e := range s.typesOf(t, events.SessionExecutorStatus) {
		statuses = append(statuses, string(e.Payload.(*session.ExecutorStatusData).Status))
	}
	if len(statuses) == 0 || statuses[len(statuses)-1] != string(session.ExecutorStopped) {
		t.Errorf("executor status events: got %q, want the last stopped", statuses)
	}
}

// typesOf are the session's committed events of type typ, decoded.
func (s *scene) typesOf(t *testing.T, typ string) []session.Event {
	t.Helper()
	evs, err := s.r.st.ListSessionEvents(context.Background(), s.sess.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []session.Event
	for _, e := range evs {
		if e.Type != typ {
			continue
		}
		d, err := events.Decode(e)
		if err != nil {
			t.Fatalf("decode %s: %v", e.Type, err)
		}
		out = append(out, d)
	}
	return out
}
