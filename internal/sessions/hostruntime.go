package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/executor"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/session"
)

// HostExecutors is the Executors of a daemon with executor hosts: the
// standalone runtime, the local detached host and the remote hosts of its
// config (internal/executor's Pool).
type HostExecutors struct {
	Pool       *executor.Pool
	Standalone Runtime
	// Default is the executor of sessions that name none and whose
	// profile names none: standalone, detached or a remote host's name.
	Default string
	// Remotes are the configured remote hosts' names and addresses.
	Remotes map[string]string
	// LocalAddress is where the detached host listens (its socket).
	LocalAddress string
}

// Executor names a session may ask for besides remote hosts' names.
const (
	ExecutorStandalone = "standalone"
	ExecutorDetached   = "detached"
)

// Choose resolves requested, else the profile's default, else the
// daemon's, to a runtime and host.
func (x *HostExecutors) Choose(requested, profileDefault string) (session.Runtime, string, error) {
	name := requested
	if name == "" {
		name = profileDefault
	}
	if name == "" {
		name = x.Default
	}
	switch name {
	case "", ExecutorStandalone:
		return session.RuntimeStandalone, "", nil
	case ExecutorDetached, executor.LocalName:
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
func (x *HostExecutors) Runtime(rt session.Runtime, host string) (Runtime, error) {
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
func (x *HostExecutors) Hosts(ctx context.Context) []ExecutorHost {
	infos := x.Pool.List()
	out := make([]ExecutorHost, 0, len(infos))
	for _, in := range infos {
		h := ExecutorHost{Name: in.Name, Runtime: string(session.RuntimeRemote), Address: x.Remotes[in.Name],
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
			h.ErrorCode, h.ErrorMessage = string(hostErrorCode(in.LastError)), in.LastError.Error()
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

// hostErrorCode is the code of why a host could not be reached: the
// refusal's (host_unauthorized, host_certificate_rejected, ...), else
// executor_unavailable (a network error carries no code of ours, and is
// no internal error).
func hostErrorCode(err error) errcode.Code {
	var de *errcode.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return errcode.ExecutorUnavailable
}

func hostSessions(st hostproto.StatusResult) []ExecutorHostSession {
	out := make([]ExecutorHostSession, 0, len(st.Sessions))
	for _, s := range st.Sessions {
		out = append(out, ExecutorHostSession{SessionID: s.SessionID, ProfileID: s.ProfileID, PID: s.PID,
			Running: s.Running, Exited: s.Exited, OutboxRecords: s.OutboxRecords, OutboxBytes: s.OutboxBytes})
	}
	return out
}

// hostRuntime starts and attaches agents on one executor host.
type hostRuntime struct{ h *executor.Host }

var _ HostRuntime = hostRuntime{}

// Start asks the host to launch the session's profile: the host resolves
// it from its own agent config, never from a command line of ours.
func (r hostRuntime) Start(ctx context.Context, req StartRequest) (Agent, error) {
	p := hostproto.StartPayload{ProfileID: req.ProfileID, ResumeToken: req.ResumeToken, Cwd: req.Spec.Dir,
		FS: req.Root != "", InitTimeoutMS: req.InitTimeout.Milliseconds(), StopGraceMS: req.StopGrace.Milliseconds()}
	a, err := r.h.Start(ctx, req.SessionID, p, req.Handler)
	if err != nil {
		return nil, err
	}
	if req.OnSpawn != nil && a.PID() > 0 {
		req.OnSpawn(a.PID())
	}
	return a, nil
}

// Unavailable says, without trying, that a start would fail now.
func (r hostRuntime) Unavailable() error { return r.h.Unavailable() }

// Attach takes up the session's agent on the host.
func (r hostRuntime) Attach(ctx context.Context, req AttachRequest) (Agent, error) {
	a, err := r.h.Attach(ctx, req.SessionID, req.From, req.Handler)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// An executor host's agent is an Agent, and the handlers the session core
// gives it take what it reports.
var (
	_ Agent                  = (*executor.Agent)(nil)
	_ linkHandler            = executor.LinkHandler(nil)
	_ waitHandler            = executor.WaitHandler(nil)
	_ executor.RecordHandler = (*agentHandler)(nil)
)
