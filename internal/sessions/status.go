package sessions

import (
	"context"
	"syscall"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Resume reasons reported by Status.
const (
	ReasonAgentRunning      = "agent_running"
	ReasonAgentStarting     = "agent_starting"
	ReasonAgentRecentlySeen = "agent_recently_seen"
	ReasonAgentNotRunning   = "agent_not_running"
	// ReasonFreshStart: turns have run, but the agent holds no session of
	// them to restore (it never opened one): a start is a fresh session/new.
	ReasonFreshStart        = "agent_not_running_fresh_start"
	ReasonNotResumable      = "not_resumable"
	ReasonSessionTerminal   = "session_terminal"
	ReasonAgentUnavailable  = "agent_unavailable"
	ReasonWorkingDirMissing = "working_directory_missing"
	// ReasonNeverStartedSession: no turn has run and the agent never
	// opened a session (not started yet, or every start failed).
	ReasonNeverStartedSession = "agent_not_started"
)

// Status is what a client needs to decide whether to resume a session.
type Status struct {
	Session        session.Session
	Executor       session.Executor
	IsAgentRunning bool
	IsResumable    bool
	NeedsResume    bool
	ResumeReason   string
	LastError      string
	// LastErrorCode is the stable code of LastError (e.g. agent_auth_required).
	LastErrorCode    string
	AgentAvailable   bool
	HistoryInjection bool
	// Workspace is whether the session's executor serves its workspace
	// now, with or without the agent.
	Workspace runtimes.WorkspaceAvailability
	// Sandbox is the sandbox policy in force and whether the agent runs
	// in it.
	Sandbox SandboxView
}

// Status evaluates a session (reference 000's four cases, plus not
// resumable, terminal, agent unavailable and a missing directory).
func (m *Manager) Status(ctx context.Context, sessionID string) (Status, error) {
	m.mu.Lock()
	a := m.actors[sessionID]
	m.mu.Unlock()
	if a != nil {
		// A live session answers on its actor once its writes have
		// committed: status never says more than the log does (an agent
		// running before its session.resumed is committed), and never less.
		// A load still settling (waiting for a late replay) has not
		// decided its outcome yet: the agent is up, its restore is not done.
		// An agent attached on a host that reported it ended runs no more.
		// The session and executor are the actor's own copies, which it
		// writes: no read of the store.
		st, ok, err := query(ctx, a, func() (Status, error) {
			running := a.conn != nil && !a.settling && !endedOnHost(a.conn)
			return m.statusOf(a.sess, a.exec, running, a.starting || a.settling, a.lastErr), nil
		})
		if ok {
			return st, err
		}
	}
	return m.status(ctx, sessionID, false, false, nil)
}

// status evaluates the session's rows, read in one snapshot, with what the
// actor knows live (nothing when no actor holds the session).
func (m *Manager) status(ctx context.Context, sessionID string, running, starting bool, lastErr error) (Status, error) {
	var sess session.Session
	var ex session.Executor
	err := m.store.Snapshot(ctx, func(r *store.Store) error {
		var err error
		if sess, err = r.GetSession(ctx, sessionID); err != nil {
			return err
		}
		ex, err = r.GetExecutor(ctx, sessionID)
		return err
	})
	if err != nil {
		return Status{}, err
	}
	return m.statusOf(sess, ex, running, starting, lastErr), nil
}

// statusOf evaluates a session and its executor with what the actor knows
// live: the actor's own copies, which it writes, or the rows.
func (m *Manager) statusOf(sess session.Session, ex session.Executor, running, starting bool, lastErr error) Status {
	st := Status{Session: sess, Executor: ex}
	if lastErr != nil {
		st.LastError = lastErr.Error()
		st.LastErrorCode = string(errcode.CodeOf(lastErr))
	}
	st.IsAgentRunning = running
	st.Workspace = runtimes.Availability(m.cfg.Executors, ex)
	_, profile, specErr := m.profiles.Spec(sess.AgentProfileID)
	st.AgentAvailable = specErr == nil
	st.HistoryInjection = profile.HistoryContextInjection
	st.Sandbox = sandboxView(sess, profile, ex)
	canRestore := profile.HistoryContextInjection || ex.SupportsLoad || ex.SupportsSessionResume
	if c := profile.Capabilities; c != nil {
		canRestore = canRestore || c.LoadSession || c.Resume
	}
	switch {
	case sess.State.Terminal():
		st.ResumeReason = ReasonSessionTerminal
	case running:
		st.IsResumable, st.ResumeReason = true, ReasonAgentRunning
	case starting:
		st.IsResumable, st.ResumeReason = true, ReasonAgentStarting
	case recentlySeen(ex):
		// Not ours in memory, but its process was alive moments ago (a
		// stale execution being torn down or reconciled): resuming now
		// would race it.
		st.IsResumable, st.ResumeReason = true, ReasonAgentRecentlySeen
	case !st.AgentAvailable:
		st.NeedsResume, st.ResumeReason = true, ReasonAgentUnavailable
	case runtimes.CheckDir(sess.Cwd) != nil:
		st.NeedsResume, st.ResumeReason = true, ReasonWorkingDirMissing
	case !sess.Prompted && ex.ResumeToken == "":
		// No turn has run and the agent never opened a session: whether it
		// was not started yet or its starts failed (executorStatus and
		// errorMessage tell), there is nothing of it to resume.
		st.IsResumable, st.NeedsResume, st.ResumeReason = true, true, ReasonNeverStartedSession
	case !canRestore && sess.Prompted:
		st.ResumeReason = ReasonNotResumable
	case ex.ResumeToken != "":
		st.IsResumable, st.NeedsResume, st.ResumeReason = true, true, ReasonAgentNotRunning
	default:
		st.IsResumable, st.NeedsResume, st.ResumeReason = true, true, ReasonFreshStart
	}
	return st
}

// recentlySeenWindow is how long a live-looking executor row is trusted.
const recentlySeenWindow = 30 * time.Second

func recentlySeen(ex session.Executor) bool {
	if ex.Status != session.ExecutorReady && ex.Status != session.ExecutorStarting {
		return false
	}
	if ex.LastSeenAt == nil || time.Since(*ex.LastSeenAt) > recentlySeenWindow || ex.PID <= 0 {
		return false
	}
	return syscall.Kill(ex.PID, 0) == nil
}
