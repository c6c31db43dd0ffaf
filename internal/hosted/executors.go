// Package hosted is the runtime of agents on executor hosts: it adapts
// internal/executor's Pool and Host to the seams the session core
// defines (runtimes.Executors, runtimes.HostRuntime and their optional
// interfaces), so that sessions knows agents by those interfaces only and
// never imports the host protocol's client. executors.go chooses and
// lists the executors, runtime.go starts and attaches agents on one host.
package hosted

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/executor"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
)

// Executors is the runtimes.Executors of a daemon with executor hosts:
// the standalone runtime, the local detached host and the remote hosts of
// its config (internal/executor's Pool).
type Executors struct {
	Pool       *executor.Pool
	Standalone runtimes.Runtime
	// Default is the executor of sessions that name none and whose
	// profile names none: standalone, detached or a remote host's name.
	Default string
	// Remotes are the configured remote hosts' names and addresses.
	Remotes map[string]string
	// LocalAddress is where the detached host listens (its socket).
	LocalAddress string
}

// The session core learns of hosts connecting (late output) from it, and
// waits for the local host without starting it (the credentials checks'
// sweep).
var (
	_ runtimes.Executors      = (*Executors)(nil)
	_ runtimes.ConnectWatcher = (*Executors)(nil)
	_ runtimes.HostAwaiter    = (*Executors)(nil)
)

// Choose resolves requested, else the profile's default, else the
// daemon's, to a runtime and host.
func (x *Executors) Choose(requested, profileDefault string) (session.Runtime, string, error) {
	name := requested
	if name == "" {
		name = profileDefault
	}
	if name == "" {
		name = x.Default
	}
	switch name {
	case "", runtimes.ExecutorStandalone:
		return session.RuntimeStandalone, "", nil
	case runtimes.ExecutorDetached, executor.LocalName:
		return session.RuntimeDetached, executor.LocalName, nil
	}
	if _, ok := x.Remotes[name]; !ok {
		return "", "", errcode.New(errcode.ExecutorNotFound,
			"executor %q is not configured: use standalone, detached or the name of a remote host in the hosts config", name).
			With("executor", name)
	}
	return session.RuntimeRemote, name, nil
}

// Runtime returns the runtime of an executor row.
func (x *Executors) Runtime(rt session.Runtime, host string) (runtimes.Runtime, error) {
	if rt == session.RuntimeStandalone || rt == "" {
		return x.Standalone, nil
	}
	h, err := x.Pool.Get(host)
	if err != nil {
		return nil, err
	}
	return hostRuntime{h}, nil
}

// Hosts lists the hosts with what each reports of itself when connected.
func (x *Executors) Hosts(ctx context.Context) []runtimes.ExecutorHost {
	infos := x.Pool.List()
	out := make([]runtimes.ExecutorHost, 0, len(infos))
	for _, in := range infos {
		h := runtimes.ExecutorHost{Name: in.Name, Runtime: string(session.RuntimeRemote), Address: x.Remotes[in.Name],
			State: string(in.State), ProtocolVersion: in.Version, HostID: in.HostID, HostVersion: in.HostVersion}
		if in.Name == executor.LocalName {
			h.Runtime, h.Address = string(session.RuntimeDetached), x.LocalAddress
		}
		if in.State == executor.StateReconnecting && in.LastContact.IsZero() {
			h.State = "connecting"
		}
		if !in.LastContact.IsZero() {
			t := in.LastContact.UTC()
			h.LastContactAt = &t
		}
		if in.LastError != nil {
			h.ErrorCode, h.ErrorMessage = string(errorCode(in.LastError)), in.LastError.Error()
		}
		if in.State == executor.StateConnected {
			if host, err := x.Pool.Get(in.Name); err == nil {
				sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				st, err := host.Status(sctx)
				cancel()
				if err == nil {
					h.Sessions = hostSessions(st)
					if t, err := time.Parse(time.RFC3339Nano, st.StartedAt); err == nil {
						h.StartedAt = &t
					}
				}
			}
		}
		out = append(out, h)
	}
	return out
}

// errorCode is the code of why a host could not be reached: the
// refusal's (host_unauthorized, host_certificate_rejected, ...), else
// executor_unavailable (a network error carries no code of ours, and is
// no internal error).
func errorCode(err error) errcode.Code {
	var de *errcode.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return errcode.ExecutorUnavailable
}

func hostSessions(st hostproto.StatusResult) []runtimes.ExecutorHostSession {
	out := make([]runtimes.ExecutorHostSession, 0, len(st.Sessions))
	for _, s := range st.Sessions {
		out = append(out, runtimes.ExecutorHostSession{SessionID: s.SessionID, ProfileID: s.ProfileID, PID: s.PID,
			Running: s.Running, Exited: s.Exited, OutboxRecords: s.OutboxRecords, OutboxBytes: s.OutboxBytes})
	}
	return out
}

// WatchConnects calls fn with the sessions an executor host holds each
// time it connects, until ctx ends: the session core takes up their late
// output then (runtimes.ConnectWatcher). It watches every host the daemon
// has: the remote ones, the local one if it runs already (found again at
// its socket, never started for this) and the local one once a session
// starts it.
func (x *Executors) WatchConnects(ctx context.Context, fn func(sessionIDs []string)) {
	_, _ = x.Pool.GetRunning(ctx, executor.LocalName) // not running: watched once a session starts it
	var wg sync.WaitGroup
	defer wg.Wait()
	watched := map[string]bool{}
	for {
		changed := x.Pool.Changed()
		for _, in := range x.Pool.List() {
			if watched[in.Name] {
				continue
			}
			h, err := x.Pool.Get(in.Name) // listed: made already, never started here
			if err != nil {
				continue
			}
			watched[in.Name] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				watchConnects(ctx, h, fn)
			}()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// AwaitRuntime returns the runtime of an executor row once the daemon has
// its host, never starting one (runtimes.HostAwaiter): at once for
// standalone, a remote host or a local host that runs already, else once
// a session starts the local host.
func (x *Executors) AwaitRuntime(ctx context.Context, rt session.Runtime, host string) (runtimes.Runtime, error) {
	if rt == session.RuntimeStandalone || rt == "" {
		return x.Standalone, nil
	}
	h, err := x.Pool.Await(ctx, host)
	if err != nil {
		return nil, err
	}
	return hostRuntime{h}, nil
}

// watchConnects calls fn at each connection of h (after it came up from
// being down), with the sessions its welcome listed.
func watchConnects(ctx context.Context, h *executor.Host, fn func(sessionIDs []string)) {
	for up := false; ; {
		changed := h.Changed()
		info := h.Info()
		switch now := info.State == executor.StateConnected; {
		case now && !up:
			fn(info.HostSessions)
			up = true
		case !now:
			up = false
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}
