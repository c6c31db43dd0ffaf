package sessions

import (
	"context"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/workspace"
)

// WorkspaceRuntime is a Runtime that serves its sessions' workspaces
// where their agents run (an executor host's machine). The standalone
// runtime needs none: its sessions' files are the daemon's own.
type WorkspaceRuntime interface {
	Workspace(ctx context.Context, sessionID string, req workspace.Request) (workspace.Result, error)
}

// Workspace performs a workspace operation (files, git) on a session's
// directory, served by the session's executor: in the daemon for a
// standalone session, on its host otherwise. It never goes through the
// session's actor and needs no agent: the workspace works while the agent
// is stopped, failed to resume or cannot resume, as long as the executor
// can be reached (else errcode.ExecutorUnavailable). req.Root is set here
// from the session; a closed session's directory is still served.
func (m *Manager) Workspace(ctx context.Context, sessionID string, req workspace.Request) (workspace.Result, error) {
	sess, err := m.store.GetSession(ctx, sessionID)
	if err != nil {
		return workspace.Result{}, err
	}
	ex, err := m.store.GetExecutor(ctx, sessionID)
	if err != nil && !errcode.Is(err, errcode.SessionNotFound) {
		return workspace.Result{}, err
	}
	req.Root = sess.Cwd
	if ex.Runtime == store.RuntimeStandalone || ex.Runtime == "" {
		return workspace.Serve(ctx, req, m.cfg.Workspace)
	}
	rt, err := m.cfg.Executors.Runtime(ex.Runtime, ex.Host)
	if err != nil {
		return workspace.Result{}, err
	}
	wr, ok := rt.(WorkspaceRuntime)
	if !ok {
		return workspace.Result{}, errcode.New(errcode.WorkspaceUnsupported, "executor %s %q serves no workspace", ex.Runtime, ex.Host)
	}
	return wr.Workspace(ctx, sessionID, req)
}

// Workspace implements WorkspaceRuntime.
func (r hostRuntime) Workspace(ctx context.Context, sessionID string, req workspace.Request) (workspace.Result, error) {
	return r.h.Workspace(ctx, sessionID, req)
}
