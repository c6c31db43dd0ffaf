package executor

import (
	"context"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/workspace"
)

// Workspace performs a workspace operation on the host (the session's
// files and git state there), whether or not the session's agent runs.
// A host whose protocol predates the workspace answers
// errcode.WorkspaceUnsupported.
func (h *Host) Workspace(ctx context.Context, sessionID string, req workspace.Request) (workspace.Result, error) {
	h.mu.Lock()
	if err := h.usableLocked(); err != nil {
		h.mu.Unlock()
		return workspace.Result{}, err
	}
	if h.conn == nil {
		err := h.unavailableLocked()
		h.mu.Unlock()
		return workspace.Result{}, err
	}
	if v := h.welcome.Version; v < hostproto.CommandWorkspace.Since() {
		h.mu.Unlock()
		return workspace.Result{}, errcode.New(errcode.WorkspaceUnsupported,
			"executor host %q speaks protocol version %d, which has no workspace (version %d): upgrade the host", h.cfg.Name, v, hostproto.CommandWorkspace.Since())
	}
	c := h.newCallLocked(hostproto.CommandWorkspace, freshID(sessionID, hostproto.CommandWorkspace), nil, req, nil)
	if sessionID != "" {
		// Fenced like the session's agent commands (version 4), though
		// it needs no agent.
		c.cmd.SessionID, c.cmd.Generation = sessionID, h.generation(sessionID)
	}
	h.mu.Unlock()
	h.kick(h.sendKick)
	var out workspace.Result
	raw, err := h.await(ctx, c)
	if err != nil {
		h.forget(c)
		return out, err
	}
	return out, decodeResult(raw, &out)
}
