package sessions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/workspace"
)

// startPlan is what the actor knows when it starts an agent; the start
// goroutine must not touch actor state.
type startPlan struct {
	gen int
	// execID names this execution (agentExecutionId): a fresh UUID per
	// agent start, so no two executions of any session share one, across
	// restarts of the agent and of the daemon.
	execID  string
	slot    *agentSlot // released here if the actor is gone by the end
	spec    acp.Spec
	specErr error
	params  acp.SessionParams
	token   string
	// fork is where a fork came from, at its first start (forkStartOf);
	// source is the origin's ACP session its agent may copy, read in the
	// start (Manager.forkSource).
	fork       *forkStart
	source     string
	hadHistory bool
	inject     bool // the profile supports history injection
	req        runtimes.StartRequest
	// choices are the user's mode and config choices, reapplied once the
	// agent's session is open.
	choices startChoices
	// runtime is where the agent starts (the executor row's runtime).
	runtime runtimes.Runtime
	// worktree is the executor row when the session has a worktree to
	// check (and make again if missing) before the agent starts;
	// recreated reports one made again.
	worktree  *session.Executor
	recreated func(*workspace.Worktree)
}

// startOutcome is what the start goroutine reports back.
type startOutcome struct {
	conn            runtimes.Agent
	acpID           string
	strategy        string // "" for a first start
	contextRestored bool
	fallback        string // why a stored session could not be restored
	// options are the agent's modes and config options once the choices
	// were reapplied.
	options acp.SessionOptions
	err     error
}

// ensureAgent starts (or restores) the agent if it is neither running nor
// starting (decideEnsureAgent); decideRestore chooses, once the agent has
// said what it can, how its stored ACP session is restored. A failure
// keeps the stored identity and leaves the session resumable.
func (a *actor) ensureAgent() {
	if a.takeUpLate(true) {
		return // the late output first; then this runs again
	}
	a.ensureAgentNow()
}

// ensureAgentNow is ensureAgent once no late output is to be taken up
// first (or it could not be: the start then fails, or replaces it).
func (a *actor) ensureAgentNow() {
	_ = a.perform(decide(a.view(), ensureAgentInput{}), nil)
}

// startAgent launches the start in a goroutine of its own, which reports
// back to onAgentStarted, once it has the agent-cap slot it reserves
// (e.Reserve), or fails.
func (a *actor) startAgent(e effStartAgent) {
	if e.Reserve {
		if err := a.needAgent(); err != nil {
			a.startFailed(err)
			return
		}
	}
	a.starting = true
	a.gen++
	spec, profile, specErr := a.m.profiles.Spec(a.sess.AgentProfileID)
	p := startPlan{gen: a.gen, execID: uuid.NewString(), slot: a.slot, spec: spec, specErr: specErr, token: a.exec.ResumeToken,
		hadHistory: e.HadHistory, inject: profile.HistoryContextInjection,
		params:  acp.SessionParams{Cwd: a.sess.Cwd, MCPServers: a.sess.MCPServers, AdditionalDirectories: a.sess.AdditionalDirectories},
		choices: a.startChoices()}
	p.fork = forkStartOf(a.sess, a.exec)
	if p.token != "" && len(profile.ResumeArgs) > 0 {
		p.spec.Args = append(append([]string(nil), p.spec.Args...), profile.ExpandResumeArgs(p.token)...)
	}
	p.spec.Dir = a.sess.Cwd
	own := sessionSandbox(a.sess)
	p.spec.Sandbox.Policy = own.Merge(p.spec.Sandbox.Policy)
	if a.exec.WorktreeState == session.WorktreeActive {
		ex := a.exec
		p.worktree = &ex
		p.recreated = func(wt *workspace.Worktree) { a.mb.Post(func() { a.worktreeRecreated(wt) }) }
	}
	if rt, err := a.m.cfg.Executors.Runtime(a.exec.Runtime, a.exec.Host); err != nil {
		p.specErr = err
	} else {
		p.runtime = rt
	}
	if hr, ok := p.runtime.(runtimes.HostRuntime); ok {
		if err := hr.Unavailable(); err != nil {
			// Known to fail: say so without recording a start that never
			// was (a client retrying against a lost host would otherwise
			// add a start and its failure to the log at every try).
			a.starting = false
			a.startFailed(runtimes.StartFailure(err, nil, p.spec.Command, "agent did not start: %v", err))
			return // the lost agent's late output may still be taken up
		}
	}
	a.lateCandidate = "" // the host replaces what it held of the session
	p.req = runtimes.StartRequest{SessionID: a.id, ProfileID: a.sess.AgentProfileID, ResumeToken: p.token, Spec: p.spec, Sandbox: own, Root: a.sess.Cwd, Files: a.m.cfg.Files, Handler: &agentHandler{a: a, gen: p.gen}, StopGrace: a.m.cfg.StopGrace,
		InitTimeout: a.m.cfg.StartTimeout, UpdateWindow: a.m.cfg.UpdateWindow, Logger: a.log}
	if a.m.cfg.Outgoing != nil {
		p.req.Outgoing = a.m.cfg.Outgoing(a.id)
	}
	gen := p.gen
	p.req.OnSpawn = func(pid int) {
		a.mb.Post(func() {
			if a.gen == gen && a.starting {
				a.exec.PID = pid
				a.change(agentSpawned{Session: a.id, PID: pid})
			}
		})
	}
	a.replaying = e.Restore
	a.replayed, a.replayUsers, a.replayLast = 0, nil, ""
	a.setState(session.SessionStarting)
	a.exec.Status = session.ExecutorStarting
	a.exec.ErrorMessage, a.exec.ErrorCode, a.exec.ErrorProfile = "", "", ""
	a.exec.PID = 0
	a.exec.AgentExecutionID = p.execID
	a.saveExecutor()
	if a.hosted() {
		a.resetHostOffset()
	}
	local, profileID := a.exec.Runtime != session.RuntimeRemote, a.sess.AgentProfileID
	a.m.spawn(func() {
		out := a.m.start(a.id, p)
		a.m.credentials.NoteStart(local, profileID, a.id, out.err)
		if !a.mb.Post(func() { a.onAgentStarted(p, out) }) {
			if out.conn != nil {
				out.conn.Stop() // the session is gone (daemon shutting down)
			}
			p.slot.release()
		}
	})
}

// start launches the agent and opens or restores its ACP session with the
// calls decideRestore chooses, traced as acp.session.restore (or
// acp.session.start for a first start) with each ACP call as a child span.
func (m *Manager) start(sessionID string, p startPlan) (out startOutcome) {
	name := "acp.session.start"
	if p.token != "" || p.hadHistory {
		name = "acp.session.restore"
	}
	ctx, span := tracer.Start(m.life, name, trace.WithAttributes(
		attribute.String("tether.session_id", sessionID), attribute.Bool("tether.has_resume_token", p.token != "")))
	defer func() { endRestoreSpan(span, out) }()
	if p.specErr != nil {
		return startOutcome{err: p.specErr}
	}
	if p.worktree != nil {
		wt, err := m.ensureWorktree(ctx, sessionID, *p.worktree)
		if err != nil {
			return startOutcome{err: err}
		}
		if wt.Recreated {
			p.recreated(wt)
		}
	}
	if err := runtimes.CheckDir(p.params.Cwd); err != nil {
		return startOutcome{err: err}
	}
	sctx, cancel := context.WithTimeout(ctx, m.cfg.StartTimeout)
	defer cancel()
	conn, err := p.runtime.Start(sctx, p.req)
	if err != nil {
		return startOutcome{err: runtimes.StartFailure(err, nil, p.req.Spec.Command, "agent did not start: %v", err)}
	}
	caps := conn.Capabilities()
	span.SetAttributes(attribute.Bool("acp.capability.resume", caps.Resume),
		attribute.Bool("acp.capability.load_session", caps.LoadSession))
	// Recorded as soon as the handshake is done, even if the session then
	// fails: an agent that wants credentials has just said how to give them
	// (authMethods), and GET /agents shows it.
	if err := m.profiles.RecordCapabilities(ctx, p.req.Spec.Profile, conn.Capabilities()); err != nil {
		m.cfg.Logger.Warn("record agent capabilities", "agent", p.req.Spec.Profile, "err", err)
	}
	if p.fork != nil { // a fork's first start: it has no ACP session of its own
		p.source = m.forkSource(ctx, *p.fork)
	}
	in := restoreInput{Restore: p.token != "", ForkSource: p.source != "", Resume: caps.Resume, Load: caps.LoadSession, Fork: caps.Fork,
		HadHistory: p.hadHistory, Inject: p.inject}
	var acpID string
	var callErr error
	for {
		step := decideRestore(in)
		if step.Call == restoreDone {
			r := step.Resumed
			out = startOutcome{strategy: r.Strategy, contextRestored: r.ContextRestored, fallback: r.Fallback}
			if step.Failed {
				conn.Stop()
				out.err = callErr
				return out
			}
			out.conn, out.acpID = conn, acpID
			out.options = m.reapply(ctx, conn, acpID, p.choices)
			return out
		}
		var outcome tryOutcome
		acpID, outcome, callErr = m.open(ctx, conn, p, step.Call)
		in.Tried = append(in.Tried, restoreTry{Call: step.Call, Outcome: outcome})
	}
}

// open makes one call that opens the agent's ACP session, and says how it
// answered; err is the start's error should the start fail on it.
func (m *Manager) open(ctx context.Context, conn runtimes.Agent, p startPlan, call restoreCall) (acpID string, _ tryOutcome, err error) {
	if call == callFork {
		return m.openFork(ctx, conn, p)
	}
	if call == callNew {
		err := m.traced(ctx, "acp.session.new", func(c context.Context) error {
			var err error
			acpID, err = conn.NewSession(c, p.params)
			return err
		})
		if err != nil {
			return "", tryFailed, runtimes.StartFailure(err, conn, p.req.Spec.Command, "session/new failed: %s", acp.Message(err))
		}
		return acpID, tryOK, nil
	}
	name, f := "session/load", func(ctx context.Context) error { return conn.LoadSession(ctx, p.token, p.params) }
	if call == callResume {
		name, f = "session/resume", func(ctx context.Context) error { return conn.ResumeSession(ctx, p.token, p.params) }
	}
	timedOut := false
	err = m.traced(ctx, "acp."+strings.ReplaceAll(name, "/", "."), func(c context.Context) error {
		err := f(c)
		timedOut = c.Err() != nil
		return err
	})
	if err == nil {
		return p.token, tryOK, nil
	}
	switch acp.Classify(err) {
	case acp.ClassUnsupported:
		return "", tryUnsupported, nil
	case acp.ClassUnknownSession:
		return "", tryUnknownSession, nil
	}
	if timedOut {
		err = fmt.Errorf("%s timed out after %s", name, m.cfg.RestoreTimeout)
	}
	return "", tryFailed, runtimes.StartFailure(err, conn, p.req.Spec.Command, "%s failed (session identity kept): %s", name, acp.Message(err))
}

// openFork copies the fork's origin's ACP session (session/fork) into
// the fork's directory. Whatever goes wrong falls back to a new session
// (decideRestore), so every failure is an outcome, never the start's
// error: a copy made while the origin went on is left unused (tryStale).
func (m *Manager) openFork(ctx context.Context, conn runtimes.Agent, p startPlan) (string, tryOutcome, error) {
	var acpID string
	err := m.traced(ctx, "acp.session.fork", func(c context.Context) error {
		var err error
		acpID, err = conn.ForkSession(c, p.source, p.params)
		return err
	})
	if err == nil {
		if m.forkSource(ctx, *p.fork) != p.source {
			return "", tryStale, nil
		}
		return acpID, tryOK, nil
	}
	switch acp.Classify(err) {
	case acp.ClassUnsupported:
		return "", tryUnsupported, nil
	case acp.ClassUnknownSession:
		return "", tryUnknownSession, nil
	}
	m.cfg.Logger.Info("session/fork failed: the fork's agent is briefed instead", "origin", p.fork.origin.SessionID, "err", err)
	return "", tryFailed, nil
}

// onAgentStarted takes a start's outcome on the actor (decideAgentStarted).
func (a *actor) onAgentStarted(p startPlan, out startOutcome) {
	in := agentStartedInput{Current: p.gen == a.gen, Err: out.err}
	if in.Current && in.Err != nil {
		a.starting = false
		in.Fingerprint = a.startError(in.Err)
	}
	_ = a.perform(decide(a.view(), in), &job{start: &startReport{p, out}})
	if in.Current && in.Err != nil {
		a.dropSlot()
	}
}

// startReport is a start's plan and outcome, as it reported.
type startReport struct {
	plan startPlan
	out  startOutcome
}

// adoptAgent makes a started agent the session's, watches for its exit,
// and finishes the start.
func (a *actor) adoptAgent(p startPlan, out startOutcome) {
	conn := out.conn
	a.conn, a.acpID = conn, out.acpID
	a.lastErr = nil
	caps := conn.Capabilities()
	now := time.Now().UTC()
	a.exec.Status = session.ExecutorReady
	a.exec.PID = conn.PID()
	a.exec.Sandbox, a.exec.SandboxReason = sandboxState(conn)
	a.exec.AgentExecutionID = p.execID
	a.exec.ResumeToken = out.acpID
	a.exec.SupportsLoad = caps.LoadSession
	a.exec.SupportsSessionResume = caps.Resume
	a.exec.LastSeenAt = &now
	a.exec.ExitCode, a.exec.ExitSignal, a.exec.ErrorMessage = nil, "", ""
	a.exec.ErrorCode, a.exec.ErrorProfile = "", ""
	a.saveExecutor()
	a.adoptOptions(out.options)
	a.reapplyChanged(p)
	gen := p.gen
	a.watchExit(gen, conn)
	a.startSucceeded(p, out)
}

// startSucceeded finishes a start (decideStartSucceeded), or gives a load
// that replayed nothing yet ReplayGrace to replay (settleLoad).
func (a *actor) startSucceeded(p startPlan, out startOutcome) {
	_ = a.perform(decide(a.view(), startSucceededInput{Resumed: out.resumed(), HadHistory: p.hadHistory, Replayed: a.replayed,
		Gen: p.gen, Inject: p.inject}), nil)
}

// resumed is how the start restored the session.
func (out startOutcome) resumed() resumedInfo {
	return resumedInfo{Strategy: out.strategy, ContextRestored: out.contextRestored, Fallback: out.fallback}
}

// settleLoad decides, after the grace period, whether a load restored the
// conversation (decideReplaySettled), with what it replayed meanwhile.
func (a *actor) settleLoad(in replaySettledInput) {
	in.Current, in.Replayed = in.Gen == a.gen, a.replayed
	_ = a.perform(decide(a.view(), in), nil)
}

// startFailed leaves the session usable and resumable: the identity is kept,
// the error is visible on the executor, queued turns fail visibly
// (decideStartFailed).
func (a *actor) startFailed(err error) {
	_ = a.perform(decide(a.view(), startFailedInput{Err: err, Fingerprint: a.startError(err)}), nil)
	a.dropSlot()
}

// startError notes why the agent did not start, for status, and returns
// the fingerprint of the profile it failed with, which the executor's
// error record keeps (decideStartFailed).
func (a *actor) startError(err error) string {
	a.log.Warn("agent failed to start", "err", err)
	a.lastErr = err
	return a.m.profiles.Fingerprint(a.sess.AgentProfileID)
}

func (a *actor) notifyWaiters(err error) {
	for _, w := range a.waiters {
		w <- err
	}
	a.waiters = nil
}

// resume starts the agent if needed and returns a channel that yields the
// outcome once it is ready (nil) or failed. Concurrent callers share one
// start: the actor serialises them and only the first launches a process.
func (a *actor) resume() (<-chan error, error) {
	d := decide(a.view(), resumeCmd{})
	if d.Refusal != nil {
		return nil, d.Refusal
	}
	j := &job{waiter: make(chan error, 1)}
	if err := a.perform(d, j); err != nil {
		return nil, err
	}
	return j.waiter, nil
}

var tracer = otel.Tracer("github.com/tether/tether/internal/sessions")

// traced runs one ACP call under RestoreTimeout in a child span carrying
// its outcome and classified error.
func (m *Manager) traced(ctx context.Context, name string, f func(context.Context) error) error {
	ctx, span := tracer.Start(ctx, name)
	defer span.End()
	cctx, cancel := context.WithTimeout(ctx, m.cfg.RestoreTimeout)
	defer cancel()
	err := f(cctx)
	if err == nil {
		span.SetAttributes(attribute.String("acp.outcome", "ok"))
		return nil
	}
	class := acp.Classify(err)
	if cctx.Err() != nil {
		class = acp.ClassTimeout
	}
	span.SetAttributes(attribute.String("acp.outcome", "error"), attribute.String("acp.error_class", string(class)),
		attribute.Int("acp.error_code", acp.Code(err)))
	span.RecordError(err)
	span.SetStatus(codes.Error, acp.Message(err))
	return err
}

func endRestoreSpan(span trace.Span, out startOutcome) {
	if out.strategy != "" {
		span.SetAttributes(attribute.String("tether.strategy", out.strategy), attribute.Bool("tether.context_restored", out.contextRestored))
	}
	if out.fallback != "" {
		span.SetAttributes(attribute.String("tether.fallback_reason", out.fallback))
	}
	if out.err != nil {
		span.SetAttributes(attribute.String("tether.outcome", "failed"), attribute.String("tether.error_code", string(errcode.CodeOf(out.err))))
		span.RecordError(out.err)
		span.SetStatus(codes.Error, out.err.Error())
	} else {
		span.SetAttributes(attribute.String("tether.outcome", "ready"))
	}
	span.End()
}
