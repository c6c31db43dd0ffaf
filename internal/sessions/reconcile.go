package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// ReconcileResult summarises start-up reconciliation.
type ReconcileResult struct {
	Sessions         int
	InterruptedTurns int
	Took             time.Duration
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
func (m *Manager) Reconcile(ctx context.Context) (ReconcileResult, error) {
	start := time.Now()
	// Thousands of short reads: with a cancellable context the sqlite
	// driver starts a goroutine per row. Start-up is not cancelled mid-way.
	ctx = context.WithoutCancel(ctx)
	var res ReconcileResult
	// Messages a crash left open keep their streamed text as chunk rows
	// (committed with their events); fold them into their messages.
	if err := m.w.Exec(ctx, func(tx *store.Store) error {
		_, err := tx.FoldMessageChunks(ctx)
		return err
	}); err != nil {
		return res, err
	}
	// Every active session: those at rest by id, the others with their
	// executor rows, open turns and pending permissions, in five queries
	// whatever the number of sessions.
	active, err := m.store.ListActiveSessions(ctx)
	if err != nil {
		return res, err
	}
	var pending []*events.Pending
	for _, s := range active.AtRest {
		if _, _, specErr := m.profiles.Spec(s.AgentProfileID); specErr != nil {
			// Consistent, but its agent went away with the old config:
			// clients must learn it cannot be continued here.
			pending = append(pending, m.w.SubmitChange(recoveryPushed{Session: s.ID, TaskID: s.TaskID, Always: true, history: m.history}))
		}
	}
	for _, as := range active.ToRepair {
		s, ex, turns, perms := as.Session, as.Executor, as.OpenTurns, as.Permissions
		spec, _, specErr := m.profiles.Spec(s.AgentProfileID)
		res.Sessions++
		if len(turns) > 0 && (!s.QueueHeld || turns[0].State == store.TurnRunning) {
			res.InterruptedTurns++ // the running turn, or the queued one about to run
		}
		stopOrphan(ex, spec.Command)
		pending = append(pending, m.w.Submit(reconcileOp(s, ex, turns, perms, specErr == nil, m.history)))
	}
	for _, p := range pending {
		if _, err := p.Wait(ctx); err != nil {
			return res, err
		}
	}
	res.Took = time.Since(start)
	return res, nil
}

// stopOrphan kills the process group of an agent the previous daemon
// started: nobody holds its stdio any more, so it can never be driven. The
// pid may have been reused since (a reboot, a long downtime), so only a
// group leader still running the agent's command is touched.
func stopOrphan(ex store.Executor, command string) {
	if ex.PID <= 0 || ex.Runtime != store.RuntimeStandalone || (ex.Status != store.ExecutorReady && ex.Status != store.ExecutorStarting) {
		return
	}
	if !isAgentProcess(ex.PID, command) {
		return
	}
	if err := syscall.Kill(-ex.PID, syscall.SIGTERM); err != nil {
		return // no such group (ESRCH): nothing left, and the pid may be reused
	}
	time.AfterFunc(3*time.Second, func() { _ = syscall.Kill(-ex.PID, syscall.SIGKILL) })
}

func reconcileOp(s store.Session, ex store.Executor, turns []store.Turn, perms []store.Permission, available bool, history *historyChecks) events.Apply {
	return func(tx *store.Store, emit events.Emit) error {
		// Redone alone if its batch fails: work on copies, so a redo
		// starts from what was submitted.
		s, ex := s, ex
		ctx := context.Background()
		a := &actor{id: s.ID, sess: s} // for payload helpers only
		now := time.Now().UTC()
		// The turn that was running is the one the restart interrupted; with
		// none running, the first queued turn was about to start (its agent
		// never got it), so it is. The turns queued behind it are held. A
		// queue held since an earlier restart stays whole.
		interrupted := s.QueueHeld || slices.ContainsFunc(turns, func(t store.Turn) bool { return t.State == store.TurnRunning })
		for _, t := range turns {
			if t.State == store.TurnQueued && !interrupted {
				interrupted = true
			} else if t.State == store.TurnQueued {
				// It never reached the agent: it stays queued, in its place,
				// and waits for the user (never run by itself at start-up).
				if !s.QueueHeld {
					s.QueueHeld = true
					if err := tx.SetSessionQueueHeld(ctx, s.ID, true); err != nil {
						return err
					}
				}
				continue
			}
			dangling, err := failDanglingToolCalls(ctx, tx, emit, a, t.PromptID, "daemon restart")
			if err != nil {
				return err
			}
			if t.State == store.TurnRunning {
				m, err := tx.AddMessage(ctx, store.Message{SessionID: s.ID, PromptID: t.PromptID, Role: store.RoleSystem,
					Text: "Turn interrupted: tetherd restarted while it was running."})
				if err != nil {
					return err
				}
				emit(messageAdded(a, m))
			}
			t.State, t.EndedAt, t.InterruptReason = store.TurnInterrupted, &now, "daemon_restart"
			if err := tx.UpdateTurn(ctx, t); err != nil {
				return err
			}
			emit(turnEndedDraft(s.ID, s.TaskID, t, dangling))
		}
		for _, p := range perms {
			if _, err := tx.ResolvePermission(ctx, s.ID, p.ID, store.PermissionExpired, ""); err != nil {
				return err
			}
			emit(a.draft(events.PermissionResolved, p.PromptID, &events.PermissionResolvedData{RequestID: p.ID, State: store.PermissionExpired}))
		}
		if ex.Status == store.ExecutorReady || ex.Status == store.ExecutorStarting {
			ex.Status = store.ExecutorStopped
			ex.ErrorMessage = "agent stopped: tetherd restarted"
			if err := tx.UpdateExecutor(ctx, ex); err != nil {
				return err
			}
			emit(a.draft(events.SessionExecutorStatus, "", executorPayload(ex)))
		}
		prev := s.State
		s.State = store.SessionWaitingForInput
		if prev != s.State {
			if err := emitState(ctx, tx, emit, s, prev); err != nil {
				return err
			}
		} else if err := emitTaskFollow(ctx, tx, emit, s); err != nil {
			return err
		}
		// Tell every client where the session now stands.
		return recoveryPushed{Session: s.ID, TaskID: s.TaskID, AgentAvailable: available, Always: true, history: history}.Apply(ctx, tx, emit)
	}
}

// ResumeOnStart restores resumable sessions in the background (eager mode),
// newest first, at most concurrency at a time. Failures are visible on each
// session; they never stop the others. It respects the agent caps: once the
// daemon-wide cap is reached the rest stay lazy (restored on first use).
func (m *Manager) ResumeOnStart(ctx context.Context, concurrency int) {
	if concurrency <= 0 {
		concurrency = 4
	}
	sessions, err := m.store.ListSessionsByState(ctx, store.SessionWaitingForInput)
	if err != nil {
		m.cfg.Logger.Error("eager resume: list sessions", "err", err)
		return
	}
	sort.Slice(sessions, func(i, j int) bool { return sessions[i].UpdatedAt.After(sessions[j].UpdatedAt) })
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	var full atomic.Bool
	for _, s := range sessions {
		if full.Load() {
			m.cfg.Logger.Info("eager resume stopped at the agent limit; the other sessions restore on first use", "maxAgents", m.cfg.MaxAgents)
			break
		}
		st, err := m.Status(ctx, s.ID)
		if err != nil || !st.NeedsResume || !st.IsResumable {
			continue
		}
		if m.knownAuthFailure(st.Executor, s.AgentProfileID) {
			m.cfg.Logger.Info("eager resume skipped: the agent asked for credentials with this profile; change the profile or resume the session",
				"session", s.ID, "agent", s.AgentProfileID)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := m.Resume(ctx, s.ID)
			var de *errcode.Error
			switch {
			case errors.As(err, &de) && de.Code == errcode.AgentLimitReached:
				if de.Details["scope"] == "daemon" {
					full.Store(true)
				}
				m.cfg.Logger.Info("eager resume skipped: agent limit", "session", s.ID, "err", err)
			case err != nil:
				m.cfg.Logger.Warn("eager resume failed", "session", s.ID, "err", err)
			}
		}()
	}
	wg.Wait()
}

// knownAuthFailure reports whether the session's last start failed because
// the agent wants credentials and its profile is unchanged since: starting
// it again at every start-up would fail the same way (and, for agents that
// open a browser or a terminal login, bother the user).
func (m *Manager) knownAuthFailure(ex store.Executor, profileID string) bool {
	if ex.Status != store.ExecutorError || ex.ErrorCode != string(errcode.AgentAuthRequired) {
		return false
	}
	_, prof, err := m.profiles.Spec(profileID)
	return err == nil && ex.ErrorProfile == prof.Fingerprint()
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
