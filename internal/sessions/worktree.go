package sessions

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/workspace"
)

// Session worktrees (workspace.OpWorktreeEnsure): a session created with
// Worktree works in a git worktree of the repository it was created in,
// on a branch of its own named after its task and itself, made by its
// executor where the agent runs. The executor row records repository,
// path and branch; every start of the agent checks the worktree first and
// has it made again from its branch if it went missing; closing the
// session removes it only when nothing in it is uncommitted (and
// Config.KeepWorktrees is off) and says in the transcript what it kept.

// worktreeBranch names a session's branch: tether/<task>-<session>, the
// task's title reduced to lower-case words and the session id's first
// eight characters, so that `git branch` tells the sessions apart.
func worktreeBranch(title, sessionID string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug == "" {
		slug = "session"
	}
	return "tether/" + slug + "-" + sessionID[:min(8, len(sessionID))]
}

// makeWorktree has the executor (runtime, host) make the new session's
// worktree in the repository of dir, and returns it with the executor row
// fields to record.
func (m *Manager) makeWorktree(ctx context.Context, runtime session.Runtime, host, sessionID, dir, title string) (*workspace.Worktree, error) {
	res, err := runtimes.Serve(ctx, m.cfg.Executors, m.cfg.Workspace, runtime, host, workspace.Request{Op: workspace.OpWorktreeEnsure, Root: dir, Session: sessionID,
		Branch: worktreeBranch(title, sessionID)})
	if err != nil {
		return nil, err
	}
	return res.Worktree, nil
}

// ensureWorktree is the check before an agent starts: the session's
// worktree is there, on its branch, or made again from it.
func (m *Manager) ensureWorktree(ctx context.Context, sessionID string, ex session.Executor) (*workspace.Worktree, error) {
	res, err := runtimes.Serve(ctx, m.cfg.Executors, m.cfg.Workspace, ex.Runtime, ex.Host, workspace.Request{Op: workspace.OpWorktreeEnsure, Root: ex.WorktreeRepo,
		Session: sessionID, Branch: ex.WorktreeBranch})
	if err != nil {
		return nil, err
	}
	return res.Worktree, nil
}

// worktreeRecreated tells the session's transcript that its worktree was
// made again from its branch.
func (a *actor) worktreeRecreated(wt *workspace.Worktree) {
	a.log.Info("worktree was missing; made again from its branch", "path", wt.Path, "branch", wt.Branch)
	a.systemMessage(fmt.Sprintf("The session's worktree %s was missing; it was made again from branch %s, with its commits (uncommitted changes that were in it are lost with it).", wt.Path, wt.Branch))
}

// releaseWorktree is the close of a session's worktree, once the session
// is closed: removed if clean, else kept; the branch always stays. What it
// did is recorded on the executor row and said in the transcript.
func (m *Manager) releaseWorktree(ctx context.Context, a *actor) {
	ex, err := m.store.GetExecutor(ctx, a.id)
	if err != nil || ex.WorktreeState != session.WorktreeActive {
		return
	}
	res, err := runtimes.Serve(ctx, m.cfg.Executors, m.cfg.Workspace, ex.Runtime, ex.Host, workspace.Request{Op: workspace.OpWorktreeRelease, Root: ex.WorktreeRepo,
		Session: a.id, Branch: ex.WorktreeBranch, Keep: m.cfg.KeepWorktrees})
	var text string
	state := session.WorktreeKept
	switch {
	case err != nil:
		a.log.Warn("closing the worktree failed; it is kept", "path", ex.WorktreePath, "err", err)
		text = fmt.Sprintf("Kept the worktree %s and branch %s: its executor could not check it (%v).", ex.WorktreePath, ex.WorktreeBranch, err)
	case res.Worktree.Removed:
		state = session.WorktreeRemoved
		text = fmt.Sprintf("Removed the worktree %s (nothing in it was uncommitted); branch %s keeps its commits.", ex.WorktreePath, ex.WorktreeBranch)
	case res.Worktree.Changed > 0:
		text = fmt.Sprintf("Kept the worktree %s and branch %s: %d paths in it have uncommitted changes.", ex.WorktreePath, ex.WorktreeBranch, res.Worktree.Changed)
	default:
		text = fmt.Sprintf("Kept the worktree %s and branch %s (tetherd --keep-worktrees).", ex.WorktreePath, ex.WorktreeBranch)
	}
	_ = a.do(ctx, func() {
		a.exec.WorktreeState = state
		a.saveExecutor()
		a.systemMessage(text)
	})
	_ = a.sync(ctx)
}

// systemMessage adds a system message outside any turn.
func (a *actor) systemMessage(text string) {
	a.emit(a.messageDraft(session.Message{Role: session.RoleSystem, Text: text}, "", 0))
}
