package executor

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/hostproto"
)

// recHandler is the daemon's acp.Handler (and LinkHandler) in tests: it
// records what it is handed; updates are done at once when autoDone, else
// held until the test calls done.
type recHandler struct {
	autoDone bool
	window   int // if > 0, an update arriving with window updates held is a violation

	mu       sync.Mutex
	updates  []acp.Update
	dones    []func()
	held     int
	overflow bool
	reqs     []*reqCall
	links    []bool
	whys     []string // HostUnreachable's reasons
	changed  chan struct{}
}

// reqCall is one RequestPermission call: the test answers on reply, or
// watches ctx end.
type reqCall struct {
	req      acp.PermissionRequest
	ctx      context.Context
	reply    chan acp.PermissionOutcome
	returned chan struct{}
}

func newRecHandler(autoDone bool) *recHandler {
	return &recHandler{autoDone: autoDone, changed: make(chan struct{})}
}

func (r *recHandler) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recHandler) Update(u acp.Update, done func()) {
	r.mu.Lock()
	r.updates = append(r.updates, u)
	if r.window > 0 && r.held >= r.window {
		r.overflow = true
	}
	r.held++
	var once sync.Once
	d := func() {
		once.Do(func() {
			r.mu.Lock()
			r.held-- // before done: its credit lets the next update in
			r.mu.Unlock()
			done()
		})
	}
	r.dones = append(r.dones, d)
	r.notifyLocked()
	r.mu.Unlock()
	if r.autoDone {
		d()
	}
}

func (r *recHandler) RequestPermission(ctx context.Context, req acp.PermissionRequest) (acp.PermissionOutcome, error) {
	rc := &reqCall{req: req, ctx: ctx, reply: make(chan acp.PermissionOutcome, 1), returned: make(chan struct{})}
	defer close(rc.returned)
	r.mu.Lock()
	r.reqs = append(r.reqs, rc)
	r.notifyLocked()
	r.mu.Unlock()
	select {
	case out := <-rc.reply:
		return out, nil
	case <-ctx.Done():
		return acp.PermissionOutcome{Cancelled: true}, nil
	}
}

func (r *recHandler) HostUnreachable(why error) {
	r.mu.Lock()
	r.whys = append(r.whys, why.Error())
	r.notifyLocked()
	r.mu.Unlock()
}

func (r *recHandler) LinkChanged(up bool) {
	r.mu.Lock()
	r.links = append(r.links, up)
	r.notifyLocked()
	r.mu.Unlock()
}

// waitFor waits until cond (called under the handler's lock) holds.
func (r *recHandler) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, func() <-chan struct{} {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.changed
	}, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return cond()
	})
}

func (r *recHandler) waitUpdates(t *testing.T, n int) {
	t.Helper()
	r.waitFor(t, "updates", func() bool { return len(r.updates) >= n })
}

// done calls the done of updates [from, to) (0-based, in arrival order).
func (r *recHandler) done(from, to int) {
	r.mu.Lock()
	ds := append([]func(){}, r.dones[from:to]...)
	r.mu.Unlock()
	for _, d := range ds {
		d()
	}
}

func (r *recHandler) snapshot() []acp.Update {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]acp.Update(nil), r.updates...)
}

// testLogger discards logs unless EXECUTOR_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("EXECUTOR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newTestHost connects a Host to f, closed when the test ends.
func newTestHost(t *testing.T, f *fakeHost, mod func(*HostConfig)) *Host {
	t.Helper()
	return newTestHostAt(t, f.path, mod)
}

// newTestHostAt connects a Host to the host serving the unix socket
// sock, closed when the test ends.
func newTestHostAt(t *testing.T, sock string, mod func(*HostConfig)) *Host {
	t.Helper()
	cfg := HostConfig{Name: "test", Dial: DialUnix(sock), Token: testToken, DaemonID: "daemon-1", DaemonVersion: "v-test",
		BackoffMin: 2 * time.Millisecond, BackoffMax: 20 * time.Millisecond, AckEvery: 1, Logger: testLogger()}
	if mod != nil {
		mod(&cfg)
	}
	h := NewHost(cfg)
	t.Cleanup(h.Close)
	return h
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	t.Cleanup(cancel)
	return ctx
}

// waitInfo waits until the host's Info satisfies cond.
func waitInfo(t *testing.T, h *Host, what string, cond func(HostInfo) bool) HostInfo {
	t.Helper()
	var info HostInfo
	eventually(t, what, h.Changed, func() bool {
		info = h.Info()
		return cond(info)
	})
	return info
}

// startAgent starts an agent for session sid and opens its ACP session.
func startAgent(t *testing.T, h *Host, sid string, rh *recHandler) *Agent {
	t.Helper()
	a, err := h.Start(ctxT(t), sid, hostproto.StartPayload{ProfileID: "demo", Cwd: "/tmp"}, rh)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return a
}

// prompt runs PromptTurn in the background; the channel yields its
// outcome.
type promptOutcome struct {
	stop string
	err  error
}

func promptAsync(t *testing.T, a *Agent, turn string) <-chan promptOutcome {
	out := make(chan promptOutcome, 1)
	ctx := ctxT(t)
	go func() {
		stop, err := a.PromptTurn(ctx, "acp-1", turn, []byte(`[{"type":"text","text":"hi"}]`), nil)
		out <- promptOutcome{stop, err}
	}()
	return out
}

func await[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guardTimeout):
		t.Fatalf("gave up waiting for %s", what)
		panic("unreachable")
	}
}

// waitCount waits until n updates arrived; false if stop closes first.
func (r *recHandler) waitCount(n int, stop <-chan struct{}) bool {
	for {
		r.mu.Lock()
		got, ch := len(r.updates), r.changed
		r.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-ch:
		case <-stop:
			return false
		}
	}
}
