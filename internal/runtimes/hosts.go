package runtimes

import (
	"context"
	"time"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/workspace"
)

// What executor hosts offer besides HostRuntime, which the session core
// asserts: each is implemented by internal/hosted.

// Executor names a session may ask for (the API's `executor`, a
// profile's, --executor) besides remote hosts' names: Executors.Choose
// resolves them.
const (
	ExecutorStandalone = "standalone"
	ExecutorDetached   = "detached"
)

// ExecutorHost is one executor host as GET /executors and `tetherd host
// ls` show it: what the daemon knows of its connection, and what the host
// itself reports when it is connected.
type ExecutorHost struct {
	// Name is "local" for the detached runtime's host, else the name in
	// the daemon's hosts config.
	Name    string
	Runtime string
	Address string
	// State is connecting, connected, reconnecting or lost.
	State           string
	ProtocolVersion int
	HostID          string
	HostVersion     string
	LastContactAt   *time.Time
	// ErrorCode and ErrorMessage say why the last connection attempt
	// failed (host_unauthorized, host_protocol_mismatch, ...).
	ErrorCode    string
	ErrorMessage string
	StartedAt    *time.Time
	// Sessions are what the host holds; nil while it is not connected.
	Sessions []ExecutorHostSession
}

// ExecutorHostSession is one session an executor host holds.
type ExecutorHostSession struct {
	SessionID     string
	ProfileID     string
	PID           int
	Running       bool
	Exited        bool
	OutboxRecords uint64
	OutboxBytes   int64
}

// LateAttacher is a HostRuntime that can take up a lost agent's late
// output (an executor host's client: executor.Host.AttachLate): attached
// to like a lost agent, it delivers the rest of the agent's records, from
// req.From, then its host stops it.
type LateAttacher interface {
	AttachLate(ctx context.Context, req AttachRequest) (Agent, error)
}

// ConnectWatcher is an Executors whose hosts say when they connect: fn
// gets the sessions a host holds each time it connects, until ctx ends.
// It never starts a host: the local one is watched if it runs already, or
// once a session starts it.
type ConnectWatcher interface {
	WatchConnects(ctx context.Context, fn func(sessionIDs []string))
}

// SessionLister is a HostRuntime that lists the sessions its host holds.
type SessionLister interface {
	SessionIDs(ctx context.Context) ([]string, error)
}

// HostAwaiter is an Executors that can wait for an executor host without
// starting it: AwaitRuntime returns the runtime of an executor row once
// the daemon has its host (at once if it runs already; for the local
// host, else once a session starts it), ctx.Err() if ctx ends first.
type HostAwaiter interface {
	AwaitRuntime(ctx context.Context, rt session.Runtime, host string) (Runtime, error)
}

// WorkspaceRuntime is a Runtime that serves its sessions' workspaces
// where their agents run (an executor host's machine). The standalone
// runtime needs none: its sessions' files are the daemon's own.
type WorkspaceRuntime interface {
	Workspace(ctx context.Context, sessionID string, req workspace.Request) (workspace.Result, error)
}

// Workspace availabilities (WorkspaceAvailability.Status).
const (
	// WorkspaceReady: the executor serves the workspace now.
	WorkspaceReady = "ready"
	// WorkspaceStarting: the daemon is starting or reconnecting to the
	// session's executor host; ask again shortly.
	WorkspaceStarting = "starting"
	// WorkspaceUnavailable: the executor cannot serve it (its host is
	// lost, unknown, or too old); Err says why.
	WorkspaceUnavailable = "unavailable"
)

// WorkspaceAvailability is whether a session's executor serves its
// workspace now (files, git, terminals, commands), which needs the
// executor and never the agent: a client enables its workspace panel on
// ready, whatever the agent's state.
type WorkspaceAvailability struct {
	Status string
	// Err says why the workspace is not ready (an *errcode.Error).
	Err error
}

// WorkspaceStater is a WorkspaceRuntime that can tell, without I/O,
// whether it serves workspaces now (an executor host: whether it is
// connected, and speaks a protocol that has them).
type WorkspaceStater interface {
	WorkspaceAvailability() WorkspaceAvailability
}
