package hosted

import (
	"context"
	"errors"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/executor"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/workspace"
)

// hostRuntime starts and attaches agents on one executor host.
type hostRuntime struct{ h *executor.Host }

// What a host runtime is to the session core: it starts and attaches
// agents, takes up a lost agent's late output, lists what its host holds
// and serves its sessions' workspaces.
var (
	_ runtimes.HostRuntime      = hostRuntime{}
	_ runtimes.LateAttacher     = hostRuntime{}
	_ runtimes.SessionLister    = hostRuntime{}
	_ runtimes.WorkspaceRuntime = hostRuntime{}
	_ runtimes.WorkspaceStater  = hostRuntime{}
)

// Start asks the host to launch the session's profile: the host resolves
// it from its own agent config, never from a command line of ours.
func (r hostRuntime) Start(ctx context.Context, req runtimes.StartRequest) (runtimes.Agent, error) {
	p := hostproto.StartPayload{ProfileID: req.ProfileID, ResumeToken: req.ResumeToken, Cwd: req.Spec.Dir,
		FS: req.Root != "", InitTimeoutMS: req.InitTimeout.Milliseconds(), StopGraceMS: req.StopGrace.Milliseconds(),
		Sandbox: req.Sandbox.Encode()}
	a, err := r.h.Start(ctx, req.SessionID, p, req.Handler)
	if err != nil {
		return nil, err // never a typed nil *executor.Agent in the interface
	}
	if req.OnSpawn != nil && a.PID() > 0 {
		req.OnSpawn(a.PID())
	}
	return a, nil
}

// Unavailable says, without trying, that a start would fail now.
func (r hostRuntime) Unavailable() error { return r.h.Unavailable() }

// Attach takes up the session's agent on the host.
func (r hostRuntime) Attach(ctx context.Context, req runtimes.AttachRequest) (runtimes.Agent, error) {
	a, err := r.h.Attach(ctx, req.SessionID, req.From, req.Handler)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// AttachLate takes up a lost agent's late output on the host.
func (r hostRuntime) AttachLate(ctx context.Context, req runtimes.AttachRequest) (runtimes.Agent, error) {
	a, err := r.h.AttachLate(ctx, req.SessionID, req.From, req.Handler)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// SessionIDs lists the sessions the host holds (its status).
func (r hostRuntime) SessionIDs(ctx context.Context) ([]string, error) {
	st, err := r.h.Status(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(st.Sessions))
	for _, s := range st.Sessions {
		ids = append(ids, s.SessionID)
	}
	return ids, nil
}

// WorkspaceAvailability says, from what the daemon last saw of the host,
// whether it serves workspaces now: connected, and speaking a protocol
// version that has them.
func (r hostRuntime) WorkspaceAvailability() runtimes.WorkspaceAvailability {
	in := r.h.Info()
	switch {
	case in.State == executor.StateConnected && in.Version >= hostproto.CommandWorkspace.Since():
		return runtimes.WorkspaceAvailability{Status: runtimes.WorkspaceReady}
	case in.State == executor.StateConnected:
		return runtimes.WorkspaceAvailability{Status: runtimes.WorkspaceUnavailable, Err: errcode.New(errcode.WorkspaceUnsupported,
			"executor host %q speaks protocol version %d, which has no workspace (version %d): upgrade the host", in.Name, in.Version, hostproto.CommandWorkspace.Since())}
	}
	what, status := "is not connected yet", runtimes.WorkspaceStarting
	if in.State != executor.StateReconnecting {
		what, status = "cannot be reached", runtimes.WorkspaceUnavailable
	}
	if in.LastError != nil {
		why := in.LastError.Error()
		var de *errcode.Error
		if errors.As(in.LastError, &de) {
			why = de.Message
		}
		return runtimes.WorkspaceAvailability{Status: status, Err: errcode.Wrap(errcode.ExecutorUnavailable, in.LastError, "executor host %q %s: %s", in.Name, what, why)}
	}
	return runtimes.WorkspaceAvailability{Status: status, Err: errcode.New(errcode.ExecutorUnavailable, "executor host %q %s", in.Name, what)}
}

// Workspace performs a workspace operation on the host, in the session's
// directory there.
func (r hostRuntime) Workspace(ctx context.Context, sessionID string, req workspace.Request) (workspace.Result, error) {
	return r.h.Workspace(ctx, sessionID, req)
}

// An executor host's agent is an Agent, and the handler the session core
// gives it (runtimes.HostHandler) takes every report the host's client
// offers: link changes, why the host cannot be reached, and the records
// that bring no update.
var (
	_ runtimes.Agent         = (*executor.Agent)(nil)
	_ executor.LinkHandler   = runtimes.HostHandler(nil)
	_ executor.WaitHandler   = runtimes.HostHandler(nil)
	_ executor.RecordHandler = runtimes.HostHandler(nil)
)
