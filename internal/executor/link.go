package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// run keeps a connection to the host up until Close: dial, handshake,
// serve until the connection breaks, wait (exponential backoff, reset by a
// successful handshake), again.
func (h *Host) run() {
	defer h.wg.Done()
	failures := 0
	for {
		if h.connectAndServe() {
			failures = 0
		}
		if h.ctx.Err() != nil {
			return
		}
		failures++
		t := time.NewTimer(backoffDelay(failures, h.cfg.BackoffMin, h.cfg.BackoffMax))
		select {
		case <-h.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// backoffDelay is the wait before the next attempt after failures
// consecutive failed ones (≥ 1): lo, doubling, at most hi.
func backoffDelay(failures int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < failures && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// connectAndServe makes one connection and serves it until it breaks; it
// reports whether the handshake succeeded.
func (h *Host) connectAndServe() bool {
	if h.cfg.Dial == nil {
		h.failed(errors.New("no dialer configured"))
		return false
	}
	cctx, cancel := context.WithTimeout(h.ctx, h.cfg.ConnectTimeout)
	defer cancel()
	nc, err := h.cfg.Dial(cctx)
	if err != nil {
		h.failed(fmt.Errorf("connect: %w", err))
		return false
	}
	c, w, err := hostproto.Client(cctx, nc, hostproto.ClientConfig{Token: h.cfg.Token, DaemonID: h.cfg.DaemonID,
		DaemonVersion: h.cfg.DaemonVersion, Versions: h.cfg.Versions, Options: hostproto.Options{WriteTimeout: h.cfg.WriteTimeout, ReuseRecords: true}})
	if err != nil {
		_ = nc.Close()
		h.failed(fmt.Errorf("handshake: %w", err))
		return false
	}
	cancel()
	if !h.online(c, w) {
		_ = c.Close()
		return false
	}
	h.offline(h.serve(c))
	return true
}

// failed records why an attempt failed (Info's LastError).
func (h *Host) failed(err error) {
	if h.ctx.Err() != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastErr == nil || h.lastErr.Error() != err.Error() {
		h.log.Warn("executor host unreachable", "err", err) // once per reason, not per retry
	}
	h.lastErr = err
	h.tellUnreachableLocked()
	h.notifyLocked()
}

// tellUnreachableLocked gives every session waiting for the host (its
// agent's start or attach unanswered, or its link down) the reason the
// host is unreachable; each hears a reason once.
func (h *Host) tellUnreachableLocked() {
	if h.conn != nil || h.lastErr == nil {
		return
	}
	why := h.unavailableLocked()
	for _, a := range h.agents {
		if !a.ended {
			a.unreachable(why)
		}
	}
}

// online installs a fresh connection: commands in flight are resent on it
// (by the writer), every session the daemon had attached is attached
// again from its last commit.
func (h *Host) online(c *hostproto.Conn, w hostproto.Welcome) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.conn, h.welcome, h.lastErr, h.state = c, w, nil, StateConnected
	h.gen++
	h.downEpoch++ // disarms the lost timer
	if h.lostTimer != nil {
		h.lostTimer.Stop()
	}
	h.lastContact.Store(time.Now().UnixNano())
	for _, a := range h.agents {
		if a.established {
			h.attachLocked(a)
		}
	}
	h.notifyLocked()
	h.kick(h.sendKick)
	h.log.Info("executor host connected", "version", w.Version, "host_id", w.HostID, "host_version", w.HostVersion, "sessions", len(w.Sessions))
	if h.cfg.Generation != nil && w.Version < hostproto.FencingVersion {
		h.log.Warn("executor host predates fencing: a node that lost a session can still drive its agent there; upgrade the host",
			"version", w.Version, "fencing_version", hostproto.FencingVersion)
	}
	return true
}

// offline takes down a broken connection: commands stay pending, the
// sessions' handlers learn that the link is down, and the LostAfter
// countdown starts.
func (h *Host) offline(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conn = nil
	if h.closed {
		return
	}
	h.state = StateReconnecting
	h.lastErr = fmt.Errorf("connection broke: %w", err)
	h.log.Warn("executor host connection broke", "err", err)
	h.armLostLocked()
	// Why first: a handler tells the link's going down once, with why.
	h.tellUnreachableLocked()
	for _, a := range h.agents {
		a.linkGen = 0
		a.linkDown()
	}
	h.notifyLocked()
}

// serve reads c until it breaks, and pings the host meanwhile; a
// connection on which nothing arrives for PingInterval+PingTimeout is
// broken.
func (h *Host) serve(c *hostproto.Conn) error {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.ping(c, stop)
	}()
	defer func() {
		close(stop)
		_ = c.Close()
		wg.Wait()
	}()
	for {
		// Records are reused by c: each is done with (decoded or copied)
		// before the next Recv.
		m, err := c.RecvWithin(h.cfg.PingInterval + h.cfg.PingTimeout)
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || !errcode.Is(err, errcode.HostProtocolError) {
				return err
			}
			// A whole frame that is not a message: that frame alone is lost.
			h.log.Error("executor host sent a malformed message", "err", err)
			continue
		}
		h.lastContact.Store(c.Arrived().UnixNano())
		switch m := m.(type) {
		case *hostproto.Record:
			h.onRecord(m)
		case *hostproto.CommandResult:
			h.onResult(*m)
		case *hostproto.Ping:
			if err := c.Send(&hostproto.Pong{Nonce: m.Nonce}); err != nil {
				return err
			}
		case *hostproto.Pong:
		default:
			h.log.Error("executor host sent an unexpected message", "type", m.Type())
		}
	}
}

func (h *Host) ping(c *hostproto.Conn, stop <-chan struct{}) {
	t := time.NewTicker(h.cfg.PingInterval)
	defer t.Stop()
	for nonce := uint64(1); ; nonce++ {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := c.Send(&hostproto.Ping{Nonce: nonce}); err != nil {
				_ = c.Close()
				return
			}
		}
	}
}

// onRecord hands a record to its session's Agent.
func (h *Host) onRecord(r *hostproto.Record) {
	h.mu.Lock()
	a := h.agents[r.SessionID]
	h.mu.Unlock()
	if a == nil {
		h.log.Debug("record of a session not attached", "session", r.SessionID, "offset", r.Offset)
		return
	}
	a.accept(r)
}

// writer is the one goroutine that sends commands and acknowledgements,
// so that no caller — least of all a handler's done — waits for the
// network.
func (h *Host) writer() {
	defer h.wg.Done()
	var timer *time.Timer
	var due <-chan time.Time
	disarm := func() {
		if timer != nil {
			timer.Stop()
			timer, due = nil, nil
		}
	}
	defer disarm()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.sendKick:
			h.flush()
		case <-h.ackKick:
			h.ackMu.Lock()
			urgent := h.ackUrgent
			h.ackUrgent = false
			h.ackMu.Unlock()
			switch {
			case urgent:
				disarm()
				h.sendAcks()
			case timer == nil:
				timer = time.NewTimer(h.cfg.AckDelay)
				due = timer.C
			}
		case <-due:
			timer, due = nil, nil
			h.sendAcks()
		}
	}
}

// flush sends, in the order they were made, the commands that may go out
// on the current connection and were not yet written on it.
func (h *Host) flush() {
	h.mu.Lock()
	conn, gen := h.conn, h.gen
	if conn == nil {
		h.mu.Unlock()
		return
	}
	var out []*call
	for _, c := range h.calls {
		if c.sentGen != gen && h.sendableLocked(c) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(x, y *call) int { return cmp.Compare(x.seq, y.seq) })
	cmds := make([]hostproto.Command, len(out))
	for i, c := range out {
		switch {
		case c.cmd.Kind == hostproto.CommandAttach:
			h.rekeyAttachLocked(c)
		case c.cmd.Kind == hostproto.CommandStart && c.sentGen == 0:
			c.agent.linkGen = gen // its records flow on the connection it came on
		}
		c.sentGen = gen
		cmds[i] = c.cmd
	}
	h.mu.Unlock()
	for i, c := range out {
		if err := conn.Send(&cmds[i]); err != nil {
			h.log.Warn("send command", "id", cmds[i].ID, "err", err)
			_ = conn.Close() // the reader notices; all is resent on the next connection
			return
		}
		if c.sent != nil {
			c.sentOnce.Do(c.sent)
		}
	}
}

// markAck notes that a's commits advanced; urgent ones (AckEvery reached,
// or the exit committed) are sent at once, the others after AckDelay.
func (h *Host) markAck(a *Agent, urgent bool) {
	h.ackMu.Lock()
	h.ackDirty[a] = struct{}{}
	h.ackUrgent = h.ackUrgent || urgent
	h.ackMu.Unlock()
	h.kick(h.ackKick)
}

// sendAcks acknowledges every session's commits on the current
// connection. A session not attached on it is skipped: its next attach's
// From acknowledges the same. So is an agent the Host forgot: one that
// ended on this daemon's side only (Detach, a fenced command, Close) runs
// on for the session's next owner, whose attach takes its records from
// what the store holds, and the records it committed unseen once it
// ended (a record waiting for a credit then, or already queued) were
// stored by nobody. An agent whose exit is acknowledged is done with the
// host.
func (h *Host) sendAcks() {
	h.ackMu.Lock()
	dirty := h.ackDirty
	h.ackDirty = make(map[*Agent]struct{})
	h.ackMu.Unlock()
	h.mu.Lock()
	conn, gen := h.conn, h.gen
	var acks []hostproto.Ack
	var finished []*Agent
	for a := range dirty {
		if conn == nil || a.linkGen != gen || h.agents[a.sessionID] != a {
			continue
		}
		if off, ok := a.takeAck(); ok {
			acks = append(acks, hostproto.Ack{SessionID: a.sessionID, Offset: off})
		}
		if a.finished() {
			finished = append(finished, a)
		}
	}
	h.mu.Unlock()
	for i := range acks {
		if err := conn.Send(&acks[i]); err != nil {
			_ = conn.Close()
			return
		}
	}
	if len(finished) > 0 {
		h.mu.Lock()
		for _, a := range finished {
			h.unregisterLocked(a)
		}
		h.mu.Unlock()
	}
}
