package sessions

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/testbin"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// goroutine the manager starts must be joined by Shutdown.
func TestMain(m *testing.M) { testbin.RunLeakChecked(m) }

// rig is a manager on a real store and writer in a temp dir, with the
// demo agent (the real tetherd binary) as its only profile.
type rig struct {
	st  *store.Store
	w   *events.Writer
	mgr *Manager
	dir string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "tether.db"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	reg, err := agents.Load(ctx, agents.Config{DataDir: dir, Self: testbin.Tetherd(t), Store: st,
		LookPath: func(string) (string, error) { return "", exec.ErrNotFound }})
	if err != nil {
		t.Fatalf("load agents: %v", err)
	}
	w, err := events.NewWriter(ctx, st, events.NewHub(events.HubConfig{}), events.WriterConfig{})
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	r := &rig{st: st, w: w, dir: dir, mgr: New(st, w, reg, Config{})}
	// The daemon's order: stop actors, drain the writer, close the store.
	t.Cleanup(func() {
		r.mgr.Shutdown(context.Background())
		w.Close()
		_ = st.Close()
	})
	return r
}

// storedSession writes a session row (and its task) straight to the store,
// as a previous daemon would have left it.
func (r *rig) storedSession(t *testing.T) store.Session {
	t.Helper()
	ctx := context.Background()
	task, err := r.st.CreateTask(ctx, store.Task{Title: "t", Workspace: r.dir})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := r.st.CreateSession(ctx, store.Session{TaskID: task.ID, AgentProfileID: agents.DemoID, Cwd: r.dir,
		State: store.SessionWaitingForInput, EventEpoch: store.NewEpoch()},
		store.Executor{Runtime: store.RuntimeStandalone, Status: store.ExecutorStopped})
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
	r := newRig(t)
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
		a.mb.close() // so that the leak check reports the fault, not a hang
	}
}

// A close whose request is cancelled (the client went away) still stops
// the agent, records the session closed and retires the actor.
func TestCloseWithCancelledRequestRetiresActor(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	sess, err := r.mgr.Create(ctx, CreateInput{AgentProfileID: agents.DemoID, Cwd: r.dir})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	st, err := r.mgr.Resume(ctx, sess.ID)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	pid := st.Executor.PID
	if pid <= 0 {
		t.Fatalf("got agent pid %d, want a live agent", pid)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.mgr.Close(gone, sess.ID); err != nil {
		t.Errorf("close with a cancelled request: %v", err)
	}
	if n := r.mgr.liveActors(); n != 0 {
		t.Errorf("got %d live actors after close, want 0", n)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("agent process %d after close: kill(0) got %v, want ESRCH", pid, err)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	got, err := r.st.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.SessionCompleted {
		t.Errorf("got session state %s after close, want %s", got.State, store.SessionCompleted)
	}
}
