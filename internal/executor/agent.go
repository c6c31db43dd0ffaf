package executor

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// Agent is one session's agent on an executor host, as the daemon drives
// it: the method set of runtimes.Agent (PromptTurn, Lost and what else only
// a hosted agent knows included). Its calls
// are commands to the host; they survive a broken connection (resent with
// their ids once the daemon has reconnected and re-attached the session)
// and fail only when the agent ends: it exited (the error the ACP SDK
// gives for a local agent that went away, acp.ClassDisconnected), its host
// stayed unreachable past LostAfter (errcode.ExecutorLost, also
// acp.ClassDisconnected), or the Host was closed
// (errcode.ServiceShuttingDown, likewise).
type Agent struct {
	h         *Host
	sessionID string
	handler   acp.Handler
	link      LinkHandler // nil unless handler implements it
	wait      WaitHandler // likewise
	records   RecordHandler
	grace     time.Duration
	stopID    string
	// credits holds one token per update handed to the handler and not
	// yet done (the update window).
	credits chan struct{}
	done    chan struct{}
	// quitCh closes when the Host forgets the agent; the dispatcher then
	// ends.
	quitCh   chan struct{}
	quitOnce sync.Once
	wake     chan struct{}
	// lines decodes the agent's session/update lines (version 2
	// records); the connection's reader alone uses it.
	lines acp.UpdateDecoder
	// retired is set once the agent ended: records still arriving are
	// committed without the handler.
	retired atomic.Bool
	// late is set while an agent that ended because its host was lost
	// may still deliver records: when the host comes back, what the agent
	// sent meanwhile (its outbox) goes to the handler, as the interrupted
	// turn's late output, until the agent's exit record (the stop that
	// follows). Link changes are not told: the session has moved on.
	late atomic.Bool

	// Under Host.mu.
	established bool // the host runs it (start or attach answered)
	ended       bool
	endErr      error
	linkGen     uint64 // the connection it is attached on, 0 when none
	startCall   *call
	attachCall  *call
	stopCall    *call

	mu sync.Mutex
	// queue holds the items to deliver from queue[qhead] on (queue.go):
	// popping moves qhead, so the array is reused, not reallocated as a
	// slice cut from the front would be at every growth (at full speed
	// that was 2x an item's 150 bytes of garbage per record).
	queue    []item
	qhead    int
	quitting bool
	// delivering: an item is being delivered, by the dispatcher or inline
	// by the connection's reader (accept); the other waits, so order
	// holds.
	delivering bool
	// lastSeen is the highest offset taken from the host: a replay after a
	// reconnect resends what the daemon has not committed, and what was
	// already taken is dropped.
	lastSeen uint64
	commits  commitTracker
	acked    uint64
	// ackMark is what the Host was told since it last took an
	// acknowledgement (takeAck) or an attach carried one: a settle tells
	// it only something new, not every commit.
	ackMark int
	// exitOffset is the exit record's offset, 0 until it arrives.
	exitOffset uint64
	seen       map[string]bool // request ids handed to the handler
	reqs       map[string]*openRequest
	// reqWG counts the handler's RequestPermission calls and what follows
	// them (the answer queued).
	reqWG      sync.WaitGroup
	reqsClosed bool
	down       bool // a link-down was queued and no link-up since
	// toldWhy is the last reason given to the WaitHandler since the link
	// was last up ("" if none).
	toldWhy string
	caps    acp.Capabilities
	pid     int
	sandbox hostproto.Sandbox
	options acp.SessionOptions
	exit    acp.Exit
	lost    bool
	// cause is why the agent's records ended early, when the host says
	// (hostproto.Exit.Cause; errcode.HostOutboxDamaged), nil otherwise.
	cause error
	// fenced: the host refused a command as fenced (fence.go).
	fenced bool
	// held are the permission requests the host held at the last attach.
	held []string
	// endedOnHost: the last attach's answer said the agent had ended.
	endedOnHost bool
}

func newAgent(h *Host, sessionID string, handler acp.Handler, grace time.Duration, from uint64) *Agent {
	a := &Agent{h: h, sessionID: sessionID, handler: handler, grace: grace, stopID: freshID(sessionID, hostproto.CommandStop),
		credits: make(chan struct{}, h.cfg.UpdateWindow), done: make(chan struct{}), quitCh: make(chan struct{}),
		wake: make(chan struct{}, 1), lastSeen: from, commits: commitTracker{frontier: from}, acked: from,
		seen: make(map[string]bool), reqs: make(map[string]*openRequest)}
	a.link, _ = handler.(LinkHandler)
	a.wait, _ = handler.(WaitHandler)
	a.records, _ = handler.(RecordHandler)
	a.lines.Logger = h.log.With("session", sessionID)
	return a
}

// Capabilities is what the agent advertised in initialize (as the host
// reported it in the start's or attach's answer).
func (a *Agent) Capabilities() acp.Capabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.caps.Clone()
}

// SessionOptions is what the last successful new, load or resume (or the
// attach) announced about modes and config options.
func (a *Agent) SessionOptions() acp.SessionOptions {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.options
}

// PendingPermissions are the ids of the permission requests the host
// still held when the agent was last attached: a daemon that restarted
// with other requests pending in its store knows those were answered or
// withdrawn meanwhile.
func (a *Agent) PendingPermissions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.held...)
}

// PID is the agent's process id on a local host, 0 on a remote one.
func (a *Agent) PID() int {
	if !a.h.cfg.Local {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pid
}

// Sandboxed reports whether the agent runs in its sandbox on the host.
func (a *Agent) Sandboxed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sandbox.State == "on"
}

// SandboxReason says why the agent runs without a sandbox: the host's
// reason, or that the host predates sandboxes.
func (a *Agent) SandboxReason() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sandbox.State == "" {
		return "the executor host is older than sandboxes (issue 31)"
	}
	return a.sandbox.Reason
}

// Gone closes when the Host forgets the agent: it is done with the host
// (its exit record committed, which its handler had with the records
// before it), the host no longer holds its session, or the Host was
// closed.
func (a *Agent) Gone() <-chan struct{} { return a.quitCh }

// Done closes once the agent has ended: its exit record arrived, Stop gave
// up on an unreachable host, the host was lost, or the Host was closed.
func (a *Agent) Done() <-chan struct{} { return a.done }

// Exit describes how the agent ended; it waits for Done.
func (a *Agent) Exit() acp.Exit {
	<-a.done
	return a.exit
}

// ExitCause is, once Done is closed, what the host knows of why the
// agent's records ended where they did, nil if nothing: an error with
// errcode.HostOutboxDamaged when it found the session's outbox damaged
// (its message says what was lost).
func (a *Agent) ExitCause() error {
	select {
	case <-a.done:
	default:
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cause
}

// Lost reports, once Done is closed, whether the agent was lost rather
// than seen to exit: its host stayed unreachable past LostAfter, no longer
// held the session, or reported in the exit record that it died under the
// agent.
func (a *Agent) Lost() bool {
	select {
	case <-a.done:
		return a.lost
	default:
		return false
	}
}

// NewSession opens a fresh ACP session and returns its id.
func (a *Agent) NewSession(ctx context.Context, p acp.SessionParams) (string, error) {
	var r hostproto.NewResult
	if err := a.call(ctx, hostproto.CommandNew, "", hostproto.NewPayload{Params: hostproto.FromSessionParams(p)}, nil, &r); err != nil {
		return "", err
	}
	a.setOptions(r.Options)
	return r.AcpSessionID, nil
}

// ForkSession opens a copy of a stored session (the unstable
// session/fork) and returns its id.
func (a *Agent) ForkSession(ctx context.Context, id string, p acp.SessionParams) (string, error) {
	var r hostproto.NewResult
	if err := a.call(ctx, hostproto.CommandFork, "", hostproto.RestorePayload{AcpSessionID: id, Params: hostproto.FromSessionParams(p)}, nil, &r); err != nil {
		return "", err
	}
	a.setOptions(r.Options)
	return r.AcpSessionID, nil
}

// LoadSession reopens a stored session; its replay reaches the handler
// before LoadSession returns.
func (a *Agent) LoadSession(ctx context.Context, id string, p acp.SessionParams) error {
	return a.restore(ctx, hostproto.CommandLoad, id, p)
}

// ResumeSession reattaches to a stored session without replay.
func (a *Agent) ResumeSession(ctx context.Context, id string, p acp.SessionParams) error {
	return a.restore(ctx, hostproto.CommandResume, id, p)
}

func (a *Agent) restore(ctx context.Context, kind hostproto.CommandKind, id string, p acp.SessionParams) error {
	var r hostproto.RestoreResult
	if err := a.call(ctx, kind, "", hostproto.RestorePayload{AcpSessionID: id, Params: hostproto.FromSessionParams(p)}, nil, &r); err != nil {
		return err
	}
	a.setOptions(r.Options)
	return nil
}

// PromptNotify runs one prompt turn under a fresh command id and returns
// the agent's stop reason; sent is called once the command has been
// written to the host. Prefer PromptTurn, which a restarted daemon can
// take up again.
func (a *Agent) PromptNotify(ctx context.Context, sessionID string, prompt json.RawMessage, sent func()) (string, error) {
	return a.prompt(ctx, "", hostproto.PromptPayload{AcpSessionID: sessionID, Prompt: prompt}, sent)
}

// PromptTurn is PromptNotify under a command id derived from the daemon
// session and turnID: a daemon that restarted mid-turn calls it again with
// the same turn (on the Agent Attach returned) and gets the turn's stop
// reason once the host's turn ends, instead of prompting twice.
func (a *Agent) PromptTurn(ctx context.Context, acpSessionID, turn string, prompt json.RawMessage, sent func()) (string, error) {
	return a.prompt(ctx, turnID(a.sessionID, turn), hostproto.PromptPayload{AcpSessionID: acpSessionID, Prompt: prompt, CheckpointTurn: turn}, sent)
}

func (a *Agent) prompt(ctx context.Context, id string, p hostproto.PromptPayload, sent func()) (string, error) {
	var r hostproto.PromptResult
	if err := a.call(ctx, hostproto.CommandPrompt, id, p, sent, &r); err != nil {
		return "", err
	}
	return r.StopReason, nil
}

// Cancel asks the agent to end the running turn (session/cancel).
func (a *Agent) Cancel(ctx context.Context, sessionID string) error {
	return a.call(ctx, hostproto.CommandCancel, "", hostproto.SessionPayload{AcpSessionID: sessionID}, nil, nil)
}

// SetMode sends session/set_mode.
func (a *Agent) SetMode(ctx context.Context, sessionID, modeID string) error {
	return a.call(ctx, hostproto.CommandSetMode, "", hostproto.SetModePayload{AcpSessionID: sessionID, ModeID: modeID}, nil, nil)
}

// SetConfigOption sends session/set_config_option and returns the full set
// of options the agent answered.
func (a *Agent) SetConfigOption(ctx context.Context, sessionID, optionID string, value json.RawMessage) (json.RawMessage, error) {
	var r hostproto.SetConfigOptionResult
	err := a.call(ctx, hostproto.CommandSetConfigOption, "",
		hostproto.SetConfigOptionPayload{AcpSessionID: sessionID, OptionID: optionID, Value: value}, nil, &r)
	return r.ConfigOptions, err
}

// call runs one command of the agent (a fresh id unless id is given) and
// decodes its result into out (if not nil).
func (a *Agent) call(ctx context.Context, kind hostproto.CommandKind, id string, payload any, sent func(), out any) error {
	h := a.h
	if id == "" {
		id = freshID(a.sessionID, kind)
	}
	h.mu.Lock()
	if err := h.usableLocked(); err != nil {
		h.mu.Unlock()
		return err
	}
	if a.ended {
		err := a.endErr
		h.mu.Unlock()
		return err
	}
	c := h.newCallLocked(kind, id, a, payload, sent)
	h.mu.Unlock()
	h.kick(h.sendKick)
	raw, err := h.await(ctx, c)
	if c.sent != nil && c.err == nil && ctx.Err() == nil {
		// The host answered, so it has the command: sent runs before the
		// caller learns the answer, even if the writer is slow to call it.
		c.sentOnce.Do(c.sent)
	}
	if err != nil {
		if ctx.Err() != nil {
			h.forget(c)
		}
		return err
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	return decodeResult(raw, out)
}

// Stop ends the agent: the host asks it to exit and kills it after its
// grace, and Stop returns once the exit is known. If the host is
// unreachable once the agent's stop grace has passed, Stop returns an exit
// saying so (Done closes); the stop stays queued and is sent when the host
// is back. Safe to call more than once.
func (a *Agent) Stop() acp.Exit {
	h := a.h
	h.mu.Lock()
	if !a.ended {
		h.ensureStopLocked(a)
	}
	h.mu.Unlock()
	grace := time.NewTimer(a.grace)
	defer grace.Stop()
	for graceOver := false; ; {
		h.mu.Lock()
		changed, reachable := h.changed, h.conn != nil
		if graceOver && !reachable && !a.ended {
			err := disconnected(errcode.ExecutorUnavailable, "executor host %q unreachable; the stop is sent when it is back", h.cfg.Name)
			a.endLocked(acp.Exit{Code: -1, Stderr: "tetherd: " + err.Message}, false, err)
		}
		h.mu.Unlock()
		var due <-chan time.Time
		if !graceOver {
			due = grace.C
		}
		select {
		case <-a.done:
			return a.exit
		case <-due:
			graceOver = true
		case <-changed:
		}
	}
}

// endLocked ends the agent on the daemon's side (once): Done closes with
// exit, its calls fail with err (its stop is kept: the host may still need
// it), and its permission requests' contexts end with acp.ErrAgentGone.
func (a *Agent) endLocked(exit acp.Exit, lost bool, err error) {
	if a.ended {
		return
	}
	a.ended, a.endErr = true, err
	a.retired.Store(true)
	a.mu.Lock()
	a.exit, a.lost = exit, lost
	reqs := a.reqs
	a.reqs, a.reqsClosed = nil, true
	a.mu.Unlock()
	for _, r := range reqs {
		r.cancel(acp.ErrAgentGone)
	}
	for id, c := range a.h.calls {
		if c.agent == a && c != a.stopCall && c != a.startCall && c != a.attachCall {
			delete(a.h.calls, id)
			c.finish(hostproto.CommandResult{}, err)
		}
	}
	close(a.done)
	a.h.notifyLocked()
}

func (a *Agent) endErrOr(fallback error) error {
	if a.endErr != nil {
		return a.endErr
	}
	return fallback
}

// quit stops the dispatcher: what is queued is dropped, except call
// completions, which still run.
func (a *Agent) quit() {
	a.mu.Lock()
	a.quitting = true
	a.mu.Unlock()
	a.quitOnce.Do(func() { close(a.quitCh) })
}

func (a *Agent) setStarted(caps acp.Capabilities, pid int, sb hostproto.Sandbox, opts hostproto.SessionOptions) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.caps, a.pid, a.sandbox = caps, pid, sb
	if len(opts.Modes) > 0 || len(opts.ConfigOptions) > 0 {
		a.options = opts.ACP()
	}
}

// EndedOnHost reports whether the host said, when the agent was last
// attached, that the agent had ended already (AttachResult.Exited): Done
// closes once its exit record, after the records still to deliver, is
// delivered. A daemon that restarted finds so the agents its host lost
// (a reboot took them), and restores them at once when asked to restore
// eagerly.
func (a *Agent) EndedOnHost() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.endedOnHost
}

func (a *Agent) setHeld(pending []hostproto.PermissionRequest) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.held = a.held[:0]
	for _, p := range pending {
		a.held = append(a.held, p.RequestID)
	}
}

func (a *Agent) setOptions(o hostproto.SessionOptions) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.options = o.ACP()
}
