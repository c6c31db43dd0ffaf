package host

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/workspace"
)

// runCommand answers one command of link l; it runs in a goroutine of its
// own. A command for a session the host holds is first fenced (route.go):
// one older than the session's generation is refused before anything
// else, a resent one included, which Dedup would otherwise answer with
// its first result. Attach and status only read, so they are answered
// afresh each time; every other command passes through the host's Dedup,
// and its result waits for the session's records queued before it. A
// start's result instead comes before any record of the incarnation it
// started (which then flow on l from offset 1), and after any of the one
// it replaced: what the daemon receives between its start and the result
// is the old incarnation's.
func (h *Host) runCommand(l *link, cmd *hostproto.Command) {
	if cmd.Kind == hostproto.CommandStatus {
		l.result(ok(cmd.ID, h.status()), nil, 0)
		return
	}
	if !cmd.Kind.Known() {
		l.result(fail(cmd.ID, errcode.New(errcode.InvalidRequest, "unknown command kind %q", cmd.Kind)), nil, 0)
		return
	}
	if err := h.fence(l, cmd); err != nil {
		l.result(fail(cmd.ID, err), nil, 0)
		return
	}
	switch cmd.Kind {
	case hostproto.CommandAttach:
		h.attach(l, cmd)
		return
	case hostproto.CommandWorkspace:
		l.result(h.workspace(l, cmd), nil, 0)
		return
	}
	res, _, err := h.dedup.Do(l.ctx, cmd.ID, func() hostproto.CommandResult { return h.apply(cmd) })
	if err != nil {
		return // the link ended while a first copy ran; the daemon resends
	}
	s := h.lookup(cmd.SessionID)
	if cmd.Kind == hostproto.CommandStart {
		if s == nil || res.Error != nil {
			l.result(res, nil, 0)
		} else if err := s.routeTo(l, cmd.Generation, 0, res); err != nil {
			l.result(fail(cmd.ID, err), nil, 0) // a newer owner came while it started
		}
		return
	}
	var need uint64
	if s != nil {
		need = s.mark()
	}
	l.result(res, s, need)
}

// workspace serves a workspace operation. It only reads (a diff writes
// git objects, never the user's index or refs), so like status it is
// answered afresh each time instead of through Dedup. The root is the
// session's directory as the daemon knows it: the daemon that may start
// agents in a directory may read it; the host needs no session of its own
// for it, so the workspace outlives the agent.
func (h *Host) workspace(l *link, cmd *hostproto.Command) hostproto.CommandResult {
	req, err := decodePayload[workspace.Request](cmd)
	if err != nil {
		return fail(cmd.ID, err)
	}
	res, err := workspace.Serve(l.ctx, req, h.cfg.Workspace)
	if err != nil {
		return fail(cmd.ID, err)
	}
	return ok(cmd.ID, res)
}

func ok(id string, v any) hostproto.CommandResult {
	b, err := json.Marshal(v)
	if err != nil {
		return fail(id, err)
	}
	return hostproto.CommandResult{ID: id, Result: b}
}

func fail(id string, err error) hostproto.CommandResult {
	return hostproto.CommandResult{ID: id, Error: hostproto.ErrorFrom(err)}
}

// decodePayload reads a command's payload; none is the zero value.
func decodePayload[T any](cmd *hostproto.Command) (T, error) {
	var v T
	if len(cmd.Payload) == 0 || string(cmd.Payload) == "null" {
		return v, nil
	}
	if err := json.Unmarshal(cmd.Payload, &v); err != nil {
		return v, errcode.Wrap(errcode.InvalidRequest, err, "malformed %s payload: %v", cmd.Kind, err)
	}
	return v, nil
}

// apply performs a command the first time its id is seen.
func (h *Host) apply(cmd *hostproto.Command) hostproto.CommandResult {
	if cmd.Kind == hostproto.CommandStart {
		return h.start(cmd)
	}
	s := h.lookup(cmd.SessionID)
	if s == nil {
		return fail(cmd.ID, errcode.New(errcode.HostSessionUnknown, "the host holds no session %q", cmd.SessionID))
	}
	v, err := h.sessionCommand(s, cmd)
	if err != nil {
		return fail(cmd.ID, err)
	}
	return ok(cmd.ID, v)
}

// sessionCommand runs one of the agent's operations and returns its
// result payload.
func (h *Host) sessionCommand(s *session, cmd *hostproto.Command) (any, error) {
	ctx := h.life
	switch cmd.Kind {
	case hostproto.CommandNew:
		return onAgent(s, cmd, func(a *acp.Conn, p hostproto.NewPayload) (any, error) {
			id, err := a.NewSession(ctx, p.Params.ACP())
			if err != nil {
				return nil, err
			}
			s.updateMeta(func(m *meta) { m.AcpSessionID = id })
			return hostproto.NewResult{AcpSessionID: id, Options: hostproto.FromSessionOptions(a.SessionOptions())}, nil
		})
	case hostproto.CommandFork:
		return onAgent(s, cmd, func(a *acp.Conn, p hostproto.RestorePayload) (any, error) {
			id, err := a.ForkSession(ctx, p.AcpSessionID, p.Params.ACP())
			if err != nil {
				return nil, err
			}
			s.updateMeta(func(m *meta) { m.AcpSessionID = id })
			return hostproto.NewResult{AcpSessionID: id, Options: hostproto.FromSessionOptions(a.SessionOptions())}, nil
		})
	case hostproto.CommandLoad, hostproto.CommandResume:
		return onAgent(s, cmd, func(a *acp.Conn, p hostproto.RestorePayload) (any, error) {
			restore := a.ResumeSession
			if cmd.Kind == hostproto.CommandLoad {
				restore = a.LoadSession
			}
			if err := restore(ctx, p.AcpSessionID, p.Params.ACP()); err != nil {
				return nil, err
			}
			s.updateMeta(func(m *meta) { m.AcpSessionID = p.AcpSessionID })
			return hostproto.RestoreResult{Options: hostproto.FromSessionOptions(a.SessionOptions())}, nil
		})
	case hostproto.CommandPrompt:
		return onAgent(s, cmd, func(a *acp.Conn, p hostproto.PromptPayload) (any, error) {
			s.setRunning(+1)
			defer s.setRunning(-1)
			if p.CheckpointTurn != "" {
				h.checkpoint(s, p.CheckpointTurn, false)
			}
			reason, err := a.Prompt(ctx, p.AcpSessionID, p.Prompt)
			if p.CheckpointTurn != "" && ctx.Err() == nil {
				// The turn's end state, before anyone hears it ended: a
				// rewind or fork to it restores this (workspace/restore.go).
				h.checkpoint(s, p.CheckpointTurn, true)
			}
			if err != nil {
				return nil, err
			}
			return hostproto.PromptResult{StopReason: reason}, nil
		})
	case hostproto.CommandCancel:
		return onAgent(s, cmd, func(a *acp.Conn, p hostproto.SessionPayload) (any, error) {
			return struct{}{}, a.Cancel(ctx, p.AcpSessionID)
		})
	case hostproto.CommandPermissionAnswer:
		p, err := decodePayload[hostproto.PermissionAnswerPayload](cmd)
		if err != nil {
			return nil, err
		}
		return struct{}{}, s.answer(p)
	case hostproto.CommandStop:
		return s.stop()
	case hostproto.CommandSetMode:
		return onAgent(s, cmd, func(a *acp.Conn, p hostproto.SetModePayload) (any, error) {
			return struct{}{}, a.SetMode(ctx, p.AcpSessionID, p.ModeID)
		})
	case hostproto.CommandSetConfigOption:
		return onAgent(s, cmd, func(a *acp.Conn, p hostproto.SetConfigOptionPayload) (any, error) {
			opts, err := a.SetConfigOption(ctx, p.AcpSessionID, p.OptionID, p.Value)
			if err != nil {
				return nil, err
			}
			return hostproto.SetConfigOptionResult{ConfigOptions: opts}, nil
		})
	}
	return nil, errcode.New(errcode.InvalidRequest, "command %q does not apply to a session", cmd.Kind)
}

// onAgent decodes cmd's payload and runs f on the session's agent, if it
// runs.
func onAgent[P any](s *session, cmd *hostproto.Command, f func(a *acp.Conn, p P) (any, error)) (any, error) {
	p, err := decodePayload[P](cmd)
	if err != nil {
		return nil, err
	}
	a, err := s.liveAgent()
	if err != nil {
		return nil, err
	}
	return f(a, p)
}

func (s *session) setRunning(d int) {
	s.mu.Lock()
	s.running += d
	s.mu.Unlock()
	s.h.changed()
}

// stop ends the agent and answers how it ended, once its exit record is
// queued (so the result follows it). An agent that had already ended
// answers its exit again.
func (s *session) stop() (hostproto.StopResult, error) {
	s.mu.Lock()
	a, exited, exit := s.agent, s.exited, s.exit
	if a != nil {
		s.stopAsked = true
	}
	s.mu.Unlock()
	if a == nil {
		if exited {
			return hostproto.StopResult{Exit: exit}, nil
		}
		return hostproto.StopResult{}, errcode.New(errcode.InvalidState, "the agent of session %s is still starting", s.id)
	}
	a.Stop()
	<-s.exitQueued
	s.mu.Lock()
	defer s.mu.Unlock()
	return hostproto.StopResult{Exit: s.exit}, nil
}

// start launches a profile's agent for the session, replacing whatever an
// earlier incarnation of it left.
func (h *Host) start(cmd *hostproto.Command) hostproto.CommandResult {
	p, err := decodePayload[hostproto.StartPayload](cmd)
	if err == nil {
		err = validSessionID(cmd.SessionID)
	}
	if err != nil {
		return fail(cmd.ID, err)
	}
	unlock := h.lockSession(cmd.SessionID)
	defer unlock()
	gen := cmd.Generation
	if old := h.lookup(cmd.SessionID); old != nil {
		var err error
		if gen, err = old.handOver(gen); err != nil {
			return fail(cmd.ID, err)
		}
		old.log.Info("host: a new start replaces the session's previous agent")
		h.discard(old)
	}
	// Whatever is left of an earlier incarnation goes (its outbox would
	// carry its offsets on into the new one).
	if err := h.trash(filepath.Join(h.sessionsDir(), cmd.SessionID)); err != nil {
		return fail(cmd.ID, err)
	}
	s, err := h.openSession(cmd.SessionID, meta{SessionID: cmd.SessionID, ProfileID: p.ProfileID, Cwd: p.Cwd, StartedAt: time.Now().UTC(), Generation: gen})
	if err != nil {
		return fail(cmd.ID, err)
	}
	if err := s.writeMeta(); err != nil {
		// Its generation would not outlive a host restart.
		s.close()
		_ = h.trash(s.dir)
		return fail(cmd.ID, errcode.Wrap(errcode.Internal, err, "the host cannot write session %s's meta", cmd.SessionID))
	}
	if !h.register(s) {
		s.close()
		_ = h.trash(s.dir)
		return fail(cmd.ID, errShuttingDown)
	}
	conn, err := h.startAgent(s, p)
	if err != nil {
		h.discard(s)
		return fail(cmd.ID, err)
	}
	sb := sandboxOf(conn)
	s.updateMeta(func(m *meta) { m.Sandbox = sb })
	s.log.Info("host: agent started", "profile", p.ProfileID, "pid", conn.PID(), "sandbox", sb.State, "sandboxReason", sb.Reason)
	return ok(cmd.ID, hostproto.StartResult{Capabilities: hostproto.FromCapabilities(conn.Capabilities()), PID: conn.PID(), Sandbox: sb})
}

// attach answers CommandAttach: what the host knows of the session's
// agent, then its records after From on l.
func (h *Host) attach(l *link, cmd *hostproto.Command) {
	s := h.lookup(cmd.SessionID)
	if s == nil {
		l.result(fail(cmd.ID, errcode.New(errcode.HostSessionUnknown, "the host holds no session %q", cmd.SessionID)), nil, 0)
		return
	}
	p, err := decodePayload[hostproto.AttachPayload](cmd)
	if err != nil {
		l.result(fail(cmd.ID, err), nil, 0)
		return
	}
	s.mu.Lock()
	stopping := s.stopAsked && !s.exited
	s.mu.Unlock()
	if stopping {
		// An agent being stopped (the daemon that asked died before its
		// end) serves no one any more: the attach answers once it has
		// ended (its stop grace bounds the wait), as an agent that ended,
		// its exit record replayed. Answered at once, it would take the
		// next prompts and fail them.
		select {
		case <-s.exitQueued:
		case <-l.ctx.Done():
			return
		}
	}
	next := s.ob.Stats().Next
	s.mu.Lock()
	damaged, exitOff := s.damaged, s.exitOff
	s.mu.Unlock()
	if damaged != nil && exitOff != 0 && p.From >= exitOff {
		// The daemon committed records the damage took (the exit record
		// that says so took one of their offsets): it has every intact
		// record, and the session ends as lost, with the damage as cause.
		l.result(fail(cmd.ID, damaged), nil, 0)
		return
	}
	if p.From >= next {
		// The daemon committed records this outbox no longer has: the
		// host's machine crashed before their fsync (outbox SyncDelay),
		// and the agent went with it. The session is lost as the daemon
		// knew it; a later record could only reuse an offset it has.
		if damaged != nil {
			l.result(fail(cmd.ID, damaged), nil, 0)
			return
		}
		l.result(fail(cmd.ID, errcode.New(errcode.HostSessionUnknown,
			"the host's records of session %s end at offset %d, before offset %d the daemon committed: the host's machine crashed before it synced them", s.id, next-1, p.From)), nil, 0)
		return
	}
	r := hostproto.AttachResult{Pending: s.pendingList(), NextOffset: next}
	s.mu.Lock()
	r.PID, r.Exited, r.Sandbox = s.meta.PID, s.exited, s.meta.Sandbox
	if s.agent != nil {
		r.Capabilities = hostproto.FromCapabilities(s.agent.Capabilities())
		r.Options = hostproto.FromSessionOptions(s.agent.SessionOptions())
	}
	s.mu.Unlock()
	if err := s.routeTo(l, cmd.Generation, p.From, ok(cmd.ID, r)); err != nil {
		l.result(fail(cmd.ID, err), nil, 0) // a newer owner came meanwhile
		return
	}
	if p.From > 0 {
		s.noteAck(p.From) // the session's owner committed them
	}
}

func (h *Host) status() hostproto.StatusResult {
	ss := h.all()
	out := hostproto.StatusResult{StartedAt: h.startedAt.Format(time.RFC3339Nano), Sessions: []hostproto.SessionStatus{}}
	for _, s := range ss {
		out.Sessions = append(out.Sessions, s.status())
	}
	slices.SortFunc(out.Sessions, func(a, b hostproto.SessionStatus) int { return strings.Compare(a.SessionID, b.SessionID) })
	return out
}

// checkpointTimeout bounds a turn's checkpoint: the turn goes on without
// one rather than wait (its recovery report then says so).
const checkpointTimeout = 10 * time.Second

// checkpoint records the workspace as turn begins, before the agent gets
// the prompt, or (end) as it ended, before its result is sent
// (workspace.OpCheckpoint); a failure costs only the report, or a rewind
// to the turn falls back to the next turn's start.
func (h *Host) checkpoint(s *session, turn string, end bool) {
	s.mu.Lock()
	cwd := s.meta.Cwd
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
	defer cancel()
	if _, err := workspace.Serve(ctx, workspace.Request{Root: cwd, Op: workspace.OpCheckpoint, Session: s.id, Turn: turn, End: end}, h.cfg.Workspace); err != nil {
		s.log.Warn("host: turn checkpoint failed", "turn", turn, "end", end, "err", err)
	}
}
