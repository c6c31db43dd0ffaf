package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// Host is the daemon's side of one executor host: a connection kept up in
// the background (reconnecting with backoff), the commands in flight on
// it, and the Agents of the sessions the host runs. Every goroutine it
// starts ends by Close.
type Host struct {
	cfg    HostConfig
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// sendKick wakes the writer to send commands that became sendable;
	// ackKick to acknowledge commits.
	sendKick chan struct{}
	ackKick  chan struct{}
	// lastContact is when a message last arrived (unix nanoseconds).
	lastContact atomic.Int64

	mu     sync.Mutex
	closed bool
	// conn is the live connection, nil while there is none; gen numbers
	// connections, so that a command knows whether it was sent on this one.
	conn    *hostproto.Conn
	gen     uint64
	state   State
	welcome hostproto.Welcome
	lastErr error
	// downEpoch counts the times the link went down; a lost timer armed
	// for an older epoch does nothing.
	downEpoch uint64
	lostTimer *time.Timer
	// changed is closed (and replaced) whenever Info changes.
	changed chan struct{}
	calls   map[string]*call
	seq     uint64
	agents  map[string]*Agent

	ackMu     sync.Mutex
	ackDirty  map[*Agent]struct{}
	ackUrgent bool
}

// NewHost returns a Host for cfg and starts connecting in the background.
func NewHost(cfg HostConfig) *Host {
	cfg = cfg.withDefaults()
	if cfg.Name == "" {
		cfg.Name = "host"
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{cfg: cfg, log: cfg.Logger.With("executor_host", cfg.Name), ctx: ctx, cancel: cancel,
		sendKick: make(chan struct{}, 1), ackKick: make(chan struct{}, 1),
		state: StateReconnecting, changed: make(chan struct{}),
		calls: make(map[string]*call), agents: make(map[string]*Agent), ackDirty: make(map[*Agent]struct{})}
	h.mu.Lock()
	h.armLostLocked() // a host never reached counts as down since now
	h.mu.Unlock()
	h.wg.Add(2)
	go h.run()
	go h.writer()
	return h
}

// Name is the host's configured name.
func (h *Host) Name() string { return h.cfg.Name }

// Close stops connecting, closes the connection and ends every Agent of
// the host on the daemon's side: Done closes with an exit saying the
// connection was closed (the agents run on, on the host), pending calls
// fail, and permission requests' contexts end with acp.ErrAgentGone. It
// waits for every goroutine the Host started, including handlers'
// RequestPermission calls, which must honour their ctx.
func (h *Host) Close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		h.state = StateClosed
		if h.lostTimer != nil {
			h.lostTimer.Stop()
		}
		if h.conn != nil {
			_ = h.conn.Close()
		}
		err := disconnected(errcode.ServiceShuttingDown, "the connection to executor host %q was closed", h.cfg.Name)
		for _, a := range h.agents {
			a.endLocked(acp.Exit{Code: -1, Stderr: "tetherd: " + err.Message + "; the agent may still run there"}, false, err)
			h.unregisterLocked(a)
		}
		for id, c := range h.calls {
			delete(h.calls, id)
			c.finish(hostproto.CommandResult{}, err)
		}
		h.notifyLocked()
	}
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// Info reports the host as the daemon last saw it, without I/O.
func (h *Host) Info() HostInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	info := HostInfo{Name: h.cfg.Name, State: h.state, Version: h.welcome.Version, HostID: h.welcome.HostID,
		HostVersion: h.welcome.HostVersion, LastError: h.lastErr, HostSessions: slices.Clone(h.welcome.Sessions)}
	if n := h.lastContact.Load(); n != 0 {
		info.LastContact = time.Unix(0, n)
	}
	for id, a := range h.agents {
		if !a.ended {
			info.Attached = append(info.Attached, id)
		}
	}
	slices.Sort(info.Attached)
	return info
}

// Changed returns a channel closed at the next change of what Info
// reports (state, last error, attached sessions); call it again after.
func (h *Host) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

func (h *Host) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Status asks the host what it holds. It fails at once with
// errcode.ExecutorUnavailable while the host is not connected.
func (h *Host) Status(ctx context.Context) (hostproto.StatusResult, error) {
	h.mu.Lock()
	if err := h.usableLocked(); err != nil {
		h.mu.Unlock()
		return hostproto.StatusResult{}, err
	}
	if h.conn == nil {
		err := h.unavailableLocked()
		h.mu.Unlock()
		return hostproto.StatusResult{}, err
	}
	c := h.newCallLocked(hostproto.CommandStatus, freshID("", hostproto.CommandStatus), nil, nil, nil)
	h.mu.Unlock()
	h.kick(h.sendKick)
	var out hostproto.StatusResult
	raw, err := h.await(ctx, c)
	if err != nil {
		h.forget(c)
		return out, err
	}
	return out, decodeResult(raw, &out)
}

// Unavailable is the error a Start would fail with at once, without
// waiting: the Host is closed, the host is lost, or it refused the daemon
// (no retry mends that); nil while it is connected or being reconnected
// to, when a Start waits. Asking it writes nothing and sends nothing: a
// client retrying against a lost host must not grow the session's log.
func (h *Host) Unavailable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.usableLocked(); err != nil {
		return err
	}
	if h.state == StateLost || (h.conn == nil && refused(h.lastErr)) {
		return h.unavailableLocked()
	}
	return nil
}

// Start launches the agent of p.ProfileID on the host for the daemon's
// session sessionID and performs its ACP handshake there. h receives the
// agent's records, from offset 1; it may be called before Start returns.
// While the host is reconnecting Start waits (bounded by ctx), unless the
// host refused the daemon (refused): then, and when the host is lost or
// ctx ends while it is unreachable, Start fails with
// errcode.ExecutorUnavailable and why the host could not be reached. If
// ctx ends before the host answered, an agent the host starts anyway is
// stopped.
func (h *Host) Start(ctx context.Context, sessionID string, p hostproto.StartPayload, handler acp.Handler) (*Agent, error) {
	grace := h.cfg.StopGrace
	if p.StopGraceMS > 0 {
		grace = time.Duration(p.StopGraceMS) * time.Millisecond
	}
	a, err := h.register(ctx, sessionID, handler, grace, 0, func() error { return h.unavailableLocked() })
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.state == StateLost { // declared lost since register: no one would answer the call
		err := h.unavailableLocked()
		h.unregisterLocked(a)
		h.mu.Unlock()
		return nil, err
	}
	c := h.newCallLocked(hostproto.CommandStart, freshID(sessionID, hostproto.CommandStart), a, p, nil)
	a.startCall = c
	h.mu.Unlock()
	h.kick(h.sendKick)
	if err := h.awaitStart(ctx, c); err != nil {
		return nil, err
	}
	return a, nil
}

// awaitStart waits for the answer to the start c. A start not sent yet
// gives up as soon as the host refuses the daemon: no retry mends a wrong
// token, certificate or protocol version, so the session says why at once
// instead of waiting for its start timeout.
func (h *Host) awaitStart(ctx context.Context, c *call) error {
	for {
		h.mu.Lock()
		changed := h.changed
		if h.conn == nil && c.sentGen == 0 && refused(h.lastErr) && h.calls[c.cmd.ID] == c {
			err := h.unavailableLocked()
			delete(h.calls, c.cmd.ID)
			h.unregisterLocked(c.agent)
			h.mu.Unlock()
			return err
		}
		h.mu.Unlock()
		select {
		case <-c.done:
			_, err := h.await(context.Background(), c) // answered (or failed): that outcome
			return err
		case <-ctx.Done():
			h.mu.Lock()
			h.abandonStartLocked(c)
			err := ctx.Err()
			if h.conn == nil {
				err = h.unavailableLocked() // says why, which the bare deadline does not
			}
			h.mu.Unlock()
			return err
		case <-changed:
		}
	}
}

// refused reports whether a connection attempt failed because the host
// and the daemon do not accept each other: a wrong token, a certificate
// that is not the configured one, no common protocol version.
func refused(err error) bool {
	return errcode.Is(err, errcode.HostUnauthorized) || errcode.Is(err, errcode.HostCertificateRejected) ||
		errcode.Is(err, errcode.HostProtocolMismatch)
}

// Attach takes up the session the host already runs for sessionID (after
// a daemon restart): h receives its records after from, the last offset
// the daemon committed, then the permission requests still pending
// (AttachResult.Pending, with Offset 0), each request id once. A host that
// does not hold the session fails it with errcode.HostSessionUnknown, one
// unreachable past LostAfter with errcode.ExecutorLost; while the host is
// reconnecting Attach waits (bounded by ctx). An agent that ended while no
// daemon listened comes back already Done, its exit record replayed.
func (h *Host) Attach(ctx context.Context, sessionID string, from uint64, handler acp.Handler) (*Agent, error) {
	return h.attach(ctx, sessionID, from, handler, false)
}

// AttachLate takes up, after a daemon restart, the agent of a session
// whose turn this host's loss interrupted: the agent a lost Host keeps
// delivering as late output until its stop (declareLost), which the
// restart forgot. Like Attach, but as that lost agent's: every record
// after from goes to h as late output, the exit record included
// (acp.UpdateLateEnd), and once attached the agent is stopped, unless the
// host says it has ended. Gone closes when the host is done with it: its
// exit committed, or the host no longer holding the session.
func (h *Host) AttachLate(ctx context.Context, sessionID string, from uint64, handler acp.Handler) (*Agent, error) {
	return h.attach(ctx, sessionID, from, handler, true)
}

func (h *Host) attach(ctx context.Context, sessionID string, from uint64, handler acp.Handler, late bool) (*Agent, error) {
	a, err := h.register(ctx, sessionID, handler, h.cfg.StopGrace, from, h.lostErr)
	if err != nil {
		return nil, err
	}
	if late {
		// Before the attach is sent: its first record is late output.
		a.late.Store(true)
	}
	h.mu.Lock()
	if h.state == StateLost { // declared lost since register
		h.unregisterLocked(a)
		h.mu.Unlock()
		return nil, h.lostErr()
	}
	c := h.newCallLocked(hostproto.CommandAttach, freshID(sessionID, hostproto.CommandAttach), a, hostproto.AttachPayload{From: from}, nil)
	a.attachCall = c
	h.mu.Unlock()
	h.kick(h.sendKick)
	if _, err := h.await(ctx, c); err != nil {
		h.mu.Lock()
		h.unregisterLocked(a) // the agent runs on; a later Attach takes it up
		h.mu.Unlock()
		return nil, err
	}
	if late {
		h.mu.Lock()
		if !a.ended && !a.EndedOnHost() && h.agents[sessionID] == a {
			h.ensureStopLocked(a)
		}
		h.mu.Unlock()
	}
	return a, nil
}

// register makes a the session's Agent on this host, once an earlier one
// that ended, or is being stopped, has finished with the host (its stop
// and last ack). On a lost host it fails with whenLost's error, made under
// h.mu.
func (h *Host) register(ctx context.Context, sessionID string, handler acp.Handler, grace time.Duration, from uint64, whenLost func() error) (*Agent, error) {
	if handler == nil {
		return nil, errors.New("executor: a handler is required")
	}
	for {
		h.mu.Lock()
		if err := h.usableLocked(); err != nil {
			h.mu.Unlock()
			return nil, err
		}
		if h.state == StateLost {
			h.mu.Unlock()
			return nil, whenLost()
		}
		old := h.agents[sessionID]
		if old == nil {
			a := newAgent(h, sessionID, handler, grace, from)
			h.agents[sessionID] = a
			h.wg.Add(1)
			go a.dispatch()
			if h.conn == nil && h.lastErr != nil {
				a.unreachable(h.unavailableLocked()) // it waits for the host: say why now
			}
			h.notifyLocked()
			h.mu.Unlock()
			return a, nil
		}
		gone := old.quitCh
		if !old.ended {
			if old.stopCall == nil {
				h.mu.Unlock()
				return nil, errcode.New(errcode.InvalidState, "session %s already has an agent on executor host %q", sessionID, h.cfg.Name)
			}
			// Being stopped: an agent the session retired (it lost its
			// session, or idled) whose stop is still on its way. The
			// new one waits for its end, then for it to finish.
			gone = old.done
		}
		h.mu.Unlock()
		select {
		case <-gone:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// unregisterLocked forgets a: its records are no longer routed and its
// remaining commands are dropped.
func (h *Host) unregisterLocked(a *Agent) {
	if h.agents[a.sessionID] == a {
		delete(h.agents, a.sessionID)
		h.notifyLocked()
	}
	for id, c := range h.calls {
		if c.agent == a {
			delete(h.calls, id)
			c.finish(hostproto.CommandResult{}, a.endErrOr(errDetached))
		}
	}
	a.quit()
}

// abandonStartLocked handles a Start whose caller left before the answer:
// an agent the host started (or will start) must not run unwatched.
func (h *Host) abandonStartLocked(c *call) {
	a := c.agent
	switch {
	case a.established:
		a.endLocked(acp.Exit{Code: -1, Stderr: "tetherd: the start was abandoned"}, false, errAbandoned)
		h.ensureStopLocked(a)
	case h.calls[c.cmd.ID] != c: // it failed: nothing runs
	case c.sentGen == 0: // never sent: nothing will run
		delete(h.calls, c.cmd.ID)
		h.unregisterLocked(a)
	default:
		c.abandoned = true // the answer decides (resultLocked)
	}
}

// ensureStopLocked queues a's stop once; it is resent after reconnects
// until the host answers it.
func (h *Host) ensureStopLocked(a *Agent) {
	if a.stopCall == nil {
		a.stopCall = h.newCallLocked(hostproto.CommandStop, a.stopID, a, nil, nil)
		h.kick(h.sendKick)
	}
}

func (h *Host) usableLocked() error {
	if h.closed {
		return errcode.New(errcode.ServiceShuttingDown, "the connection to executor host %q was closed", h.cfg.Name)
	}
	return nil
}

// unavailableLocked is the error of a command the host cannot take now
// (it is not connected, or lost): errcode.ExecutorUnavailable, caused by
// why the last connection attempt failed.
func (h *Host) unavailableLocked() error {
	what := "is not connected"
	if h.state == StateLost {
		what = fmt.Sprintf("has been unreachable for more than %s", h.cfg.LostAfter)
	}
	if h.lastErr != nil {
		return errcode.Wrap(errcode.ExecutorUnavailable, h.lastErr, "executor host %q %s", h.cfg.Name, what)
	}
	return errcode.New(errcode.ExecutorUnavailable, "executor host %q %s", h.cfg.Name, what)
}

// lostErr is what calls pending on a lost host fail with: an
// errcode.ExecutorLost whose cause is a JSON-RPC "peer disconnected"
// error, so that acp.Classify says acp.ClassDisconnected, as for a local
// agent that went away.
func (h *Host) lostErr() error { return h.lostError() }

func (h *Host) lostError() *errcode.Error {
	return disconnected(errcode.ExecutorLost, "executor host %q unreachable for more than %s", h.cfg.Name, h.cfg.LostAfter)
}

// exitOf is how an agent ended as its host reported it: a host that
// found the session without its agent after a restart of its own (it
// crashed, was killed, or its machine restarted) lost the agent with it.
func (h *Host) exitOf(e hostproto.Exit) acp.Exit {
	exit := e.ACP()
	if e.Lost {
		exit.Lost = fmt.Sprintf("executor host %q stopped while the agent ran: it crashed, was killed or its machine restarted", h.cfg.Name)
	}
	return exit
}

// armLostLocked starts the LostAfter countdown of a link that just went
// down (or was never up).
func (h *Host) armLostLocked() {
	h.downEpoch++
	epoch := h.downEpoch
	h.lostTimer = time.AfterFunc(h.cfg.LostAfter, func() { h.declareLost(epoch) })
}

// declareLost ends every agent of a host that stayed unreachable past
// LostAfter. Their commands fail; each agent's stop stays queued (and a
// Start's outcome awaited), so that the host, when it comes back, does not
// keep running agents the daemon gave up on.
func (h *Host) declareLost(epoch uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.conn != nil || epoch != h.downEpoch || h.state == StateLost {
		return
	}
	h.state = StateLost
	err := h.lostError()
	h.log.Warn("executor host lost", "after", h.cfg.LostAfter, "err", h.lastErr)
	for id, c := range h.calls {
		switch {
		case c.cmd.Kind == hostproto.CommandStart:
			// As a Start made now would: unavailable, and why.
			c.finish(hostproto.CommandResult{}, h.unavailableLocked())
			h.abandonStartLocked(c)
		case c.cmd.Kind == hostproto.CommandAttach && !c.agent.established:
			delete(h.calls, id)
			c.finish(hostproto.CommandResult{}, err)
			h.unregisterLocked(c.agent)
		case c.cmd.Kind == hostproto.CommandAttach, c.cmd.Kind == hostproto.CommandStop:
			// kept: the clean-up when the host is back
		default:
			delete(h.calls, id)
			c.finish(hostproto.CommandResult{}, err)
		}
	}
	for _, a := range h.agents {
		if a.established && !a.ended {
			a.endLocked(acp.Exit{Code: -1, Stderr: "tetherd: " + err.Message, Lost: err.Message}, true, err)
			a.late.Store(true)
			h.ensureStopLocked(a)
		}
	}
	h.notifyLocked()
}

// await waits for c's answer: its result, the error it failed with, or
// ctx's error.
func (h *Host) await(ctx context.Context, c *call) (json.RawMessage, error) {
	select {
	case <-c.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c.err != nil {
		return nil, c.err
	}
	if err := c.res.Err(); err != nil {
		return nil, err
	}
	return c.res.Result, nil
}

// forget drops a call whose caller left; an answer arriving later is
// ignored.
func (h *Host) forget(c *call) {
	h.mu.Lock()
	if h.calls[c.cmd.ID] == c {
		delete(h.calls, c.cmd.ID)
	}
	h.mu.Unlock()
}

func (h *Host) kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
