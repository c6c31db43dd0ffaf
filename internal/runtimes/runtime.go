// Package runtimes is the seam between the session core
// (internal/sessions) and wherever a session's agent runs: a Runtime
// starts an Agent for a session, Executors says which runtime a session's
// executor row names. Standalone (a child process of the daemon, speaking
// ACP on its stdio) is here; the executor hosts' runtime (detached and
// remote) is internal/hosted, which implements HostRuntime and the
// optional interfaces beside it (hosts.go). Nothing here imports the
// session core, so a runtime never depends on it.
package runtimes

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/workspace"
)

// Runtime starts agents for sessions. It is the seam between the actor and
// wherever the agent runs: a child of the daemon (Standalone), a local host
// that outlives the daemon (detached) or one reached by URL (remote,
// both internal/hosted), which carry the same acp value types over a wire. So nothing
// the actor does may assume the agent is its own child process: it knows an
// agent by the Agent interface only.
type Runtime interface {
	// Start launches the agent req.Spec describes and performs the ACP
	// handshake (initialize, and authenticate when the spec names or the
	// environment implies a method). On failure nothing is left running.
	// Errors keep the acp classification (acp.Classify); a failed
	// authenticate is an *acp.AuthenticateError, which carries the
	// capabilities the agent announced.
	Start(ctx context.Context, req StartRequest) (Agent, error)
}

// StartRequest is everything a runtime needs to start one agent for one
// session. It names the agent by its daemon-side launch spec, never by
// anything an API request supplied.
type StartRequest struct {
	// SessionID is the daemon's session the agent is for; ProfileID and
	// ResumeToken name its agent to a runtime that resolves profiles
	// itself (an executor host runs only the profiles it is configured
	// with), and Spec describes it to one that launches it from here.
	SessionID   string
	ProfileID   string
	ResumeToken string
	Spec        acp.Spec
	// Sandbox is the session's own sandbox policy: Spec.Sandbox has it
	// laid over the daemon's profile; a runtime that resolves profiles
	// itself lays it over its own.
	Sandbox sandbox.Policy
	// Root confines the agent's fs/* requests to the session's directory;
	// empty disables the fs capability.
	Root string
	// Files bounds the agent's fs requests.
	Files workspace.FileLimits
	// Handler receives what the agent sends on its own initiative: updates
	// (each holding one credit of UpdateWindow until its done is called)
	// and permission requests (answered by returning an outcome).
	Handler acp.Handler
	// InitTimeout bounds the handshake.
	InitTimeout time.Duration
	// StopGrace is how long Agent.Stop lets the agent end on its own before
	// it is killed.
	StopGrace time.Duration
	// UpdateWindow bounds the updates handed to Handler and not yet done.
	UpdateWindow int
	Logger       *slog.Logger
	// Outgoing, if set, receives a copy of every protocol line sent to the
	// agent (the conformance tests).
	Outgoing io.Writer
	// OnSpawn, if set, learns the agent's pid as soon as it is known, before
	// the handshake. A runtime that cannot name a pid never calls it.
	OnSpawn func(pid int)
}

// Agent is one started agent, as the actor uses it. Each ACP call blocks
// until the agent answers or ctx ends; none is made on the actor goroutine.
type Agent interface {
	// Capabilities is what the agent advertised in initialize.
	Capabilities() acp.Capabilities
	// NewSession opens a fresh ACP session and returns its id.
	NewSession(ctx context.Context, p acp.SessionParams) (string, error)
	// LoadSession reopens a stored session; the agent replays its history
	// as updates (to Handler) before or after answering.
	LoadSession(ctx context.Context, id string, p acp.SessionParams) error
	// ResumeSession reattaches to a stored session without replay.
	ResumeSession(ctx context.Context, id string, p acp.SessionParams) error
	// ForkSession opens a new session holding a copy of a stored one's
	// conversation (the unstable session/fork; Capabilities().Fork) and
	// returns its id.
	ForkSession(ctx context.Context, id string, p acp.SessionParams) (string, error)
	// SessionOptions is what the last successful new, load or resume
	// announced about modes and config options.
	SessionOptions() acp.SessionOptions
	// PromptTurn runs one prompt turn (prompt is a JSON array of ACP
	// content blocks) and returns the agent's stop reason. sent, if not
	// nil, is called once the prompt has been handed to the agent, before
	// its answer: from then on the agent may hold it (see delivery.go). An
	// agent that goes away mid-turn answers an error classified
	// acp.ClassDisconnected; the turn's outcome then comes from Done. The
	// turn is named (turnID) so that an agent on an executor host takes up
	// the same turn again when a restarted daemon asks (resumeTurn); an
	// agent the daemon runs itself has no use for the name.
	PromptTurn(ctx context.Context, sessionID, turnID string, prompt json.RawMessage, sent func()) (string, error)
	// Cancel asks the agent to end the running turn (session/cancel); the
	// PromptTurn call then returns with the agent's own stop reason.
	Cancel(ctx context.Context, sessionID string) error
	// SetMode sends session/set_mode.
	SetMode(ctx context.Context, sessionID, modeID string) error
	// SetConfigOption sends session/set_config_option (value a JSON string
	// or boolean) and returns the full set of options the agent answered.
	SetConfigOption(ctx context.Context, sessionID, optionID string, value json.RawMessage) (json.RawMessage, error)
	// Stop ends the agent, asking first and forcing after the start's
	// StopGrace, and returns once it is gone. Safe to call more than once.
	Stop() acp.Exit
	// Done closes once the agent has ended, whoever ended it.
	Done() <-chan struct{}
	// Exit describes how the agent ended; it waits for Done.
	Exit() acp.Exit
	// PID is the agent's process id where the daemon can see one, else 0
	// (an agent on a remote host has none the daemon could use).
	PID() int
	// Sandboxed reports whether the agent runs in its sandbox
	// (internal/sandbox); SandboxReason says why not.
	Sandboxed() bool
	SandboxReason() string

	// What only an agent on an executor host knows; an agent the daemon
	// runs itself answers the zero value (Standalone's adapter).

	// Lost tells, once the agent is done, that the daemon lost it rather
	// than it ending: its executor host stayed unreachable, or died under
	// it.
	Lost() bool
	// ExitCause is why the agent's records ended early, if its executor
	// knows (its host found the session's outbox damaged), else nil.
	ExitCause() error
	// PendingPermissions are the permission requests an attached agent's
	// host still holds unanswered.
	PendingPermissions() []string
	// EndedOnHost reports an attached agent its host reported ended: it
	// takes no prompt, and what is queued waits for its exit.
	EndedOnHost() bool
	// Gone closes when a lost agent's host has let it go (its late output
	// is over); nil for an agent that is never lost.
	Gone() <-chan struct{}
}

// HostRuntime is a Runtime whose agents run in an executor host and so
// outlive the daemon: after a restart, or a broken connection, the daemon
// attaches to them again instead of starting them. internal/hosted
// implements it on internal/executor's hosts, with the optional
// interfaces the session core asserts: LateAttacher (late output),
// SessionLister (the credentials checks an earlier daemon left),
// WorkspaceRuntime and WorkspaceStater (the workspace API); its
// Executors is a ConnectWatcher.
type HostRuntime interface {
	Runtime
	// Attach takes up the agent of req.SessionID on the host, with its
	// record stream resumed after req.From (the executor row's
	// HostOffset). An errcode.HostSessionUnknown error means the host
	// holds no such session; errcode.ExecutorLost that it stayed
	// unreachable past its deadline.
	Attach(ctx context.Context, req AttachRequest) (Agent, error)
	// Unavailable is the error a Start would fail with at once (the host
	// is lost, or refused the daemon), nil when a Start may succeed or
	// waits for the host; it writes and sends nothing.
	Unavailable() error
}

// AttachRequest is what HostRuntime.Attach needs.
type AttachRequest struct {
	SessionID string
	From      uint64
	Handler   acp.Handler
	Logger    *slog.Logger
}

// HostHandler is what the handler the session core gives a HostRuntime
// (StartRequest.Handler, AttachRequest.Handler) takes besides acp.Handler:
// the reports of an agent whose host the daemon reaches over a link. A
// HostRuntime hands them on by asserting it.
type HostHandler interface {
	acp.Handler
	// LinkChanged is told when the connection to the agent's host breaks
	// and comes back; the agent and its turn go on on the host meanwhile.
	LinkChanged(up bool)
	// HostUnreachable learns why the daemon cannot reach the host while it
	// waits for it (a start or attach not answered, a broken link).
	HostUnreachable(why error)
	// Record commits the offset of a host record that brings no update,
	// in order with the updates, and calls done once it is durable (and
	// never for a record the session did not take: untaken).
	Record(offset uint64, done func())
}

// Executors decides where sessions' agents run.
type Executors interface {
	// Choose picks a new session's executor: requested (the API's
	// `executor`; "" for none), else the profile's default, else the
	// daemon's. An unknown name is errcode.ExecutorNotFound.
	Choose(requested, profileDefault string) (session.Runtime, string, error)
	// Runtime returns the runtime of an executor row's runtime and host.
	Runtime(rt session.Runtime, host string) (Runtime, error)
	// Hosts lists the executor hosts the daemon knows, by name.
	Hosts(ctx context.Context) []ExecutorHost
}

// StandaloneOnly is the Executors of a daemon without executor hosts:
// every session's agent runs on rt.
func StandaloneOnly(rt Runtime) Executors { return standaloneOnly{rt} }

type standaloneOnly struct{ rt Runtime }

func (s standaloneOnly) Choose(requested, _ string) (session.Runtime, string, error) {
	if requested != "" && requested != string(session.RuntimeStandalone) {
		return "", "", errcode.New(errcode.ExecutorNotFound, "executor %q is not configured: this daemon runs agents standalone only", requested)
	}
	return session.RuntimeStandalone, "", nil
}

func (s standaloneOnly) Runtime(rt session.Runtime, host string) (Runtime, error) {
	if rt != session.RuntimeStandalone && rt != "" {
		return nil, errcode.New(errcode.ExecutorNotFound, "executor %s %q is not configured", rt, host)
	}
	return s.rt, nil
}

func (standaloneOnly) Hosts(context.Context) []ExecutorHost { return []ExecutorHost{} }

// Standalone is the runtime that runs each agent as a child process of the
// daemon, speaking ACP over its stdio (internal/acp): it converts the
// request and wraps the ACP connection (childAgent).
type Standalone struct{}

// Start launches the agent process and performs the handshake.
func (Standalone) Start(ctx context.Context, req StartRequest) (Agent, error) {
	c, err := acp.Start(ctx, acp.Options{Spec: req.Spec, Root: req.Root, Files: req.Files, Handler: req.Handler,
		InitTimeout: req.InitTimeout, StopGrace: req.StopGrace, UpdateWindow: req.UpdateWindow, Logger: req.Logger,
		Outgoing: req.Outgoing, OnSpawn: req.OnSpawn})
	if err != nil {
		return nil, err // never a typed nil *acp.Conn in the interface
	}
	return childAgent{c}, nil
}

// childAgent is an agent the daemon runs itself as a child process: the
// ACP connection, and the zero value of what only a hosted agent knows.
type childAgent struct{ *acp.Conn }

var _ Agent = childAgent{}

// PromptTurn prompts; a child that ends with the daemon is never asked to
// take a turn up again, so the turn's name goes unused.
func (c childAgent) PromptTurn(ctx context.Context, sessionID, _ string, prompt json.RawMessage, sent func()) (string, error) {
	return c.PromptNotify(ctx, sessionID, prompt, sent)
}

func (childAgent) Lost() bool                   { return false }
func (childAgent) ExitCause() error             { return nil }
func (childAgent) PendingPermissions() []string { return nil }
func (childAgent) EndedOnHost() bool            { return false }
func (childAgent) Gone() <-chan struct{}        { return nil }
