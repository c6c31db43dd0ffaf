package executor

import (
	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
)

// generation is the fencing token a command for sessionID carries now
// (HostConfig.Generation; 0 without it). The caller holds h.mu.
func (h *Host) generation(sessionID string) uint64 {
	if h.cfg.Generation == nil {
		return 0
	}
	return h.cfg.Generation(sessionID)
}

// fencedLocked handles a session command the host refused as fenced: a
// node with a newer generation owns the session, so this one lost it. The
// Agent ends on this daemon's side only — the agent runs on for its new
// owner, so no stop is sent — with err (errcode.HostSessionFenced) as the
// error of its calls, and is forgotten: its records, if any still come,
// are neither handed on nor acknowledged.
func (h *Host) fencedLocked(c *call, err error) {
	a := c.agent
	switch {
	case c == a.startCall:
		a.startCall = nil
	case c == a.attachCall:
		a.attachCall = nil
	}
	if !a.ended {
		h.log.Warn("executor host refused a command as fenced: another node owns the session now", "session", a.sessionID, "id", c.cmd.ID, "err", err)
		a.mu.Lock()
		a.fenced = true
		a.mu.Unlock()
		a.endLocked(acp.Exit{Code: -1, Stderr: "tetherd: " + err.Error()}, false, err)
	}
	h.unregisterLocked(a)
}

// Fenced reports, once Done is closed, whether the agent ended on this
// daemon's side because its host refused a command as fenced
// (errcode.HostSessionFenced): another node owns the session now, and the
// agent runs on for it.
func (a *Agent) Fenced() bool {
	select {
	case <-a.done:
	default:
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fenced
}

// Detach stops following the session on this daemon without stopping its
// agent: this node lost the session's lease (another node takes it), so
// the Agent ends here (Done; its calls fail with errcode.SessionLeaseLost)
// with no stop sent, is forgotten, and the host keeps the session's
// records for its next owner's attach.
func (a *Agent) Detach() {
	h := a.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if !a.ended {
		err := errcode.New(errcode.SessionLeaseLost, "this node no longer owns session %s", a.sessionID)
		a.endLocked(acp.Exit{Code: -1, Stderr: "tetherd: " + err.Message}, false, err)
	}
	h.unregisterLocked(a)
}
