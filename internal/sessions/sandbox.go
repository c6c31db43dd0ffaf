package sessions

import (
	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/session"
)

// A session's sandbox: its own policy (POST /session `sandbox`, stored
// with the session) laid over its profile's; whether its agent runs in it
// is the executor row's, recorded at each start (internal/sandbox).

// sessionSandbox is the session's own policy; one stored by an older
// build that no longer reads is the zero policy (the profile's), which a
// create validated anyway.
func sessionSandbox(sess session.Session) sandbox.Policy {
	p, err := sandbox.Decode(sess.Sandbox)
	if err != nil {
		return sandbox.Policy{}
	}
	return p
}

// sandboxState is what the executor row records of a started agent.
func sandboxState(a runtimes.Agent) (state, reason string) {
	if a.Sandboxed() {
		return "on", ""
	}
	return "off", a.SandboxReason()
}

// checkSandbox refuses a session's own policy that is invalid, or, for
// an executor on this machine, one that requires a sandbox bubblewrap
// cannot make here (a remote host's start says so itself).
func checkSandbox(own sandbox.Policy, profile agents.Profile, runtime session.Runtime) error {
	if err := own.Check(); err != nil {
		return errcode.New(errcode.InvalidRequest, "%v", err).With("field", "sandbox")
	}
	p := own.Merge(profile.Sandbox).Defaults()
	if p.Mode != sandbox.ModeRequired || runtime == session.RuntimeRemote {
		return nil
	}
	if err := sandbox.Available(); err != nil {
		return sandbox.Unavailable(err)
	}
	return nil
}

// SandboxView is the session's sandbox as status shows it.
type SandboxView struct {
	Mode, Network string
	// State is "on", "off" or "not_started".
	State, Reason string
}

// sandboxView is the policy in force for sess (over profile) and what the
// executor row says of its agent.
func sandboxView(sess session.Session, profile agents.Profile, ex session.Executor) SandboxView {
	p := sessionSandbox(sess).Merge(profile.Sandbox).Defaults()
	v := SandboxView{Mode: p.Mode, Network: p.Network, State: ex.Sandbox, Reason: ex.SandboxReason}
	if v.State == "" {
		v.State = "not_started"
	}
	return v
}
