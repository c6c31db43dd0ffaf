package sessions

import (
	"context"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
)

// What tetherd learns of an agent's credentials, and what it does with it
// (docs/agents.md "Credentials"): every start and prompt of an agent on
// this machine records whether it asked for credentials (ACP -32000), in
// the profile (agents.Credentials, shown by GET /agents); a session of a
// profile whose agent asked at its start is refused, but only once the
// agent has asked again, just now (checkCredentials). Agents on a remote
// executor host run under the host's own configuration and environment,
// which the daemon's fingerprint does not describe: nothing is recorded
// or checked for them.

// noteStart records how a session's agent start went: ok, or required when
// the agent asked for credentials (err is the start's, as agentFailure
// wrapped it). Other failures say nothing of credentials.
func (m *Manager) noteStart(local bool, profileID, sessionID string, err error) {
	switch {
	case !local:
	case err == nil:
		m.noteCredentials(profileID, agents.Credentials{Status: agents.CredentialsOK, Stage: agents.StageStart, SessionID: sessionID})
	case errcode.CodeOf(err) == errcode.AgentAuthRequired:
		m.noteCredentials(profileID, agents.Credentials{Status: agents.CredentialsRequired, Stage: agents.StageStart,
			SessionID: sessionID, Message: startErrorMessage(err)})
	}
}

// notePrompt records how a prompt went: required when the agent asked for
// credentials (claude-agent-acp does so only at a prompt), ok when it
// answered; a cancelled turn may have ended before the agent needed them,
// and other failures say nothing of credentials.
func (m *Manager) notePrompt(local bool, profileID, sessionID string, conn runtimes.Agent, stop string, err error) {
	switch {
	case !local:
	case err == nil && stop != "cancelled":
		m.noteCredentials(profileID, agents.Credentials{Status: agents.CredentialsOK, Stage: agents.StagePrompt, SessionID: sessionID})
	case err != nil && acp.Classify(err) == acp.ClassAuthRequired:
		spec, _, _ := m.profiles.Spec(profileID)
		msg := acp.AuthRequiredMessage("a prompt failed: "+acp.Message(err), conn.Capabilities().AuthMethods, spec.Command)
		m.noteCredentials(profileID, agents.Credentials{Status: agents.CredentialsRequired, Stage: agents.StagePrompt,
			SessionID: sessionID, Message: msg})
	}
}

func (m *Manager) noteCredentials(profileID string, c agents.Credentials) {
	if err := m.profiles.RecordCredentials(m.life, profileID, c); err != nil {
		m.cfg.Logger.Warn("record agent credentials", "agent", profileID, "err", err)
	}
}

// checkCredentials refuses a session that could not start for want of
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
func (m *Manager) checkCredentials(ctx context.Context, profileID string, rt session.Runtime, host, cwd string) error {
	if rt == session.RuntimeRemote {
		return nil
	}
	var runtime runtimes.Runtime = runtimes.Standalone{}
	sessionID := ""
	if rt != session.RuntimeStandalone {
		r, err := m.cfg.Executors.Runtime(rt, host)
		if err != nil {
			return nil // the session's start says so
		}
		runtime, sessionID = r, credentialsCheckPrefix+uuid.NewString()
		m.checks.add(sessionID)
		defer m.checks.remove(sessionID)
	}
	spec, prof, err := m.profiles.Spec(profileID)
	if err != nil || !prof.Credentials.NeedsCheck() || m.profiles.ConfigEdited() {
		return nil
	}
	if err := checkDir(cwd); err != nil {
		return nil // the session's start says so
	}
	spec.Dir = cwd
	sctx, cancel := context.WithTimeout(ctx, m.cfg.StartTimeout)
	defer cancel()
	conn, err := runtime.Start(sctx, runtimes.StartRequest{SessionID: sessionID, ProfileID: profileID, Spec: spec, Root: cwd, Files: m.cfg.Files,
		Handler: acp.NoPrompts{}, InitTimeout: m.cfg.StartTimeout, StopGrace: m.cfg.StopGrace, UpdateWindow: m.cfg.UpdateWindow,
		Logger: m.cfg.Logger})
	var fail *errcode.Error
	if err != nil {
		fail = agentFailure(err, nil, spec.Command, "agent did not start: %v", err)
	} else {
		nctx, cancel := context.WithTimeout(ctx, m.cfg.RestoreTimeout)
		_, err = conn.NewSession(nctx, acp.SessionParams{Cwd: cwd})
		cancel()
		if err != nil {
			fail = agentFailure(err, conn, spec.Command, "session/new failed: %s", acp.Message(err))
		}
		conn.Stop()
	}
	if ctx.Err() != nil {
		return ctx.Err() // the client went away: nothing was learnt
	}
	m.noteStart(true, profileID, "", errOrNil(fail))
	if fail == nil || fail.Code != errcode.AgentAuthRequired {
		return nil
	}
	m.cfg.Logger.Info("session refused: the agent still asks for credentials", "agent", profileID, "err", fail)
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
