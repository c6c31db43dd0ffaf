package runtimes

import (
	"context"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/workspace"
)

// A session's workspace is served by its executor, with or without its
// agent: the daemon itself for a standalone session, its host otherwise.

// Availability says whether the executor of row ex serves its session's
// workspace now: the daemon itself always does (standalone); a host when
// it is connected. Asking names the host to x's pool, which starts
// connecting to it (and starts the local one) if nothing had yet.
func Availability(x Executors, ex session.Executor) WorkspaceAvailability {
	if ex.Runtime == session.RuntimeStandalone || ex.Runtime == "" {
		return WorkspaceAvailability{Status: WorkspaceReady}
	}
	rt, err := x.Runtime(ex.Runtime, ex.Host)
	if err != nil {
		return WorkspaceAvailability{Status: WorkspaceUnavailable, Err: err}
	}
	if ws, ok := rt.(WorkspaceStater); ok {
		return ws.WorkspaceAvailability()
	}
	if _, ok := rt.(WorkspaceRuntime); ok {
		return WorkspaceAvailability{Status: WorkspaceReady}
	}
	return WorkspaceAvailability{Status: WorkspaceUnavailable,
		Err: errcode.New(errcode.WorkspaceUnsupported, "executor %s %q serves no workspace", ex.Runtime, ex.Host)}
}

// Serve performs a workspace request on an executor (runtime, host) of
// x, for req.Session: in the daemon for standalone (with local's bounds),
// on the host otherwise, which is waited for a moment when it is not
// connected right now.
func Serve(ctx context.Context, x Executors, local workspace.Config, runtime session.Runtime, host string, req workspace.Request) (workspace.Result, error) {
	if runtime == session.RuntimeStandalone || runtime == "" {
		return workspace.Serve(ctx, req, local)
	}
	rt, err := x.Runtime(runtime, host)
	if err != nil {
		return workspace.Result{}, err
	}
	wr, ok := rt.(WorkspaceRuntime)
	if !ok {
		return workspace.Result{}, errcode.New(errcode.WorkspaceUnsupported, "executor %s %q serves no workspace", runtime, host)
	}
	// A host that is not connected right now (the daemon is starting it,
	// or reconnecting) is waited for a moment, not refused at once.
	deadline := time.Now().Add(hostConnectWait)
	for {
		res, err := wr.Workspace(ctx, req.Session, req)
		if !errcode.Is(err, errcode.ExecutorUnavailable) || !time.Now().Before(deadline) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hostConnectWait is how long a workspace request waits for its executor
// host to be connected.
const hostConnectWait = 5 * time.Second
