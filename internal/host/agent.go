package host

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/sandbox"
)

// handler is the acp.Handler of one session's agent: everything the agent
// says becomes a record of that session.
type handler struct{ s *session }

var _ acp.LineHandler = handler{}

// UpdateLine queues the agent's session/update line as it is: the daemon
// decodes it (protocol version 2; a version 1 link converts it when it
// sends it). Flush appends it; its credit is released then.
func (h handler) UpdateLine(line []byte) {
	h.s.q.pushLine(hostproto.RecordACPUpdate, line)
}

// Flush appends the lines queued: the reader has read all the agent
// wrote, or needs their credits back.
func (h handler) Flush() { h.s.flush() }

// Update queues an update the acp package decoded itself (a line a
// LineHandler gets goes to UpdateLine instead; this is for any other).
func (h handler) Update(u acp.Update, done func()) {
	h.s.record(item{kind: hostproto.RecordUpdate, payload: hostproto.FromUpdate(u), done: done})
}

// RequestPermission numbers the request, records it and waits for the
// daemon's answer, with or without a daemon connected. A request the agent
// withdraws is recorded as closed; one that ends with the agent is not
// (the exit record says it all).
func (h handler) RequestPermission(ctx context.Context, req acp.PermissionRequest) (acp.PermissionOutcome, error) {
	s := h.s
	p := &pendingRequest{wire: hostproto.FromPermissionRequest(uuid.NewString(), req), answer: make(chan acp.PermissionOutcome, 1)}
	id := p.wire.RequestID
	s.mu.Lock()
	s.pending[id] = p
	s.mu.Unlock()
	s.h.changed()
	s.record(item{kind: hostproto.RecordRequest, payload: p.wire, appended: func(off uint64) {
		s.mu.Lock()
		p.offset = off
		s.mu.Unlock()
	}})
	defer s.h.changed()
	select {
	case out := <-p.answer:
		return out, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	_, open := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if !open { // answered as ctx ended: the answer stands
		return <-p.answer, nil
	}
	if !errors.Is(context.Cause(ctx), acp.ErrAgentGone) {
		s.record(item{kind: hostproto.RecordRequestClosed, payload: hostproto.RequestClosed{RequestID: id}})
	}
	return acp.PermissionOutcome{}, ctx.Err()
}

// answer delivers the daemon's answer to a pending request.
func (s *session) answer(a hostproto.PermissionAnswerPayload) error {
	s.mu.Lock()
	p, ok := s.pending[a.RequestID]
	delete(s.pending, a.RequestID)
	s.mu.Unlock()
	if !ok {
		return errcode.New(errcode.PermissionNotFound, "no pending permission request %q in session %s", a.RequestID, s.id).With("requestId", a.RequestID)
	}
	p.answer <- acp.PermissionOutcome{Cancelled: a.Cancelled, OptionID: a.OptionID}
	return nil
}

// startAgent launches the profile's agent for s, as the daemon's own
// sessions do (internal/sessions, startAgent): the profile from the
// host's agents config, reloaded for each start so that edits apply.
func (h *Host) startAgent(s *session, p hostproto.StartPayload) (*acp.Conn, error) {
	reg, err := agents.Load(h.life, agents.Config{DataDir: h.cfg.AgentsDir, Self: h.cfg.Self,
		EnvPassthrough: h.cfg.EnvPassthrough, Logger: h.log, Hidden: h.cfg.Hidden})
	if err != nil {
		return nil, err
	}
	spec, profile, err := reg.Spec(p.ProfileID)
	if err != nil {
		return nil, err
	}
	if p.ResumeToken != "" && len(profile.ResumeArgs) > 0 {
		spec.Args = append(spec.Args, profile.ExpandResumeArgs(p.ResumeToken)...)
	}
	spec.Dir = p.Cwd
	own, err := sandbox.Decode(p.Sandbox)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "the session's sandbox policy")
	}
	spec.Sandbox.Policy = own.Merge(spec.Sandbox.Policy)
	opts := acp.Options{Spec: spec, Files: h.cfg.Files, Handler: handler{s}, InitTimeout: h.cfg.InitTimeout,
		StopGrace: h.cfg.StopGrace, UpdateWindow: acp.DefaultUpdateWindow, Logger: s.log,
		OnSpawn: func(pid int) { s.updateMeta(func(m *meta) { m.PID = pid }) }}
	if p.FS {
		opts.Root = p.Cwd
	}
	if p.InitTimeoutMS > 0 {
		opts.InitTimeout = time.Duration(p.InitTimeoutMS) * time.Millisecond
	}
	if p.StopGraceMS > 0 {
		opts.StopGrace = time.Duration(p.StopGraceMS) * time.Millisecond
	}
	conn, err := acp.Start(h.life, opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		conn.Stop()
		return nil, errShuttingDown
	}
	s.agent = conn
	s.wg.Add(1) // under mu: close waits only after it saw the agent
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.watchExit(conn)
	}()
	return conn, nil
}

// sandboxOf is what the host reports of conn's sandbox.
func sandboxOf(conn *acp.Conn) hostproto.Sandbox {
	if conn.Sandboxed() {
		return hostproto.Sandbox{State: "on"}
	}
	return hostproto.Sandbox{State: "off", Reason: conn.SandboxReason()}
}

// watchExit appends the agent's exit record, the session's last, once the
// agent has ended. The record is queued before the session says it
// exited: a command refused as "not running" then marks (mark) after the
// exit, so its result reaches the daemon after the exit record.
func (s *session) watchExit(conn *acp.Conn) {
	<-conn.Done()
	e := s.withDamage(hostproto.FromExit(conn.Exit()))
	s.q.push(item{kind: hostproto.RecordExit, payload: e, appended: s.setExitOffset})
	s.mu.Lock()
	s.exited, s.exit = true, e
	s.mu.Unlock()
	close(s.exitQueued) // before the flush, which a full outbox holds up until close
	s.flush()
	s.log.Info("host: agent ended", "exit", e.Code, "signal", e.Signal)
	s.h.changed()
}
