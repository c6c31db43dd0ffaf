package sessions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// ReconcileResult summarises start-up reconciliation.
type ReconcileResult struct {
	Sessions         int
	InterruptedTurns int
	// Reattached counts the hosted sessions being attached again.
	Reattached int
	Took       time.Duration
}

// Reconcile repairs what the previous daemon left behind, before the API
// serves anything: in every active session, a turn left running (or, with
// none running, the queued turn that was about to start) becomes
// interrupted (reason daemon_restart) with synthetic failures for its
// unfinished tool calls; prompts queued behind it stay queued, in order, and
// are held (sessions.queue_held) until the user continues or prompts; pending
// permissions expire, the session waits for input (task in REVIEW) and its
// executor row is re-derived — an orphaned agent process is stopped. No
// model request is sent. Messages left open get their streamed chunks
// folded into their text.
//
// With several nodes (Config.Ownership) a node reconciles only the
// sessions whose leases it can take (none another live node holds).
func (m *Manager) Reconcile(ctx context.Context) (ReconcileResult, error) {
	var keep func(string) bool
	if own := m.cfg.Ownership; own != nil {
		keep = func(id string) bool {
			_, err := own.Acquire(ctx, id)
			return err == nil
		}
	}
	return m.reconcile(ctx, keep)
}

// reconcile repairs the active sessions keep accepts (every one when keep
// is nil); see Reconcile.
func (m *Manager) reconcile(ctx context.Context, keep func(sessionID string) bool) (ReconcileResult, error) {
	start := time.Now()
	// Thousands of short reads: with a cancellable context the sqlite
	// driver starts a goroutine per row. Start-up is not cancelled mid-way.
	ctx = context.WithoutCancel(ctx)
	var res ReconcileResult
	// Every active session: those at rest by id, the others with their
	// executor rows, open turns and pending permissions, in five queries
	// whatever the number of sessions.
	active, err := m.store.ListActiveSessions(ctx)
	if err != nil {
		return res, err
	}
	var repairs []events.Apply
	var attach, restart []string
	var interrupted [][2]string // session, turn
	for _, s := range active.AtRest {
		_, _, specErr := m.profiles.Spec(s.AgentProfileID)
		d := decide(view{State: session.SessionWaitingForInput}, restartedInput{AgentAvailable: specErr == nil})
		if len(d.Effects) > 0 && (keep == nil || keep(s.ID)) { // effPushRecovery: its agent went away with the old config
			push := recoveryPushed{Session: s.ID, TaskID: s.TaskID, Always: true, history: m.history}
			repairs = append(repairs, func(tx *store.Store, emit events.Emit) error { return push.Apply(ctx, tx, emit) })
		}
	}
	for _, as := range active.ToRepair {
		if keep != nil && !keep(as.Session.ID) {
			continue // another live node owns it
		}
		spec, _, specErr := m.profiles.Spec(as.Session.AgentProfileID)
		in := restartedOf(as, specErr == nil)
		d := decide(view{State: as.Session.State, QueueHeld: as.Session.QueueHeld}, in)
		res.Sessions++
		for _, e := range d.Effects {
			switch e.(type) {
			case effRestartInterrupt:
				res.InterruptedTurns++
				interrupted = append(interrupted, [2]string{as.Session.ID, e.(effRestartInterrupt).PromptID})
			case effStopOrphan:
				stopOrphan(as.Executor, spec.Command) // now: the old agent must not run on
			case effAttachAgent:
				attach = append(attach, as.Session.ID)
			case effRestartAgent:
				restart = append(restart, as.Session.ID)
			default: // written by restartRepair, in the one transaction below
			}
		}
		repairs = append(repairs, restartRepair(as, d.Effects, in.AgentAvailable, m.history))
	}
	// One transaction for everything (one commit, not one per writer
	// batch): nothing else writes before the API answers, and a failure
	// fails start-up whichever session it is in. Messages a crash left
	// open keep their streamed text as chunk rows (committed with their
	// events); they are folded into their messages first.
	if _, err := m.w.Do(ctx, func(tx *store.Store, emit events.Emit) error {
		if _, err := tx.FoldMessageChunks(ctx); err != nil {
			return err
		}
		for _, apply := range repairs {
			if err := apply(tx, emit); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return res, err
	}
	// Hosted agents went on without the daemon: their actors attach to
	// them again in the background (a host may be slow to reach).
	for _, id := range attach {
		a, err := m.actor(ctx, id)
		if err != nil {
			return res, err
		}
		a.mb.post(a.attach)
	}
	for _, id := range restart {
		a, err := m.actor(ctx, id)
		if err != nil {
			return res, err
		}
		a.mb.post(a.ensureAgent)
	}
	for _, it := range interrupted {
		m.reportChanges(it[0], it[1])
	}
	if err := m.resumeCommands(ctx, keep); err != nil {
		return res, err
	}
	m.spawn(m.sweepCredentialChecks)
	m.spawn(m.takeUpLateOutput)
	res.Reattached = len(attach) + len(restart)
	res.Took = time.Since(start)
	return res, nil
}

// stopOrphan kills the process group of an agent the previous daemon
// started: nobody holds its stdio any more, so it can never be driven. The
// pid may have been reused since (a reboot, a long downtime), so only a
// group leader still running the agent's command is touched.
// Whether there is one to stop is decided (decideRestarted: effStopOrphan).
func stopOrphan(ex session.Executor, command string) {
	if !isAgentProcess(ex.PID, command) {
		return
	}
	if err := syscall.Kill(-ex.PID, syscall.SIGTERM); err != nil {
		return // no such group (ESRCH): nothing left, and the pid may be reused
	}
	time.AfterFunc(3*time.Second, func() { _ = syscall.Kill(-ex.PID, syscall.SIGKILL) })
}

// restartedOf is what decide needs to know of a session to repair.
func restartedOf(as store.ActiveSession, available bool) restartedInput {
	ex := as.Executor
	in := restartedInput{Repair: true, Permissions: len(as.Permissions), Executor: ex.Status,
		Orphan: ex.PID > 0 && ex.Runtime == session.RuntimeStandalone, AgentAvailable: available,
		Hosted: ex.Runtime != session.RuntimeStandalone && ex.Runtime != "" &&
			(ex.Status == session.ExecutorReady || ex.Status == session.ExecutorReconnecting || ex.Status == session.ExecutorStarting)}
	for _, t := range as.OpenTurns {
		in.Turns = append(in.Turns, storedTurn{PromptID: t.PromptID, State: t.State})
	}
	return in
}

// restartRepair performs a restarted session's store effects (decided by
// decideRestarted) in the writer's transaction.
func restartRepair(as store.ActiveSession, effs []effect, available bool, history *historyChecks) events.Apply {
	return func(tx *store.Store, emit events.Emit) error {
		// Redone alone if its batch fails: work on copies, so a redo
		// starts from what was submitted.
		s, ex := as.Session, as.Executor
		ctx := context.Background()
		a := &actor{id: s.ID, sess: s} // for payload helpers only
		now := time.Now().UTC()
		turns := make(map[string]session.Turn, len(as.OpenTurns))
		for _, t := range as.OpenTurns {
			turns[t.PromptID] = t
		}
		for _, e := range effs {
			var err error
			switch e := e.(type) {
			case effStopOrphan, effAttachAgent, effRestartAgent: // performed outside the write
			case effMarkReconnecting:
				ex.Status = session.ExecutorReconnecting
				if err = tx.UpdateExecutor(ctx, ex); err == nil {
					emit(a.draft("", executorPayload(ex)))
				}
			case effHoldQueue:
				s.QueueHeld = true
				emit(a.queueHeldDraft(true))
			case effRestartInterrupt:
				// Unfinished tool calls fail, and a turn that was
				// running gets a system message.
				t := turns[e.PromptID]
				t.State, t.EndedAt, t.InterruptReason = session.TurnInterrupted, &now, "daemon_restart"
				ti := turnInterrupted{TaskID: s.TaskID, Turn: t, Cause: "daemon restart"}
				if e.Running {
					ti.Notice = "Turn interrupted: tetherd restarted while it was running."
				}
				err = ti.Apply(ctx, tx, emit)
			case effClosePermissions:
				for _, p := range as.Permissions {
					emit(a.draft(p.PromptID, &session.PermissionResolvedData{RequestID: p.ID, State: e.State}))
				}
			case effStopExecutor:
				ex.Status = session.ExecutorStopped
				ex.ErrorMessage = "agent stopped: tetherd restarted"
				if err = tx.UpdateExecutor(ctx, ex); err == nil {
					emit(a.draft("", executorPayload(ex)))
				}
			case effSetState:
				prev := s.State
				s.State = e.State
				emit(stateDraft(s, prev))
			case effTaskFollow:
				err = events.FollowTask(ctx, tx, emit, s.ID, s.TaskID, s.State)
			case effPushRecovery:
				// Tell every client where the session now stands.
				err = recoveryPushed{Session: s.ID, TaskID: s.TaskID, AgentAvailable: available, Always: true, history: history}.Apply(ctx, tx, emit)
			default:
				err = fmt.Errorf("restart: effect %T not performed", e)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// knownAuthFailure reports whether the session's last start failed because
// the agent wants credentials and its profile is unchanged since: starting
// it again at every start-up would fail the same way (and, for agents that
// open a browser or a terminal login, bother the user).
func (m *Manager) knownAuthFailure(ex session.Executor, profileID string) bool {
	if ex.Status != session.ExecutorError || ex.ErrorCode != string(errcode.AgentAuthRequired) {
		return false
	}
	fp := m.profiles.Fingerprint(profileID)
	return fp != "" && ex.ErrorProfile == fp
}

// Resume restores a session's agent and waits, event-driven and bounded by
// the configured timeout, until it is ready or failed.
func (m *Manager) Resume(ctx context.Context, sessionID string) (Status, error) {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return Status{}, err
	}
	ch, err := call(ctx, a.mb, a.resume)
	if err != nil {
		return Status{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, m.cfg.ResumeWait)
	defer cancel()
	select {
	case err = <-ch:
	case <-a.mb.done:
		err = errcode.New(errcode.SessionTerminal, "session was closed while its agent was starting")
	case <-wctx.Done():
		err = errcode.Wrap(errcode.Timeout, wctx.Err(), "the agent was not ready within %s", m.cfg.ResumeWait).With("retryAfter", 5)
	}
	if serr := a.sync(ctx); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return Status{}, err
	}
	return m.Status(ctx, sessionID)
}

// isAgentProcess reports whether pid leads its own process group and runs
// command (argv[0] as launched), read from /proc.
func isAgentProcess(pid int, command string) bool {
	if command == "" {
		return false
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	return argv0 == command || filepath.Base(argv0) == filepath.Base(command)
}
