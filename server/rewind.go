package server

import (
	"context"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/workspace"
)

// Fork, hand-off and rewind (docs/rewind.md): the request flows are
// sessions.Manager.Fork, Rewind and UndoRewind.

func (h *handlers) ForkSession(ctx context.Context, req ForkSessionRequestObject) (ForkSessionResponseObject, error) {
	var in sessions.ForkInput
	if b := req.Body; b != nil {
		in = sessions.ForkInput{AtTurn: deref(b.AtTurn), AgentProfileID: deref(b.AgentProfileId), Cwd: deref(b.Cwd), Title: deref(b.Title)}
	}
	s, err := h.cfg.Sessions.Fork(ctx, req.Id, in)
	if err != nil {
		return nil, err
	}
	out, err := h.session(ctx, s)
	if err != nil {
		return nil, err
	}
	return ForkSession201JSONResponse(out), nil
}

func (h *handlers) HandoffSession(ctx context.Context, req HandoffSessionRequestObject) (HandoffSessionResponseObject, error) {
	s, err := h.cfg.Sessions.Fork(ctx, req.Id, sessions.ForkInput{AgentProfileID: req.Body.AgentProfileId, Title: deref(req.Body.Title), Handoff: true})
	if err != nil {
		return nil, err
	}
	out, err := h.session(ctx, s)
	if err != nil {
		return nil, err
	}
	return HandoffSession201JSONResponse(out), nil
}

func (h *handlers) RewindSession(ctx context.Context, req RewindSessionRequestObject) (RewindSessionResponseObject, error) {
	res, err := h.cfg.Sessions.Rewind(ctx, req.Id, sessions.RewindInput{ToTurn: req.Body.ToTurn, DryRun: deref(req.Params.DryRun)})
	if err != nil {
		return nil, err
	}
	return RewindSession200JSONResponse(rewindResultOf(res)), nil
}

func (h *handlers) UndoRewind(ctx context.Context, req UndoRewindRequestObject) (UndoRewindResponseObject, error) {
	res, err := h.cfg.Sessions.UndoRewind(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return UndoRewind200JSONResponse(rewindResultOf(res)), nil
}

func rewindResultOf(o sessions.RewindOutcome) RewindResult {
	r := o.Restored
	out := RewindResult{DryRun: r.DryRun, Source: RewindResultSource(r.Source), HeadMoved: ptrIf(r.HeadMoved),
		Files: changedFilesOf(r.Files), UserChanged: r.UserChanged, Rewind: rewindOf(o.Rewind)}
	if out.UserChanged == nil {
		out.UserChanged = []string{}
	}
	return out
}

func changedFilesOf(fs []workspace.GitDiffFile) []ChangedFile {
	out := make([]ChangedFile, 0, len(fs))
	for _, f := range fs {
		out = append(out, ChangedFile{Path: f.Path, OldPath: ptrIf(f.OldPath), Status: ChangedFileStatus(f.Status)})
	}
	return out
}

func rewindOf(r *session.Rewind) *Rewind {
	if r == nil {
		return nil
	}
	out := &Rewind{Id: r.ID, ToPromptId: ptrIf(r.ToPromptID), Undoes: ptrIf(r.Undoes), Rewound: r.Rewound, Turns: r.Turns, At: r.At}
	if out.Rewound == nil {
		out.Rewound = []string{}
	}
	if len(r.Restored) > 0 {
		out.Restored = &r.Restored
	}
	return out
}

func forkOriginOf(o *session.ForkOrigin) *ForkOrigin {
	if o == nil {
		return nil
	}
	return &ForkOrigin{SessionId: o.SessionID, PromptId: o.PromptID, Handoff: ptrIf(o.Handoff)}
}
