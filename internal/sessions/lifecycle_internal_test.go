package sessions

import (
	"context"
	"errors"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/testbin"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// goroutine the manager starts must be joined by Shutdown.
func TestMain(m *testing.M) { testbin.RunLeakChecked(m) }

// storedSession writes a session row (and its task) straight to the store,
// as a previous daemon would have left it.
func (r *fakeRig) storedSession(t *testing.T) session.Session {
	t.Helper()
	ctx := context.Background()
	task, err := r.st.CreateTask(ctx, session.Task{Title: "t", Workspace: r.dir})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := r.st.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "fake", Cwd: r.dir,
		State: session.SessionWaitingForInput, EventEpoch: store.NewEpoch()},
		session.Executor{Runtime: session.RuntimeStandalone, Status: session.ExecutorStopped})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func (m *Manager) liveActors() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.actors)
}

// An actor whose session is loaded while Shutdown takes its list of actors
// would never be stopped (its loop, and any agent it starts, outlive the
// daemon). The manager refuses it instead.
func TestActorLoadedDuringShutdownIsRefused(t *testing.T) {
	r := newFakeRig(t)
	sess := r.storedSession(t)
	r.mgr.afterLoad = func() { r.mgr.Shutdown(context.Background()) }
	a, err := r.mgr.actor(context.Background(), sess.ID)
	var ce *errcode.Error
	if !errors.As(err, &ce) || ce.Code != errcode.ServiceShuttingDown {
		t.Errorf("actor during shutdown: got actor=%t, err %v; want err %s", a != nil, err, errcode.ServiceShuttingDown)
	}
	if n := r.mgr.liveActors(); n != 0 {
		t.Errorf("got %d live actors after shutdown, want 0", n)
	}
	if a != nil {
		a.mb.Close() // so that the leak check reports the fault, not a hang
	}
}

// A close whose request is cancelled (the client went away) still stops
// the agent, records the session closed and retires the actor. (That Stop
// ends a standalone agent's whole process group is internal/acp's test.)
func TestCloseWithCancelledRequestRetiresActor(t *testing.T) {
	r := newFakeRig(t)
	ctx := context.Background()
	s := r.readySession(t)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.mgr.Close(gone, s.sess.ID); err != nil {
		t.Errorf("close with a cancelled request: %v", err)
	}
	if n := r.mgr.liveActors(); n != 0 {
		t.Errorf("got %d live actors after close, want 0", n)
	}
	if n := s.agent.stopped(); n == 0 {
		t.Errorf("the agent was not stopped by the close")
	}
	got, err := r.st.GetSession(ctx, s.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != session.SessionCompleted {
		t.Errorf("got session state %s after close, want %s", got.State, session.SessionCompleted)
	}
}
