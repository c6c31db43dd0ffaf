package executor

import (
	"encoding/json"
	"fmt"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// call is one command in flight: registered until its result arrives (or
// its caller leaves), and sent again, with the same id, on every new
// connection until then — except an attach, which must act on each
// connection anew and so takes a fresh id each time (rekeyAttachLocked).
type call struct {
	cmd   hostproto.Command
	agent *Agent // nil for a host-wide command (status)
	// seq orders sends: commands go out in the order they were made.
	seq uint64
	// sentGen is the connection the command was last written on (0: never).
	sentGen uint64
	// sent, if set, is called once after the first successful write.
	sent     func()
	sentOnce sync.Once
	// abandoned: the caller of a Start left before the answer (resultLocked
	// then stops an agent the host started).
	abandoned bool

	once sync.Once
	done chan struct{}
	res  hostproto.CommandResult
	err  error
}

func (c *call) finish(res hostproto.CommandResult, err error) {
	c.once.Do(func() {
		c.res, c.err = res, err
		close(c.done)
	})
}

// newCallLocked registers a command, or returns the one already
// registered under id (a PromptTurn or an answer made twice).
func (h *Host) newCallLocked(kind hostproto.CommandKind, id string, a *Agent, payload any, sent func()) *call {
	if c, ok := h.calls[id]; ok {
		return c
	}
	var raw json.RawMessage
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil { // payloads are plain structs of this package's making
			panic(fmt.Sprintf("executor: encode %s payload: %v", kind, err))
		}
		raw = b
	}
	h.seq++
	c := &call{cmd: hostproto.Command{ID: id, Kind: kind, Payload: raw}, agent: a, seq: h.seq, sent: sent, done: make(chan struct{})}
	if a != nil {
		c.cmd.SessionID = a.sessionID
		c.cmd.Generation = h.generation(a.sessionID)
	}
	h.calls[id] = c
	return c
}

// Command ids. A fresh id names one call; a derived one names an
// operation, so that the host's dedup applies it once however often the
// daemon sends it, across reconnects and daemon restarts.
func freshID(sessionID string, kind hostproto.CommandKind) string {
	return sessionID + "/" + string(kind) + "/" + uuid.NewString()
}

// turnID is a prompt turn's command id: a daemon that restarted mid-turn
// sends the same one and gets the turn's stop reason.
func turnID(sessionID, turn string) string { return sessionID + "/prompt/turn/" + turn }

// answerID is a permission answer's id: the host numbers requests
// uniquely, so an answer resent (or given again after a restart) is
// applied once.
func answerID(sessionID, requestID string) string { return sessionID + "/answer/" + requestID }

// disconnected is an error acp.Classify reads as acp.ClassDisconnected —
// its cause is the JSON-RPC "peer disconnected" error the ACP SDK returns
// when a local agent goes away — with a code of its own saying why.
func disconnected(code errcode.Code, format string, args ...any) *errcode.Error {
	msg := fmt.Sprintf(format, args...)
	return errcode.Wrap(code, sdk.NewInternalError(map[string]any{"error": "peer disconnected: " + msg}), "%s", msg)
}

// errAgentExited fails the calls of an agent whose exit record arrived:
// the SDK's own error for a local agent that went away mid-call.
var errAgentExited = sdk.NewInternalError(map[string]any{"error": "peer disconnected: the agent exited"})

var (
	errAbandoned = disconnected(errcode.AgentError, "the agent's start was abandoned")
	errDetached  = errcode.New(errcode.InvalidState, "the session is no longer attached to its executor host")
)

func decodeResult(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return errcode.Wrap(errcode.HostProtocolError, err, "malformed command result")
	}
	return nil
}

// onResult completes the call res answers. Bookkeeping that decides what
// may be sent next happens at once (resultLocked); the caller is answered
// in order with the session's records, after every record that arrived
// before the result has been handed to the handler.
func (h *Host) onResult(res hostproto.CommandResult) {
	h.mu.Lock()
	c := h.calls[res.ID]
	if c == nil {
		h.mu.Unlock()
		h.log.Debug("result of a command no longer waited for", "id", res.ID)
		return
	}
	delete(h.calls, res.ID)
	then := h.resultLocked(c, res)
	h.mu.Unlock()
	complete := func() {
		if then != nil {
			then()
		}
		if err := h.failedByExit(c, res); err != nil {
			c.finish(hostproto.CommandResult{}, err)
			return
		}
		c.finish(res, nil)
	}
	if c.agent == nil || !c.agent.enqueue(item{fn: complete}) {
		complete()
	}
}

// failedByExit returns the agent's end error for a session command the
// host failed after the agent's exit record (results come in order with
// the records): the host refused it because the agent was gone ("not
// running", after a host crash), so it fails as any call of an agent that
// went away does, classified acp.ClassDisconnected, and the turn's outcome
// comes from the exit. Nil otherwise.
func (h *Host) failedByExit(c *call, res hostproto.CommandResult) error {
	a := c.agent
	if res.Error == nil || a == nil {
		return nil
	}
	switch c.cmd.Kind {
	case hostproto.CommandStart, hostproto.CommandAttach, hostproto.CommandStop:
		return nil // their results settle the agent themselves
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !a.ended {
		return nil
	}
	return a.endErr
}

// resultLocked applies what a result means for the link and the agent; it
// returns what must happen in order with the session's records, if
// anything.
func (h *Host) resultLocked(c *call, res hostproto.CommandResult) func() {
	a := c.agent
	err := res.Err()
	if a != nil && errcode.Is(err, errcode.HostSessionFenced) {
		h.fencedLocked(c, err)
		return nil
	}
	switch c.cmd.Kind {
	case hostproto.CommandStart:
		a.startCall = nil
		if err != nil {
			h.unregisterLocked(a)
			return nil
		}
		var r hostproto.StartResult
		if derr := decodeResult(res.Result, &r); derr != nil {
			h.log.Error("start result", "session", a.sessionID, "err", derr)
		}
		a.setStarted(r.Capabilities.ACP(), r.PID, r.Sandbox, hostproto.SessionOptions{})
		a.established = true
		if c.abandoned {
			a.endLocked(acp.Exit{Code: -1, Stderr: "tetherd: the start was abandoned"}, false, errAbandoned)
			h.ensureStopLocked(a)
		}
		if a.linkGen != h.gen {
			// Answered on another connection than the one it was first
			// sent on: the records flow only once attached here.
			h.attachLocked(a)
		}
	case hostproto.CommandAttach:
		return h.attachResultLocked(c, res)
	case hostproto.CommandStop:
		return func() {
			var r hostproto.StopResult
			if err == nil {
				_ = decodeResult(res.Result, &r)
			} else {
				r.Exit = hostproto.Exit{Code: -1, Stderr: "tetherd: stop failed: " + err.Error()}
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			a.endLocked(h.exitOf(r.Exit), r.Exit.Lost, errAgentExited)
			if !a.exitSeen() {
				h.unregisterLocked(a) // no exit record will settle it
			}
		}
	case hostproto.CommandPermissionAnswer:
		if err != nil {
			h.log.Warn("permission answer refused", "session", a.sessionID, "id", c.cmd.ID, "err", err)
		}
	}
	return nil
}

// attachResultLocked handles the answer to a Start's or a reconnect's
// attach: from now on the session's commands may be sent on this
// connection.
func (h *Host) attachResultLocked(c *call, res hostproto.CommandResult) func() {
	a := c.agent
	a.attachCall = nil
	if err := res.Err(); err != nil {
		switch {
		case !a.established: // the caller's Attach fails with err
			h.unregisterLocked(a)
		case errcode.Is(err, errcode.HostSessionUnknown), errcode.Is(err, errcode.HostOutboxDamaged):
			lost := disconnected(errcode.ExecutorLost, "executor host %q no longer holds the session", h.cfg.Name)
			if errcode.Is(err, errcode.HostOutboxDamaged) {
				// The host has no record left to give: the damage took
				// the ones after what the daemon committed.
				a.mu.Lock()
				a.cause = err
				a.mu.Unlock()
			}
			a.endLocked(acp.Exit{Code: -1, Stderr: "tetherd: " + lost.Message, Lost: lost.Message}, !a.exitSeen(), lost)
			h.unregisterLocked(a)
		default:
			h.log.Error("re-attach failed; reconnecting", "session", a.sessionID, "err", err)
			if h.conn != nil {
				_ = h.conn.Close()
			}
		}
		return nil
	}
	var r hostproto.AttachResult
	if err := decodeResult(res.Result, &r); err != nil {
		h.log.Error("attach result", "session", a.sessionID, "err", err)
	}
	a.setStarted(r.Capabilities.ACP(), r.PID, r.Sandbox, r.Options)
	a.setHeld(r.Pending)
	a.mu.Lock()
	a.endedOnHost = r.Exited
	a.mu.Unlock()
	a.established = true
	a.linkGen = h.gen
	if a.finished() {
		h.unregisterLocked(a) // the attach's From acknowledged the exit
		return nil
	}
	h.kick(h.sendKick) // the session's queued commands
	a.remarkAck()      // commits made while the attach was on its way
	return func() {
		for _, p := range r.Pending {
			a.deliverRequest(p, 0)
		}
		a.linkUp()
	}
}

// attachLocked queues a reconnect's attach for a; its From is taken when
// it is sent.
func (h *Host) attachLocked(a *Agent) {
	if a.attachCall == nil {
		a.attachCall = h.newCallLocked(hostproto.CommandAttach, freshID(a.sessionID, hostproto.CommandAttach), a, nil, nil)
		h.kick(h.sendKick)
	}
}

// rekeyAttachLocked gives an attach about to be sent on a new connection a
// fresh id and the session's current From: the host must act on it again
// (a resent id would only get the first answer), and From is what the
// daemon has committed by now.
func (h *Host) rekeyAttachLocked(c *call) {
	delete(h.calls, c.cmd.ID)
	c.cmd.ID = freshID(c.agent.sessionID, hostproto.CommandAttach)
	c.cmd.Generation = h.generation(c.agent.sessionID)
	b, _ := json.Marshal(hostproto.AttachPayload{From: c.agent.attachFrom()})
	c.cmd.Payload = b
	h.calls[c.cmd.ID] = c
}

// sendableLocked reports whether c may go out on the current connection:
// host-wide commands and a session's start or attach at once, the others
// once the session is attached on this connection, so that their results
// never overtake the session's records.
func (h *Host) sendableLocked(c *call) bool {
	if c.agent == nil {
		return true
	}
	switch c.cmd.Kind {
	case hostproto.CommandStart, hostproto.CommandAttach:
		return true
	}
	return c.agent.linkGen == h.gen
}
