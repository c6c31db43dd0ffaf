package sessions

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/workspace"
)

// Creating a session: Manager.Create, the request flow of POST /session.

// CreateInput is a request to start a session.
type CreateInput struct {
	AgentProfileID string
	Cwd            string
	TaskID         string
	Title          string
	// InitialPrompt is a JSON array of content blocks; empty for none.
	InitialPrompt json.RawMessage
	PromptID      string
	// Executor is where the agent runs (the API's `executor`); "" takes
	// the profile's default, else the daemon's.
	Executor string
	// Worktree isolates the session in a git worktree of Cwd's repository,
	// on a branch of its own (worktree.go); the session's directory is
	// then in the worktree.
	Worktree bool
	// AutoContinue opts the session in to safe automatic continuation;
	// nil takes the profile's autoContinue.
	AutoContinue *bool
	// Sandbox is the session's own sandbox policy, laid field by field
	// over the profile's (the zero policy: the profile's).
	Sandbox sandbox.Policy
	// Budget is the session's own budget, laid member by member over the
	// profile's (the zero budget: the profile's).
	Budget session.Budget
	// fork makes the session a fork (fork.go): its executor, directory
	// and worktree are the fork's, and its log starts with the copy.
	fork *forkSpec
}

// newSessionID is a new session's id.
func newSessionID() string { return uuid.NewString() }

// Create validates the request, then persists the session, its task when
// none is given, and the initial prompt's turn (queued) in one write: all
// of it exists or none of it does, and the agent starts only after. The
// agent's slot is reserved first: at a cap, nothing is created. A profile
// whose agent asked for credentials at its last start is checked with it
// (credentials.Checker.Check) before anything is made.
func (m *Manager) Create(ctx context.Context, in CreateInput) (_ session.Session, err error) {
	_, profile, err := m.profiles.Spec(in.AgentProfileID)
	if err != nil {
		return session.Session{}, err
	}
	var cwd string
	var runtime session.Runtime
	var host string
	if f := in.fork; f != nil {
		cwd, runtime, host = f.cwd, f.runtime, f.host
	} else {
		if cwd, err = m.ResolveCwd(in.Cwd); err != nil {
			return session.Session{}, err
		}
		if runtime, host, err = m.cfg.Executors.Choose(in.Executor, profile.Executor); err != nil {
			return session.Session{}, err
		}
	}
	if err := in.Budget.Check(); err != nil {
		return session.Session{}, errcode.New(errcode.InvalidRequest, "%v", err).With("field", "budget")
	}
	if err := checkSandbox(in.Sandbox, profile, runtime); err != nil {
		return session.Session{}, err
	}
	var initial session.Turn
	if len(in.InitialPrompt) > 0 {
		if err := m.checkPrompt(in.InitialPrompt); err != nil {
			return session.Session{}, err
		}
		initial = session.Turn{PromptID: in.PromptID, Kind: session.TurnInitial, Prompt: in.InitialPrompt, State: session.TurnQueued}
		if initial.PromptID == "" {
			initial.PromptID = uuid.NewString()
		}
	}
	slot, err := m.slots.acquire(in.AgentProfileID, profile.MaxAgents)
	if err != nil {
		return session.Session{}, err
	}
	var a *actor // once set, the actor owns the slot
	defer func() {
		switch {
		case a == nil:
			slot.release()
		case err != nil:
			a.mb.Post(a.dropSlot) // unless an agent is starting with it
		}
	}()
	// In the session's slot: a check is one more agent process.
	if err := m.credentials.Check(ctx, in.AgentProfileID, runtime, host, cwd); err != nil {
		return session.Session{}, err
	}
	sessionID := newSessionID()
	repoDir := cwd
	var wt *workspace.Worktree
	if f := in.fork; f != nil {
		if f.newSessionID != "" {
			sessionID = f.newSessionID
		}
		wt = f.worktree
	} else if in.Worktree {
		title := in.Title
		if title == "" && in.TaskID != "" {
			if t, err := m.store.GetTask(ctx, in.TaskID); err == nil {
				title = t.Title
			}
		}
		if wt, err = m.makeWorktree(ctx, runtime, host, sessionID, cwd, title); err != nil {
			return session.Session{}, err
		}
		cwd = wt.Cwd
	}
	// From here a create runs to its end even if the client goes away: a
	// session committed without its actor would wait for a restart.
	ctx = context.WithoutCancel(ctx)
	// Every id is chosen here, before the change is submitted: should its
	// batch be redone, it writes the same rows.
	change := sessionCreated{
		Session: session.Session{ID: sessionID, TaskID: in.TaskID, AgentProfileID: in.AgentProfileID, Cwd: cwd,
			Title: in.Title, State: session.SessionCreated, EventEpoch: store.NewEpoch(),
			// The profile's MCP servers, kept with the session: every load
			// and resume resends what the session was created with.
			MCPServers: profile.MCPServers, AutoContinue: profile.AutoContinue, Sandbox: in.Sandbox.Encode(),
			Budget: profile.Budget.Over(in.Budget)},
		Executor: session.Executor{Runtime: runtime, Host: host, Status: session.ExecutorStopped},
	}
	if in.AutoContinue != nil {
		change.Session.AutoContinue = *in.AutoContinue
	}
	// The user's title, else the first prompt's (session.PromptTitle).
	if in.Title != "" {
		change.Session.TitleSource = session.TitleUser
	} else if t := session.PromptTitle(promptText(in.InitialPrompt)); t != "" {
		change.Session.Title, change.Session.TitleSource = t, session.TitlePrompt
	}
	if wt != nil {
		cwd = wt.Cwd
		change.Session.Cwd = cwd
		x := &change.Executor
		x.WorktreePath, x.WorktreeBranch, x.WorktreeRepo, x.WorktreeState = wt.Path, wt.Branch, wt.Repository, session.WorktreeActive
	}
	if in.TaskID == "" {
		title := change.Session.Title
		if title == "" {
			title = "Session in " + repoDir
		}
		change.Task = &session.Task{ID: uuid.NewString(), Title: title, Workspace: repoDir}
		change.Session.TaskID = change.Task.ID
	}
	if initial.PromptID != "" {
		initial.SessionID = change.Session.ID
		change.Initial = &initial
	}
	if in.fork != nil {
		change.Fork = in.fork.copy
	}
	sess := change.Session
	if own := m.cfg.Ownership; own != nil {
		if _, err = own.Acquire(ctx, sess.ID); err != nil {
			return session.Session{}, err
		}
	}
	if _, err = m.w.SubmitContext(ctx, change).Wait(ctx); err != nil {
		return session.Session{}, err
	}
	// The actor loads the queued initial turn with the session.
	live, err := m.actor(ctx, sess.ID)
	if err != nil {
		return session.Session{}, err
	}
	if !live.mb.Post(func() { live.slot = slot }) {
		return session.Session{}, errcode.New(errcode.ServiceShuttingDown, "tetherd is shutting down")
	}
	a = live
	if _, err := callWrites(ctx, a, func() (struct{}, error) { a.ensureAgent(); return struct{}{}, nil }); err != nil {
		return session.Session{}, err
	} else if err := a.sync(ctx); err != nil {
		// The 201 says the agent is starting: that must be on record.
		return session.Session{}, err
	}
	return m.store.GetSession(ctx, sess.ID)
}
