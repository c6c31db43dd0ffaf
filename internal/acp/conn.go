// Package acp is the daemon's side of the Agent Client Protocol: it launches
// an agent process, performs the handshake and drives sessions, prompts and
// cancellation over github.com/coder/acp-go-sdk, translating what the agent
// sends into the daemon's own Update and PermissionRequest values.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/workspace"
)

// ProtocolVersion is the ACP version the daemon speaks.
const ProtocolVersion = 1

// Capabilities is what the agent advertised in initialize.
type Capabilities struct {
	ProtocolVersion int
	LoadSession     bool
	Resume          bool
	// Fork is the unstable session/fork: the agent copies a stored
	// session's whole conversation into a new session.
	Fork            bool
	Image           bool
	Audio           bool
	EmbeddedContext bool
	AgentName       string
	AgentVersion    string
	// AuthMethods are how the agent accepts credentials.
	AuthMethods []AuthMethod
}

// Clone returns a copy that shares nothing mutable with c.
func (c Capabilities) Clone() Capabilities {
	if c.AuthMethods != nil {
		ms := make([]AuthMethod, len(c.AuthMethods))
		for i, m := range c.AuthMethods {
			ms[i] = m.Clone()
		}
		c.AuthMethods = ms
	}
	return c
}

// Handler receives what the agent sends on its own initiative.
type Handler interface {
	// Update is called in protocol order for every session/update the
	// daemon understands, on the goroutine that reads the agent's stdout.
	// It must not block. done must be called exactly once, without
	// blocking, when the update has been dealt with (recorded, or dropped):
	// until then it holds one credit of the connection's update window
	// (Options.UpdateWindow), and with every credit held the daemon stops
	// reading the agent. So nothing that leads to done may wait for the
	// agent (an ACP response), or the connection deadlocks. An executor
	// host's agent (internal/executor) gives done one more meaning, the
	// record committed: its handler never calls it for an update it did
	// not take.
	Update(u Update, done func())
	// RequestPermission blocks until the user answers or ctx ends: the
	// agent withdrew the request, or it is gone (context.Cause(ctx) is then
	// ErrAgentGone). A nil error with Cancelled set is a valid answer;
	// ErrNoAnswer says there is none (the handler is gone).
	RequestPermission(ctx context.Context, req PermissionRequest) (PermissionOutcome, error)
}

// NoPrompts is the Handler of a connection that opens no session or
// sends no prompt (a capability probe, a credentials check): nothing
// should arrive, so whatever does is dropped, and a permission request is
// refused rather than left hanging.
type NoPrompts struct{}

// Update drops the update.
func (NoPrompts) Update(_ Update, done func()) { done() }

// RequestPermission refuses.
func (NoPrompts) RequestPermission(context.Context, PermissionRequest) (PermissionOutcome, error) {
	return PermissionOutcome{Cancelled: true}, nil
}

// LineHandler is a Handler that takes session/update notifications as the
// agent wrote them: an executor host keeps them in its outbox and sends
// them on, and only the daemon decodes them (UpdateDecoder), instead of a
// decode in the host and another of the host's own encoding in the
// daemon. A line IsUpdateNotification accepts goes to UpdateLine instead
// of being decoded for Update, in protocol order with everything else.
type LineHandler interface {
	Handler
	// UpdateLine receives the notification without its line end. line is
	// the reader's buffer, valid only during the call: copy what is kept.
	// It may hold lines back for Flush. It must not block.
	UpdateLine(line []byte)
	// Flush is called when the reader has handed over every line the
	// agent wrote so far and would wait for more, and after every window
	// of lines (Options.UpdateWindow) at the latest: whatever UpdateLine
	// held back is dealt with now, so that a burst is handled at once and
	// never more than a window is held. It may block: the reader, and so
	// the agent, then waits, as it waits for a Handler's window credits.
	Flush()
}

// Options configure Start.
type Options struct {
	Spec Spec
	// Root confines fs/read_text_file and fs/write_text_file; empty disables
	// the fs capability entirely (it is then not advertised). It is opened
	// once, before the agent starts, and closed when the agent has exited.
	Root string
	// Files bounds the agent's fs requests (sizes, concurrency, timeout).
	Files workspace.FileLimits
	// Handler receives the agent's updates and requests; a LineHandler
	// takes its session/update lines undecoded.
	Handler Handler
	// InitTimeout bounds the initialize handshake.
	InitTimeout time.Duration
	// StopGrace is how long stop waits between SIGTERM and SIGKILL.
	StopGrace time.Duration
	Logger    *slog.Logger
	// Outgoing, if set, receives a copy of every line the daemon writes to
	// the agent (used by the protocol conformance test).
	Outgoing io.Writer
	// UpdateWindow bounds the session/update notifications handed to
	// Handler.Update and not yet done; default DefaultUpdateWindow.
	UpdateWindow int
	// OnSpawn, if set, learns the pid as soon as the process exists, before
	// the handshake: a crash during a slow start must still find it.
	OnSpawn func(pid int)
}

// Conn is a running agent process with an initialized ACP connection.
type Conn struct {
	proc  *process
	conn  *sdk.ClientSideConnection
	caps  Capabilities
	grace time.Duration
	// stopping closes when Stop is first called; it releases the stdout
	// reader if it waits for update credits.
	stopping chan struct{}
	stopOnce sync.Once
	// promptSent is the hook of the session/prompt being sent (one at a
	// time: a session runs one turn at a time on its own agent).
	promptSent atomic.Pointer[func()]
	// announced is what the last session/new, load or resume answered
	// about modes and config options (see SessionOptions).
	mu        sync.Mutex
	announced SessionOptions
}

// Start launches the agent and performs initialize. On any failure the
// process is stopped before returning.
func Start(ctx context.Context, opts Options) (*Conn, error) {
	if opts.Handler == nil {
		return nil, errors.New("acp: Handler is required")
	}
	if opts.InitTimeout <= 0 {
		opts.InitTimeout = 30 * time.Second
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 3 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	var files *workspace.Root
	onExit := func() {}
	if opts.Root != "" {
		r, err := workspace.OpenRoot(opts.Root, opts.Files)
		if err != nil {
			return nil, fmt.Errorf("open session directory: %w", err)
		}
		files, onExit = r, func() { _ = r.Close() }
	}
	p, err := startProcess(opts.Spec, onExit)
	if err != nil {
		onExit()
		return nil, fmt.Errorf("start agent %q: %w", opts.Spec.Command, err)
	}
	if opts.OnSpawn != nil {
		opts.OnSpawn(p.pid())
	}
	var w io.Writer = p.stdin
	if opts.Outgoing != nil {
		w = io.MultiWriter(p.stdin, opts.Outgoing)
	}
	cl := &client{handler: opts.Handler, files: files, logger: logger}
	c := &Conn{proc: p, grace: opts.StopGrace, stopping: make(chan struct{})}
	pr := &prompts{}
	w = outgoing{w: w, promptSent: &c.promptSent, prompts: pr}
	in := newInbound(p.stdout, opts.Handler, opts.UpdateWindow, c.stopping, logger)
	in.prompts = pr
	// The SDK starts reading in NewClientSideConnection, and its reader
	// reads the logger when the stream ends: the gate holds reads back
	// until SetLogger is done (an agent that exits at once raced it).
	ready := make(chan struct{})
	in.gate = ready
	c.conn = sdk.NewClientSideConnection(cl, w, in)
	gone := c.conn.Done()
	cl.gone.Store(&gone)
	c.conn.SetLogger(logger.With("agent", opts.Spec.Command))
	close(ready)

	ictx, cancel := context.WithTimeout(ctx, opts.InitTimeout)
	defer cancel()
	fs := files != nil
	resp, err := c.conn.Initialize(ictx, sdk.InitializeRequest{
		ProtocolVersion: ProtocolVersion,
		ClientCapabilities: sdk.ClientCapabilities{
			Fs: sdk.FileSystemCapabilities{ReadTextFile: fs, WriteTextFile: fs},
		},
		ClientInfo: &sdk.Implementation{Name: "tetherd", Version: "0.1.0"},
	})
	if err != nil {
		exit := c.Stop()
		if ictx.Err() != nil {
			return nil, fmt.Errorf("initialize timed out: %w", err)
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("agent %s during initialize: %w (stderr: %s)", exit, err, lastLine(exit.Stderr))
		default:
		}
		return nil, fmt.Errorf("initialize: %w", err)
	}
	c.caps = capabilitiesOf(resp)
	m := opts.Spec.AuthMethod
	if m == "" {
		m = AutoAuthMethod(c.caps.AuthMethods, p.cmd.Env)
	}
	if m != "" {
		if _, err := c.conn.Authenticate(ictx, sdk.AuthenticateRequest{MethodId: m}); err != nil {
			c.Stop()
			return nil, &AuthenticateError{Method: m, Capabilities: c.caps, Err: err}
		}
	}
	return c, nil
}

// AuthenticateError is a failed ACP authenticate after a good initialize.
// It keeps what the agent announced, so the caller can say which methods
// exist; errors.As reaches the agent's own error through it.
type AuthenticateError struct {
	Method       string
	Capabilities Capabilities
	Err          error
}

func (e *AuthenticateError) Error() string {
	return fmt.Sprintf("authenticate with method %q: %s", e.Method, Message(e.Err))
}

// Unwrap exposes the agent's error.
func (e *AuthenticateError) Unwrap() error { return e.Err }

func capabilitiesOf(r sdk.InitializeResponse) Capabilities {
	c := Capabilities{
		ProtocolVersion: int(r.ProtocolVersion),
		LoadSession:     r.AgentCapabilities.LoadSession,
		Resume:          r.AgentCapabilities.SessionCapabilities.Resume != nil,
		Fork:            r.AgentCapabilities.SessionCapabilities.Fork != nil,
		Image:           r.AgentCapabilities.PromptCapabilities.Image,
		Audio:           r.AgentCapabilities.PromptCapabilities.Audio,
		EmbeddedContext: r.AgentCapabilities.PromptCapabilities.EmbeddedContext,
		AuthMethods:     authMethodsOf(r.AuthMethods),
	}
	if r.AgentInfo != nil {
		c.AgentName, c.AgentVersion = r.AgentInfo.Name, r.AgentInfo.Version
	}
	return c
}

// Capabilities returns what the agent advertised.
func (c *Conn) Capabilities() Capabilities { return c.caps }

// PID is the agent's process id.
func (c *Conn) PID() int { return c.proc.pid() }

// Sandboxed reports whether the agent runs in its sandbox
// (internal/sandbox); when it does not, SandboxReason says why.
func (c *Conn) Sandboxed() bool { return c.proc.launch.Sandboxed }

// SandboxReason says why the agent runs unsandboxed ("" when it does not).
func (c *Conn) SandboxReason() string { return c.proc.launch.Reason }

// Done closes when the agent process has exited and been reaped.
func (c *Conn) Done() <-chan struct{} { return c.proc.done }

// Exit describes how the process ended; valid once Done is closed.
func (c *Conn) Exit() Exit {
	<-c.proc.done
	return c.proc.exit
}

// Stop ends the agent: stdin closed, SIGTERM to its group, SIGKILL after
// the grace period. Safe to call more than once.
func (c *Conn) Stop() Exit {
	c.stopOnce.Do(func() { close(c.stopping) })
	return c.proc.stop(c.grace)
}

// SessionParams are persisted with a session and resent on load/resume.
type SessionParams struct {
	Cwd string
	// MCPServers is a JSON array; empty means [] (never null).
	MCPServers            json.RawMessage
	AdditionalDirectories []string
}

// mcpServers decodes the stored list. A stdio entry (ACP gives it no
// "type") is decoded as stdio itself, with args and env defaulting to []:
// the SDK's union decoder takes an entry without args and env for an http
// server.
func (p SessionParams) mcpServers() ([]sdk.McpServer, error) {
	servers := []sdk.McpServer{}
	if len(p.MCPServers) == 0 || string(p.MCPServers) == "null" {
		return servers, nil
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(p.MCPServers, &entries); err != nil {
		return nil, fmt.Errorf("mcpServers: %w", err)
	}
	for i, e := range entries {
		raw, _ := json.Marshal(e)
		var srv sdk.McpServer
		_, typed := e["type"]
		_, command := e["command"]
		if !typed && command {
			var stdio sdk.McpServerStdio
			if err := json.Unmarshal(raw, &stdio); err != nil {
				return nil, fmt.Errorf("mcpServers[%d]: %w", i, err)
			}
			if stdio.Args == nil {
				stdio.Args = []string{}
			}
			if stdio.Env == nil {
				stdio.Env = []sdk.EnvVariable{}
			}
			srv.Stdio = &stdio
		} else if err := json.Unmarshal(raw, &srv); err != nil {
			return nil, fmt.Errorf("mcpServers[%d]: %w", i, err)
		}
		servers = append(servers, srv)
	}
	return servers, nil
}

// NewSession opens a fresh ACP session and returns its id.
func (c *Conn) NewSession(ctx context.Context, p SessionParams) (string, error) {
	servers, err := p.mcpServers()
	if err != nil {
		return "", err
	}
	resp, err := c.conn.NewSession(ctx, sdk.NewSessionRequest{
		Cwd: p.Cwd, McpServers: servers, AdditionalDirectories: p.AdditionalDirectories,
	})
	if err != nil {
		return "", err
	}
	c.announce(resp.Modes, resp.ConfigOptions)
	return string(resp.SessionId), nil
}

// LoadSession asks the agent to reload a stored session; the agent replays
// its history as updates before answering.
func (c *Conn) LoadSession(ctx context.Context, id string, p SessionParams) error {
	servers, err := p.mcpServers()
	if err != nil {
		return err
	}
	resp, err := c.conn.LoadSession(ctx, sdk.LoadSessionRequest{
		SessionId: sdk.SessionId(id), Cwd: p.Cwd, McpServers: servers, AdditionalDirectories: p.AdditionalDirectories,
	})
	if err == nil {
		c.announce(resp.Modes, resp.ConfigOptions)
	}
	return err
}

// ResumeSession reattaches to a stored session without replay.
func (c *Conn) ResumeSession(ctx context.Context, id string, p SessionParams) error {
	servers, err := p.mcpServers()
	if err != nil {
		return err
	}
	resp, err := c.conn.ResumeSession(ctx, sdk.ResumeSessionRequest{
		SessionId: sdk.SessionId(id), Cwd: p.Cwd, McpServers: servers, AdditionalDirectories: p.AdditionalDirectories,
	})
	if err == nil {
		c.announce(resp.Modes, resp.ConfigOptions)
	}
	return err
}

// ForkSession asks the agent for a new session holding a copy of a
// stored session's conversation (the unstable session/fork), in p's
// directory, and returns the new session's id. The stored session is
// left as it was.
func (c *Conn) ForkSession(ctx context.Context, id string, p SessionParams) (string, error) {
	servers, err := p.mcpServers()
	if err != nil {
		return "", err
	}
	// The unstable request has its own (wider) server union; the stable
	// list is a subset of it, so it carries over through its JSON.
	var unstable []sdk.UnstableMcpServer
	if err := remarshal(servers, &unstable); err != nil {
		return "", fmt.Errorf("mcpServers: %w", err)
	}
	resp, err := c.conn.UnstableForkSession(ctx, sdk.UnstableForkSessionRequest{
		SessionId: sdk.SessionId(id), Cwd: p.Cwd, McpServers: unstable, AdditionalDirectories: p.AdditionalDirectories,
	})
	if err != nil {
		return "", err
	}
	var options []sdk.SessionConfigOption
	if resp.ConfigOptions != nil {
		if err := remarshal(resp.ConfigOptions, &options); err != nil {
			options = nil // an option the stable union cannot hold: none announced
		}
	}
	c.announce(resp.Modes, options)
	return string(resp.SessionId), nil
}

// Prompt sends one prompt turn and waits for its stop reason. prompt is a
// JSON array of ACP content blocks. Cancel the turn with Cancel, not by
// cancelling ctx, so the agent's own stop reason is observed.
func (c *Conn) Prompt(ctx context.Context, sessionID string, prompt json.RawMessage) (string, error) {
	return c.PromptNotify(ctx, sessionID, prompt, nil)
}

// PromptNotify is Prompt, calling sent (if not nil) as soon as the
// session/prompt request has been written to the agent's stdin, before its
// answer: from then on the agent may hold the prompt (claude-agent-acp
// persists it on receipt). sent is not called if the request was never
// written.
func (c *Conn) PromptNotify(ctx context.Context, sessionID string, prompt json.RawMessage, sent func()) (string, error) {
	var blocks []sdk.ContentBlock
	if err := json.Unmarshal(prompt, &blocks); err != nil {
		return "", fmt.Errorf("prompt content: %w", err)
	}
	if sent != nil {
		c.promptSent.Store(&sent)
		defer c.promptSent.CompareAndSwap(&sent, nil)
	}
	resp, err := c.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sdk.SessionId(sessionID), Prompt: blocks})
	if err != nil {
		return "", err
	}
	return string(resp.StopReason), nil
}

// Cancel sends session/cancel; the running Prompt call then returns with the
// agent's stop reason.
func (c *Conn) Cancel(ctx context.Context, sessionID string) error {
	return c.conn.Cancel(ctx, sdk.CancelNotification{SessionId: sdk.SessionId(sessionID)})
}

func lastLine(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}

// remarshal copies from into to through JSON: the SDK's unstable and
// stable unions of the same shapes are distinct Go types.
func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
