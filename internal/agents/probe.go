package agents

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
)

// defaultProbeConcurrency bounds ProbeAll when the caller passes no limit:
// each probe starts a real agent (often a Node.js program), so probing all
// of them at once would make the daemon's start-up a CPU spike.
const defaultProbeConcurrency = 4

// Probe starts the profile's agent, performs the ACP initialize handshake,
// stops it and records what it advertised (see RecordCapabilities). An
// agent that announces auth methods is also asked for a session
// (session/new, never a prompt: nothing reaches its model), since that is
// where such agents say they lack credentials (qwen-code, codex-acp,
// gemini-cli answer -32000 there): the answer is recorded as the profile's
// Credentials, so GET /agents and POST /session know before any session
// ran. cwd is the agent's working directory; empty means the system temp
// directory, a neutral place for agents that read project files at
// start-up. The probe is bounded by ctx's deadline, or Config.ProbeTimeout
// without one. An unavailable profile fails with errcode.AgentUnavailable,
// an agent that does not complete the handshake with
// errcode.AgentStartFailed.
func (r *Registry) Probe(ctx context.Context, id, cwd string) (acp.Capabilities, error) {
	spec, _, err := r.Spec(id)
	if err != nil {
		return acp.Capabilities{}, err
	}
	if cwd == "" {
		cwd = os.TempDir()
	}
	spec.Dir = cwd
	timeout := r.probeTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return acp.Capabilities{}, errcode.Wrap(errcode.AgentStartFailed, ctx.Err(), "probe of agent %q: no time left", id)
		}
	}
	conn, err := acp.Start(ctx, acp.Options{
		Spec:        spec,
		Handler:     acp.NoPrompts{},
		InitTimeout: timeout,
		Logger:      r.logger,
	})
	if err != nil {
		var ae *acp.AuthenticateError
		if errors.As(err, &ae) && acp.Classify(err) == acp.ClassAuthRequired {
			r.noteProbe(ctx, id, acp.AuthRequiredMessage(err.Error(), ae.Capabilities.AuthMethods, spec.Command))
		}
		return acp.Capabilities{}, errcode.Wrap(errcode.AgentStartFailed, err, "agent %q did not complete the ACP handshake: %v", id, err)
	}
	caps := conn.Capabilities()
	if len(caps.AuthMethods) > 0 {
		sctx, cancel := context.WithTimeout(ctx, timeout)
		_, err := conn.NewSession(sctx, acp.SessionParams{Cwd: cwd})
		cancel()
		switch {
		case err == nil:
			r.noteProbe(ctx, id, "")
		case acp.Classify(err) == acp.ClassAuthRequired:
			r.noteProbe(ctx, id, acp.AuthRequiredMessage("session/new failed: "+acp.Message(err), caps.AuthMethods, spec.Command))
		}
	}
	exit := conn.Stop()
	r.logger.Debug("agent probed", "agent", id, "loadSession", caps.LoadSession, "resume", caps.Resume,
		"agentName", caps.AgentName, "agentVersion", caps.AgentVersion, "exit", exit.String())
	if err := r.RecordCapabilities(ctx, id, caps); err != nil {
		return caps, err
	}
	return caps, nil
}

// noteProbe records what a probe saw of the agent's credentials: required
// with what to do (message), or ok when message is "".
func (r *Registry) noteProbe(ctx context.Context, id, message string) {
	c := Credentials{Status: CredentialsOK, Stage: StageStart}
	if message != "" {
		c.Status, c.Message = CredentialsRequired, message
	}
	if err := r.RecordCredentials(ctx, id, c); err != nil {
		r.logger.Warn("record agent credentials", "agent", id, "err", err)
	}
}

// ProbeAll probes every available profile that has no capabilities yet, at
// most concurrency at a time (<= 0 means 4), and returns when all are done
// or ctx ends. It takes no lock a session start needs: tetherd runs it in
// the background, and a session of a profile being probed starts its own
// agent without waiting for the probe. Failures are logged, never returned: an agent that cannot be
// probed now (not logged in, broken install) must not stop the daemon, and
// it is probed again at the next start or when a session starts it.
func (r *Registry) ProbeAll(ctx context.Context, concurrency int) {
	if concurrency <= 0 {
		concurrency = defaultProbeConcurrency
	}
	var ids []string
	for _, p := range r.List() {
		if p.Available && p.Capabilities == nil {
			ids = append(ids, p.ID)
		}
	}
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, id := range ids {
		// Checked first because select picks at random when both are ready.
		if ctx.Err() != nil {
			r.logger.Info("agent probing stopped", "err", ctx.Err())
			return
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			r.logger.Info("agent probing stopped", "err", ctx.Err())
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			// A session may have started this agent while the probe waited
			// for a slot; its start recorded what a probe would learn.
			if p, err := r.Get(id); err != nil || p.Capabilities != nil {
				return
			}
			start := time.Now()
			caps, err := r.Probe(ctx, id, "")
			if err != nil {
				r.logger.Warn("agent capability probe failed", "agent", id, "err", err)
				return
			}
			r.logger.Info("agent capabilities probed", "agent", id, "nativeSessionResume", caps.LoadSession || caps.Resume,
				"agentName", caps.AgentName, "agentVersion", caps.AgentVersion, "took", time.Since(start).Round(time.Millisecond))
		})
	}
}
