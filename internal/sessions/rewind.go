package sessions

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/workspace"
)

// Rewinding a session: Manager.Rewind and Manager.UndoRewind, the request
// flows of POST /session/{id}/rewind and …/rewind/undo (docs/rewind.md).
// The session's actor plans the rewind (planRewind, pure) and holds new
// turns back while its executor restores the files (workspace.OpRestore,
// off the actor); then it records session.rewound and retires the agent,
// whose next start opens a fresh ACP session that gets the turns not
// rewound by history injection.

// RewindInput is a rewind: the turn whose end the files go back to.
type RewindInput struct {
	ToTurn string
	// DryRun only says what would change.
	DryRun bool
}

// RewindOutcome is what a rewind did, or would do.
type RewindOutcome struct {
	// Rewind is the recorded rewind (nil on a dry run).
	Rewind *session.Rewind
	// Restored is what the executor changed (or would change).
	Restored workspace.Restored
}

// rewindCmd is a rewind as planRewind takes it.
type rewindCmd struct {
	ToTurn string
	Undo   bool
	DryRun bool
}

// rewindPlan is what a rewind restores and marks.
type rewindPlan struct {
	ID   string
	Spec workspace.RestoreSpec
	// ToPromptID, Undoes, Rewound and Restored are session.rewound's.
	ToPromptID, Undoes string
	Rewound, Restored  []string
	// Turns counts the session's turns.
	Turns int
}

// planRewind decides whether the session may rewind (or undo its last
// rewind) now, and what that restores and marks. turns are the
// session's, in any order; last is its latest rewind (nil: none). It is
// pure: the id of the rewind comes in with the command's caller.
func planRewind(v view, rewinding bool, turns []session.Turn, last *session.Rewind, c rewindCmd, id string) (rewindPlan, error) {
	switch {
	case v.closed():
		return rewindPlan{}, terminalErr(v)
	case rewinding:
		return rewindPlan{}, errcode.New(errcode.RewindInProgress, "a rewind of this session is in progress")
	case v.Running != nil || len(v.Queue) > 0:
		return rewindPlan{}, errcode.New(errcode.RewindRunning, "a turn is running or queued: cancel it or wait for its end, then rewind").
			With("promptId", v.activePromptID())
	case v.Agent == agentStarting:
		return rewindPlan{}, errcode.New(errcode.RewindRunning, "the agent is starting: rewind once it has")
	}
	turns = slices.Clone(turns)
	slices.SortFunc(turns, func(a, b session.Turn) int { return int(a.Seq - b.Seq) })
	p := rewindPlan{ID: id, Turns: len(turns), Rewound: []string{}}
	if c.Undo {
		if last == nil {
			return rewindPlan{}, errcode.New(errcode.RewindNotUndoable, "the session has no rewind to undo")
		}
		if last.Turns != len(turns) {
			return rewindPlan{}, errcode.New(errcode.RewindNotUndoable,
				"a turn was prompted since the last rewind: its files would be lost; rewind to a turn instead").With("rewindId", last.ID)
		}
		p.Undoes, p.Rewound, p.Restored = last.ID, slices.Clone(last.Restored), slices.Clone(last.Rewound)
		if p.Rewound == nil {
			p.Rewound = []string{}
		}
		p.Spec = workspace.RestoreSpec{Safety: last.ID, SafetyID: id}
		return p, nil
	}
	i := slices.IndexFunc(turns, func(t session.Turn) bool { return t.PromptID == c.ToTurn })
	if i < 0 {
		return rewindPlan{}, errcode.New(errcode.TurnNotFound, "the session has no turn %q", c.ToTurn).With("promptId", c.ToTurn)
	}
	to := turns[i]
	if to.Rewound {
		return rewindPlan{}, errcode.New(errcode.InvalidState,
			"turn %s was rewound: undo that rewind, or fork the session from the turn", to.PromptID).With("promptId", to.PromptID)
	}
	if to.StartedAt == nil || !to.State.Terminal() {
		return rewindPlan{}, errcode.New(errcode.InvalidState, "turn %s never ran: its end is no state of the files", to.PromptID).With("promptId", to.PromptID)
	}
	p.ToPromptID = to.PromptID
	p.Spec = workspace.RestoreSpec{Turn: to.PromptID, SafetyID: id, DryRun: c.DryRun}
	for _, t := range turns[i+1:] {
		if p.Spec.NextTurn == "" && t.StartedAt != nil {
			p.Spec.NextTurn = t.PromptID
		}
		if !t.Rewound {
			p.Rewound = append(p.Rewound, t.PromptID)
		}
	}
	// The files as the last change left them: the end of the latest turn
	// that ran, or of the turn the last rewind went back to (an undo's
	// safety point has no turn: nothing is compared).
	if last != nil && last.Turns == len(turns) {
		p.Spec.LastTurn = last.ToPromptID
	} else {
		for _, t := range slices.Backward(turns) {
			if t.StartedAt != nil && !t.Rewound {
				p.Spec.LastTurn = t.PromptID
				break
			}
		}
	}
	return p, nil
}

// Rewind takes the session's files back to the end of in.ToTurn.
func (m *Manager) Rewind(ctx context.Context, sessionID string, in RewindInput) (RewindOutcome, error) {
	return m.rewind(ctx, sessionID, rewindCmd{ToTurn: in.ToTurn, DryRun: in.DryRun})
}

// UndoRewind undoes the session's last rewind (or undo): its files go
// back to its safety checkpoint, the turns it marked are unmarked.
func (m *Manager) UndoRewind(ctx context.Context, sessionID string) (RewindOutcome, error) {
	return m.rewind(ctx, sessionID, rewindCmd{Undo: true})
}

// rewindTimeout bounds the restore on the executor.
const rewindTimeout = 2 * time.Minute

func (m *Manager) rewind(ctx context.Context, sessionID string, c rewindCmd) (RewindOutcome, error) {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return RewindOutcome{}, err
	}
	id := uuid.NewString()
	type begun struct {
		plan rewindPlan
		sess session.Session
		exec session.Executor
	}
	b, err := mailbox.Call(ctx, a.mb, func() (begun, error) {
		turns := make([]session.Turn, 0, len(a.turns))
		for _, t := range a.turns {
			turns = append(turns, t)
		}
		p, err := planRewind(a.view(), a.rewinding, turns, a.sess.LastRewind, c, id)
		if err == nil && !c.DryRun {
			a.rewinding = true // new turns wait for the files
		}
		return begun{p, a.sess, a.exec}, err
	})
	if err != nil {
		return RewindOutcome{}, err
	}
	// From here the restore runs to its end even if the client goes away:
	// the actor holds turns back until it has been told how it went.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rewindTimeout)
	defer cancel()
	spec := b.plan.Spec
	res, err := runtimes.Serve(rctx, m.cfg.Executors, m.cfg.Workspace, b.exec.Runtime, b.exec.Host,
		workspace.Request{Op: workspace.OpRestore, Root: b.sess.Cwd, Session: sessionID, Restore: &spec})
	if err == nil && res.Restored == nil {
		err = errcode.New(errcode.WorkspaceUnsupported, "the session's executor cannot restore checkpoints: upgrade its host")
	}
	if c.DryRun {
		if err != nil {
			return RewindOutcome{}, err
		}
		return RewindOutcome{Restored: *res.Restored}, nil
	}
	var out RewindOutcome
	// Told on a context of its own: one the restore used up would leave
	// the session refusing prompts as rewinding.
	if derr := a.do(context.WithoutCancel(ctx), func() { out = a.rewound(b.plan, res.Restored, err) }); derr != nil {
		return RewindOutcome{}, derr
	}
	if err != nil {
		return RewindOutcome{}, err
	}
	if err := a.sync(rctx); err != nil {
		return RewindOutcome{}, err
	}
	return out, nil
}

// rewound takes a rewind its executor carried out (restored; err when it
// failed, and the files are as they were): turns may run again, and the
// rewind is decided (decideRewound) and said in the transcript.
func (a *actor) rewound(p rewindPlan, restored *workspace.Restored, err error) RewindOutcome {
	a.rewinding = false
	if err != nil {
		a.log.Warn("rewind failed; the files are as they were", "code", errcode.CodeOf(err), "err", err)
		return RewindOutcome{}
	}
	files := make([]session.ChangedFile, 0, len(restored.Files))
	for _, f := range restored.Files {
		files = append(files, session.ChangedFile{Path: f.Path, OldPath: f.OldPath, Status: f.Status})
	}
	if err := a.perform(decide(a.view(), rewoundInput{Plan: p, Files: files, At: time.Now().UTC()}), nil); err != nil {
		return RewindOutcome{}
	}
	text := fmt.Sprintf("Rewound the files to the end of turn %s (%d files changed); %d later turns are marked rewound. Undo with POST /session/%s/rewind/undo.",
		p.ToPromptID, len(files), len(p.Rewound), a.id)
	if p.Undoes != "" {
		text = fmt.Sprintf("Undid rewind %s: the files are back as they were before it (%d files changed).", p.Undoes, len(files))
	}
	a.systemMessage(text)
	a.pushRecovery()
	return RewindOutcome{Rewind: a.sess.LastRewind, Restored: *restored}
}

// decideRewound records a rewind its executor carried out: session.rewound
// (the turns it marks and unmarks), the executor without its ACP session,
// and the agent, if one runs, retired: the agent's own session remembers
// the rewound turns, so the next turn starts a fresh one, briefed with the
// turns left (history injection).
func decideRewound(v view, in rewoundInput) decision {
	p := in.Plan
	ex := v.Executor
	ex.ResumeToken = ""
	effs := []effect{
		record("", &session.SessionRewoundData{RewindID: p.ID, ToPromptID: p.ToPromptID, Undoes: p.Undoes, Rewound: p.Rewound,
			Restored: p.Restored, Files: in.Files, Turns: p.Turns, At: in.At}),
		record("", session.ExecutorStatusOf(ex)),
	}
	if v.Connected {
		effs = append(effs, effStopAgent{How: stopRetire, Why: "agent stopped: the session was rewound; its next turn starts a fresh context"})
	}
	return accept(effs...)
}
