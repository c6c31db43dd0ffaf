package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/workspace"
)

// Forking a session: Manager.Fork, the request flow of POST
// /session/{id}/fork and …/handoff (docs/rewind.md). A fork is a new
// session of the same task, on the same executor, whose log starts with a
// copy of the origin's transcript up to and including one turn
// (each copied turn's events, then session.forked), and whose directory
// holds that turn's end state, restored from the origin's checkpoints
// into a new worktree (the default) or a directory the user names. A
// hand-off is a fork at the latest turn that shares the origin's
// directory, usually with another agent. Either way the fork's agent
// gets the copied transcript at its first start: natively, when the
// agent can copy its origin's ACP session (forknative.go), else once,
// by history injection.

// ForkInput is a fork request.
type ForkInput struct {
	// AtTurn is the origin's turn the fork copies up to (included);
	// empty takes its latest turn that ended.
	AtTurn string
	// AgentProfileID is the fork's agent ("" takes the origin's).
	AgentProfileID string
	// Cwd, when set, is the directory the turn's end state is restored
	// into (new or empty) instead of a new worktree.
	Cwd   string
	Title string
	// Handoff shares the origin's directory (no restore): AtTurn must be
	// its latest turn, and none may run.
	Handoff bool
}

// forkCopy is what a fork's creation writes after session.created: the
// origin, and the transcript it copies.
type forkCopy struct {
	Forked   session.SessionForkedData
	Turns    []session.Turn
	Messages []session.Message
	Calls    []session.ToolCall
}

// emit writes the fork's copy of the transcript, then its
// session.forked: each turn queued, started and ended as it was, with its
// messages and tool calls whole (their chunks folded into one
// message.added), marked Copied.
func (f *forkCopy) emit(sess session.Session, emit events.Emit) {
	copied := func(d events.Draft) { d.Copied = true; emit(d) }
	msgs := map[string][]session.Message{}
	for _, m := range f.Messages {
		msgs[m.PromptID] = append(msgs[m.PromptID], m)
	}
	calls := map[string][]session.ToolCall{}
	for _, c := range f.Calls {
		calls[c.PromptID] = append(calls[c.PromptID], c)
	}
	for _, t := range f.Turns {
		d := func(p session.EventPayload) events.Draft { return sessionDraft(sess.ID, sess.TaskID, t.PromptID, p) }
		emit := copied
		emit(queuedDraft(sess, t))
		if t.StartedAt != nil {
			emit(d(&session.TurnStartedData{Kind: t.Kind, StartedAt: *t.StartedAt}))
		}
		if t.DeliveredAt != nil {
			emit(d(&session.TurnDeliveredData{DeliveredAt: t.DeliveredAt}))
		}
		for _, m := range msgs[t.PromptID] {
			emit(d(&session.MessageAddedData{Role: m.Role, Text: m.Text, Content: m.Content, CreatedAt: m.CreatedAt}))
		}
		for _, c := range calls[t.PromptID] {
			at := c.CreatedAt
			emit(d(&session.ToolCallStartedData{ToolCallData: session.ToolCallData{ToolCallID: c.ToolCallID, Title: c.Title, Kind: c.Kind,
				Status: c.Status, Interrupted: c.Interrupted, Content: c.Content, Locations: c.Locations, RawInput: c.RawInput, RawOutput: c.RawOutput,
				CreatedAt: &at}}))
		}
		if len(t.WorkspaceChanges) > 0 {
			var w session.WorkspaceChanges
			if json.Unmarshal(t.WorkspaceChanges, &w) == nil {
				emit(d(&session.TurnWorkspaceChangesData{Changes: w}))
			}
		}
		if t.State.Terminal() {
			emit(turnEndedDraft(sess.ID, sess.TaskID, t, nil))
		}
	}
	fd := f.Forked
	emit(sessionDraft(sess.ID, sess.TaskID, "", &fd))
}

// forkPoint is the origin's turns a fork copies (in seq order) and the
// turn it is made at, with the turn that started after it (whose
// checkpoint is its end when it has none).
type forkPoint struct {
	at     session.Turn
	next   string
	copied []session.Turn
	latest bool
}

// pickForkPoint finds the turn a fork is made at (atTurn, or the latest
// that ended) among the origin's turns, and what it copies: the turns up
// to it that no rewind took back.
func pickForkPoint(turns []session.Turn, atTurn string) (forkPoint, error) {
	turns = slices.Clone(turns)
	slices.SortFunc(turns, func(a, b session.Turn) int { return int(a.Seq - b.Seq) })
	i := -1
	if atTurn == "" {
		for j := len(turns) - 1; j >= 0; j-- {
			if t := turns[j]; !t.Rewound && t.StartedAt != nil && t.State.Terminal() {
				i = j
				break
			}
		}
		if i < 0 {
			return forkPoint{}, errcode.New(errcode.InvalidState, "the session has no turn that ended to fork from")
		}
	} else if i = slices.IndexFunc(turns, func(t session.Turn) bool { return t.PromptID == atTurn }); i < 0 {
		return forkPoint{}, errcode.New(errcode.TurnNotFound, "the session has no turn %q", atTurn).With("promptId", atTurn)
	}
	at := turns[i]
	switch {
	case at.Rewound:
		return forkPoint{}, errcode.New(errcode.InvalidState, "turn %s was rewound: undo that rewind to fork from it", at.PromptID).With("promptId", at.PromptID)
	case at.StartedAt == nil || !at.State.Terminal():
		return forkPoint{}, errcode.New(errcode.RewindRunning, "turn %s has not ended: fork once it has", at.PromptID).With("promptId", at.PromptID)
	}
	p := forkPoint{at: at, latest: true}
	for _, t := range turns[:i+1] {
		if !t.Rewound {
			p.copied = append(p.copied, t)
		}
	}
	for _, t := range turns[i+1:] {
		if p.next == "" && t.StartedAt != nil {
			p.next = t.PromptID
		}
		if !t.Rewound {
			p.latest = false
		}
	}
	return p, nil
}

// Fork makes a new session from session originID at in.AtTurn.
//
// With several nodes it is work on the origin: the node serving it takes
// the origin's lease first, whose generation its executor host wants on
// the workspace commands that restore the turn (as Manager.Workspace).
func (m *Manager) Fork(ctx context.Context, originID string, in ForkInput) (session.Session, error) {
	began := time.Now()
	if own := m.cfg.Ownership; own != nil {
		if _, err := own.Acquire(ctx, originID); err != nil {
			return session.Session{}, err
		}
	}
	var origin session.Session
	var ex session.Executor
	var turns []session.Turn
	var msgs []session.Message
	var calls []session.ToolCall
	err := m.store.Snapshot(ctx, func(r *store.Store) error {
		var err error
		if origin, err = r.GetSession(ctx, originID); err != nil {
			return err
		}
		if ex, err = r.GetExecutor(ctx, originID); err != nil {
			return err
		}
		if turns, err = r.ListTurns(ctx, originID); err != nil {
			return err
		}
		if msgs, err = r.ListMessages(ctx, originID); err != nil {
			return err
		}
		calls, err = r.ListToolCalls(ctx, originID)
		return err
	})
	if err != nil {
		return session.Session{}, err
	}
	p, err := pickForkPoint(turns, in.AtTurn)
	if err != nil {
		return session.Session{}, err
	}
	read := time.Since(began)
	profileID := in.AgentProfileID
	if profileID == "" {
		profileID = origin.AgentProfileID
	}
	if _, _, err := m.profiles.Spec(profileID); err != nil {
		return session.Session{}, err
	}
	cp := &forkCopy{Forked: session.SessionForkedData{FromSessionID: originID, AtPromptID: p.at.PromptID, Handoff: in.Handoff, Turns: len(p.copied)}}
	keep := map[string]bool{}
	for _, t := range p.copied {
		keep[t.PromptID] = true
		t.SessionID, t.Rewound, t.ContextInjected = "", false, false
		cp.Turns = append(cp.Turns, t)
	}
	for _, msg := range msgs {
		if keep[msg.PromptID] {
			cp.Messages = append(cp.Messages, msg)
		}
	}
	for _, c := range calls {
		if keep[c.PromptID] {
			cp.Calls = append(cp.Calls, c)
		}
	}
	f := &forkSpec{copy: cp, runtime: ex.Runtime, host: ex.Host}
	// Told apart from the origin in lists: "<title> (fork)", or the new
	// agent's profile for a hand-off.
	title := in.Title
	if title == "" && origin.Title != "" {
		title = origin.Title + " (fork)"
		if in.Handoff {
			title = origin.Title + " (" + profileID + ")"
		}
	}
	switch {
	case in.Handoff:
		if !p.latest {
			return session.Session{}, errcode.New(errcode.InvalidState, "a hand-off continues the session's latest turn; turn %s is not", p.at.PromptID).With("promptId", p.at.PromptID)
		}
		for _, t := range turns {
			if t.State == session.TurnRunning || t.State == session.TurnQueued {
				return session.Session{}, errcode.New(errcode.RewindRunning, "turn %s is running or queued: hand off once it has ended", t.PromptID).With("promptId", t.PromptID)
			}
		}
		f.cwd = origin.Cwd
	default:
		if in.Cwd != "" {
			if !filepath.IsAbs(in.Cwd) {
				return session.Session{}, errcode.New(errcode.InvalidCwd, "cwd must be an absolute path, got %q", in.Cwd)
			}
			in.Cwd = filepath.Clean(in.Cwd)
			if ex.Runtime != session.RuntimeRemote {
				// Where this daemon may start sessions (its cwd policy).
				if _, err := m.ResolveCwd(filepath.Dir(in.Cwd)); err != nil {
					return session.Session{}, err
				}
			}
		}
		if err := m.restoreFork(ctx, origin, ex, p, in.Cwd, title, f); err != nil {
			return session.Session{}, err
		}
	}
	restored := time.Since(began)
	fork, err := m.Create(ctx, CreateInput{AgentProfileID: profileID, TaskID: origin.TaskID, Title: title, fork: f,
		AutoContinue: &origin.AutoContinue, Sandbox: sessionSandbox(origin), Budget: origin.Budget})
	if err == nil {
		m.cfg.Logger.Info("session forked", "session", fork.ID, "from", originID, "atTurn", p.at.PromptID, "handoff", in.Handoff,
			"turns", len(cp.Turns), "files", cp.Forked.Written, "read", read, "restore", restored-read, "create", time.Since(began)-restored)
	}
	return fork, err
}

// forkSpec is what Create takes from a fork: the copy to write, where the
// fork runs and its directory (already restored), and its worktree.
type forkSpec struct {
	copy         *forkCopy
	runtime      session.Runtime
	host         string
	cwd          string
	worktree     *workspace.Worktree
	newSessionID string
}

// restoreFork writes the end state of the fork point's turn into the
// fork's directory: cwd when the user named one, else a new worktree of
// the origin's repository made at the HEAD the turn ended on.
func (m *Manager) restoreFork(ctx context.Context, origin session.Session, ex session.Executor, p forkPoint, cwd, title string, f *forkSpec) error {
	spec := workspace.RestoreSpec{Turn: p.at.PromptID, NextTurn: p.next}
	serve := func(req workspace.Request) (workspace.Result, error) {
		return runtimes.Serve(ctx, m.cfg.Executors, m.cfg.Workspace, ex.Runtime, ex.Host, req)
	}
	f.newSessionID = newSessionID()
	if cwd == "" {
		// Where the turn's end comes from, and on which HEAD: the
		// worktree is made there.
		where := spec
		where.Resolve = true
		res, err := serve(workspace.Request{Op: workspace.OpRestore, Root: origin.Cwd, Session: origin.ID, Restore: &where})
		if err != nil {
			return err
		}
		if res.Restored == nil {
			return errcode.New(errcode.WorkspaceUnsupported, "the session's executor cannot restore checkpoints: upgrade its host")
		}
		repo := origin.Cwd
		wres, err := serve(workspace.Request{Op: workspace.OpWorktreeEnsure, Root: repo, Session: f.newSessionID,
			Branch: worktreeBranch(title, f.newSessionID), At: res.Restored.Head, Bare: true})
		if err != nil {
			if errcode.Is(err, errcode.WorkspaceNotRepository) {
				return errcode.New(errcode.WorkspaceNotRepository,
					"the session's directory is in no git repository, so a fork gets no worktree: name a new or empty directory (cwd) to restore the turn's files into")
			}
			return err
		}
		f.worktree = wres.Worktree
		spec.Target, spec.Replace = wres.Worktree.Cwd, !wres.Worktree.Bare
	} else {
		spec.Target = cwd
	}
	res, err := serve(workspace.Request{Op: workspace.OpRestore, Root: origin.Cwd, Session: origin.ID, Restore: &spec})
	if err != nil {
		return err
	}
	if res.Restored == nil {
		return errcode.New(errcode.WorkspaceUnsupported, "the session's executor cannot restore checkpoints: upgrade its host")
	}
	f.cwd = spec.Target
	f.copy.Forked.Source, f.copy.Forked.Written = res.Restored.Source, res.Restored.Written
	return nil
}

// forkMessage is the system message that starts a fork's own part of
// the transcript.
func forkMessage(f session.SessionForkedData) string {
	if f.Handoff {
		return fmt.Sprintf("Handed off from session %s after turn %s: same directory; the agent gets the %d turns above with its first prompt (copied by the agent itself where it can, else once in the prompt).",
			f.FromSessionID, f.AtPromptID, f.Turns)
	}
	return fmt.Sprintf("Forked from session %s at turn %s: %d files restored from the turn's end (%s); the agent gets the %d turns above with its first prompt (copied by the agent itself where it can, else once in the prompt).",
		f.FromSessionID, f.AtPromptID, f.Written, f.Source, f.Turns)
}
