package sessions

import (
	"context"
	"time"
)

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

// ExecutorHosts lists the executor hosts the daemon knows, by name.
func (m *Manager) ExecutorHosts(ctx context.Context) ([]ExecutorHost, error) {
	return m.cfg.Executors.Hosts(ctx), nil
}
