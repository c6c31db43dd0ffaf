package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/workspace"
)

// Workspace performs a workspace operation (files, git) on a session's
// directory, served by the session's executor: in the daemon for a
// standalone session, on its host otherwise. It never goes through the
// session's actor and needs no agent: the workspace works while the agent
// is stopped, failed to resume or cannot resume, as long as the executor
// can be reached (else errcode.ExecutorUnavailable). req.Root and
// req.Session are set here from the session; a closed session's directory
// is still served. With several nodes it is work on the session: the node
// serving it takes the session's lease first, whose generation the host's
// fencing wants on every command (a node restarted under its old id would
// otherwise ask with none, and be refused).
func (m *Manager) Workspace(ctx context.Context, sessionID string, req workspace.Request) (workspace.Result, error) {
	if own := m.cfg.Ownership; own != nil {
		if _, err := own.Acquire(ctx, sessionID); err != nil {
			return workspace.Result{}, err
		}
	}
	sess, err := m.store.GetSession(ctx, sessionID)
	if err != nil {
		return workspace.Result{}, err
	}
	ex, err := m.store.GetExecutor(ctx, sessionID)
	if err != nil && !errcode.Is(err, errcode.SessionNotFound) {
		return workspace.Result{}, err
	}
	// A checkpoint is always the session's own, whoever asks.
	req.Root, req.Session = sess.Cwd, sessionID
	res, err := runtimes.Serve(ctx, m.cfg.Executors, m.cfg.Workspace, ex.Runtime, ex.Host, req)
	if err == nil && req.ToTurn != "" && res.GitDiff != nil && res.GitDiff.ToCheckpoint == nil {
		// A host older than ToTurn ignored it and compared the working tree.
		return workspace.Result{}, errcode.New(errcode.WorkspaceUnsupported,
			"executor host %q cannot compare two turns' checkpoints: upgrade the host", ex.Host)
	}
	return res, err
}

// checkpointTimeout bounds a turn's checkpoint: a huge directory delays
// the start of its turn at most this long, and the turn goes on without
// one (its recovery report then says the changes are not known).
const checkpointTimeout = 10 * time.Second

// changesTimeout bounds asking an executor what an interrupted turn
// changed.
const changesTimeout = 30 * time.Second

// checkpoint has the session's executor record the workspace as turn
// promptID begins (Config.TurnCheckpoints). It runs before the agent gets
// the prompt, so nothing the turn does is missed; a failure only costs the
// report, never the turn.
//
// With end, it records the turn's end state instead, once the agent
// answered the prompt and before the turn's end is recorded: what a
// rewind or fork to the turn restores.
func (m *Manager) checkpoint(sessionID, promptID string, end bool) {
	if !m.cfg.TurnCheckpoints {
		return
	}
	if ex, err := m.store.GetExecutor(m.life, sessionID); err == nil && ex.Runtime != session.RuntimeStandalone && ex.Runtime != "" {
		return // the host takes it with the prompt (hostproto.PromptPayload.CheckpointTurn)
	}
	ctx, cancel := context.WithTimeout(m.life, checkpointTimeout)
	defer cancel()
	_, err := m.Workspace(ctx, sessionID, workspace.Request{Op: workspace.OpCheckpoint, Session: sessionID, Turn: promptID, End: end})
	if err != nil && !errcode.Is(err, errcode.WorkspaceUnsupported) {
		m.cfg.Logger.Warn("turn checkpoint failed",
			"session", sessionID, "promptId", promptID, "end", end, "code", errcode.CodeOf(err), "err", err)
	}
}

// reportChanges asks the session's executor, in the background, what the
// interrupted turn promptID changed in the workspace since its checkpoint,
// records the answer on the turn (the recovery report's workspace part)
// and tells clients (session.recovery_changed). An executor that cannot
// tell is recorded too, with why. Then the turn may be continued by itself
// (maybeAutoContinue), its report in the continuation prompt.
func (m *Manager) reportChanges(sessionID, promptID string) {
	if !m.cfg.TurnCheckpoints {
		if a, err := m.actor(m.life, sessionID); err == nil {
			a.mb.Post(func() { a.maybeAutoContinue(promptID) })
		}
		return
	}
	m.reporting.Add(1)
	m.spawn(func() {
		posted := false
		defer func() {
			if !posted {
				m.reporting.Add(-1)
			}
		}()
		ctx, cancel := context.WithTimeout(m.life, changesTimeout)
		defer cancel()
		res, err := m.Workspace(ctx, sessionID, workspace.Request{Op: workspace.OpGitDiff, Session: sessionID, Turn: promptID})
		changes := changesOf(res.GitDiff, err)
		if m.life.Err() != nil {
			return // shutting down: the next start looks again
		}
		a, err := m.actor(ctx, sessionID)
		if err != nil {
			return
		}
		posted = a.mb.Post(func() {
			defer m.reporting.Add(-1)
			a.emit(a.draft(promptID, &session.TurnWorkspaceChangesData{Changes: changes}))
			// The actor's turn records them too, as the fold does.
			if t, ok := a.turns[promptID]; ok {
				if b, err := json.Marshal(changes); err == nil {
					t.WorkspaceChanges = b
					a.turns[promptID] = t
				}
			}
			a.pushRecovery()
			a.maybeAutoContinue(promptID)
		})
	})
}

// changesOf is the recovery report's workspace part from an executor's
// diff against a turn's checkpoint.
func changesOf(d *workspace.GitDiff, err error) session.WorkspaceChanges {
	w := session.WorkspaceChanges{Files: []session.ChangedFile{}}
	if err != nil || d == nil {
		w.ErrorCode, w.Error = string(errcode.CodeOf(err)), "the executor could not compare the workspace"
		var de *errcode.Error
		if errors.As(err, &de) {
			w.Error = de.Message
		}
		return w
	}
	for _, f := range d.Files {
		w.Files = append(w.Files, session.ChangedFile{Path: f.Path, OldPath: f.OldPath, Status: f.Status})
	}
	w.HeadMoved, w.HeadAfter = d.HeadMoved, d.Head
	if d.Checkpoint != nil {
		w.HeadBefore = d.Checkpoint.Head
	}
	return w
}
