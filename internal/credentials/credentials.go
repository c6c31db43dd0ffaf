// Package credentials is what tetherd learns of an agent's credentials,
// and what it does with it (docs/agents.md "Credentials"): every start and
// prompt of an agent on this machine records whether it asked for
// credentials (ACP -32000), in the profile (agents.Credentials, shown by
// GET /agents); a session of a profile whose agent asked at its start is
// refused, but only once the agent has asked again, just now (Check).
// Agents on a remote executor host run under the host's own configuration
// and environment, which the daemon's fingerprint does not describe:
// nothing is recorded or checked for them. It is no part of a session's
// aggregate: the session core asks it before it creates a session and
// tells it how its agents' starts and prompts went.
package credentials

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/workspace"
)

// Profiles is what a Checker needs of the agent profiles
// (agents.Registry).
type Profiles interface {
	// Spec resolves a profile id to its launch spec.
	Spec(id string) (acp.Spec, agents.Profile, error)
	// RecordCredentials records what an agent showed of its credentials
	// (agents.Registry.RecordCredentials).
	RecordCredentials(ctx context.Context, id string, c agents.Credentials) error
	// ConfigEdited reports whether the agent config file changed since it
	// was read (agents.Registry.ConfigEdited).
	ConfigEdited() bool
}

// Config is how a Checker starts an agent to check it, as a session's
// start would.
type Config struct {
	Profiles  Profiles
	Executors runtimes.Executors
	Files     workspace.FileLimits
	// StartTimeout bounds the start and handshake, RestoreTimeout the
	// session/new; StopGrace and UpdateWindow are the start's.
	StartTimeout, RestoreTimeout, StopGrace time.Duration
	UpdateWindow                            int
	Logger                                  *slog.Logger
	// Life ends the sweep and the records (the daemon stops).
	Life context.Context
}

// Checker records and checks agents' credentials.
type Checker struct {
	cfg Config
	// running are the checks this daemon runs now, which the sweep
	// leaves alone.
	running checksRunning
}

// New returns a Checker.
func New(cfg Config) *Checker { return &Checker{cfg: cfg} }

// NoteStart records how a session's agent start went: ok, or required when
// the agent asked for credentials (err is the start's, as agentFailure
// wrapped it). Other failures say nothing of credentials.
func (c *Checker) NoteStart(local bool, profileID, sessionID string, err error) {
	switch {
	case !local:
	case err == nil:
		c.note(profileID, agents.Credentials{Status: agents.CredentialsOK, Stage: agents.StageStart, SessionID: sessionID})
	case errcode.CodeOf(err) == errcode.AgentAuthRequired:
		c.note(profileID, agents.Credentials{Status: agents.CredentialsRequired, Stage: agents.StageStart,
			SessionID: sessionID, Message: errcode.MessageOf(err)})
	}
}

// NotePrompt records how a prompt went: required when the agent asked for
// credentials (claude-agent-acp does so only at a prompt), ok when it
// answered; a cancelled turn may have ended before the agent needed them,
// and other failures say nothing of credentials.
func (c *Checker) NotePrompt(local bool, profileID, sessionID string, conn runtimes.Agent, stop string, err error) {
	switch {
	case !local:
	case err == nil && stop != "cancelled":
		c.note(profileID, agents.Credentials{Status: agents.CredentialsOK, Stage: agents.StagePrompt, SessionID: sessionID})
	case err != nil && acp.Classify(err) == acp.ClassAuthRequired:
		spec, _, _ := c.cfg.Profiles.Spec(profileID)
		msg := acp.AuthRequiredMessage("a prompt failed: "+acp.Message(err), conn.Capabilities().AuthMethods, spec.Command)
		c.note(profileID, agents.Credentials{Status: agents.CredentialsRequired, Stage: agents.StagePrompt,
			SessionID: sessionID, Message: msg})
	}
}

func (c *Checker) note(profileID string, cr agents.Credentials) {
	if err := c.cfg.Profiles.RecordCredentials(c.cfg.Life, profileID, cr); err != nil {
		c.cfg.Logger.Warn("record agent credentials", "agent", profileID, "err", err)
	}
}

// Check refuses a session that could not start for want of
// credentials. When the profile's agent asked for them at its start the
// last time (agents.Credentials.NeedsCheck), it is started once more as
// the session would start it (the profile's spec, in the session's
// directory: initialize, authenticate, session/new; never a prompt) and
// stopped, on the runtime the session would run on: as the daemon's child
// (standalone) or on the local executor host (detached), whose agents get
// the environment of the tetherd that started the host, not this one's.
// Asking again: errcode.AgentAuthRequired with the agent's
// methods, and nothing is created. Starting: the session is created (the
// credentials were set meanwhile, perhaps where tetherd cannot see them,
// such as a login in a terminal). Any other failure is no evidence either
// way: the session is created and its own start reports it. A refusal is
// thus never a guess from the past. Not for a remote executor host, and
// not while agents.yaml was edited since the daemon read it (the detached
// executor host reads it again at every start: the daemon's view is stale).
func (c *Checker) Check(ctx context.Context, profileID string, rt session.Runtime, host, cwd string) error {
	if rt == session.RuntimeRemote {
		return nil
	}
	var runtime runtimes.Runtime = runtimes.Standalone{}
	sessionID := ""
	if rt != session.RuntimeStandalone {
		r, err := c.cfg.Executors.Runtime(rt, host)
		if err != nil {
			return nil // the session's start says so
		}
		runtime, sessionID = r, CheckPrefix+uuid.NewString()
		c.running.add(sessionID)
		defer c.running.remove(sessionID)
	}
	spec, prof, err := c.cfg.Profiles.Spec(profileID)
	if err != nil || !prof.Credentials.NeedsCheck() || c.cfg.Profiles.ConfigEdited() {
		return nil
	}
	if err := runtimes.CheckDir(cwd); err != nil {
		return nil // the session's start says so
	}
	spec.Dir = cwd
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	conn, err := runtime.Start(sctx, runtimes.StartRequest{SessionID: sessionID, ProfileID: profileID, Spec: spec, Root: cwd, Files: c.cfg.Files,
		Handler: acp.NoPrompts{}, InitTimeout: c.cfg.StartTimeout, StopGrace: c.cfg.StopGrace, UpdateWindow: c.cfg.UpdateWindow,
		Logger: c.cfg.Logger})
	var fail *errcode.Error
	if err != nil {
		fail = runtimes.StartFailure(err, nil, spec.Command, "agent did not start: %v", err)
	} else {
		nctx, cancel := context.WithTimeout(ctx, c.cfg.RestoreTimeout)
		_, err = conn.NewSession(nctx, acp.SessionParams{Cwd: cwd})
		cancel()
		if err != nil {
			fail = runtimes.StartFailure(err, conn, spec.Command, "session/new failed: %s", acp.Message(err))
		}
		conn.Stop()
	}
	if ctx.Err() != nil {
		return ctx.Err() // the client went away: nothing was learnt
	}
	c.NoteStart(true, profileID, "", errOrNil(fail))
	if fail == nil || fail.Code != errcode.AgentAuthRequired {
		return nil
	}
	c.cfg.Logger.Info("session refused: the agent still asks for credentials", "agent", profileID, "err", fail)
	out := errcode.Wrap(errcode.AgentAuthRequired, fail, "session not created: agent %q asks for credentials (started just now to check): %s",
		profileID, fail.Message).With("agentProfileId", profileID)
	if ms, ok := fail.Details["authMethods"]; ok {
		out = out.With("authMethods", ms)
	}
	return out
}

// errOrNil keeps a nil *errcode.Error from becoming a non-nil error.
func errOrNil(e *errcode.Error) error {
	if e == nil {
		return nil
	}
	return e
}
