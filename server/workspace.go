package server

import (
	"context"

	"github.com/tether/tether/internal/workspace"
)

// The workspace API (internal/workspace): a session's files and git state,
// served by its executor through Sessions.Workspace (sessions.Manager).

func (h *handlers) workspace(ctx context.Context, id string, req workspace.Request) (workspace.Result, error) {
	return h.cfg.Sessions.Workspace(ctx, id, req)
}

func (h *handlers) ListWorkspaceFiles(ctx context.Context, req ListWorkspaceFilesRequestObject) (ListWorkspaceFilesResponseObject, error) {
	res, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpList, Path: deref(req.Params.Path)})
	if err != nil {
		return nil, err
	}
	l := res.Listing
	out := WorkspaceListing{Path: l.Path, Truncated: l.Truncated, Entries: make([]WorkspaceEntry, 0, len(l.Entries))}
	for _, e := range l.Entries {
		out.Entries = append(out.Entries, workspaceEntryOf(e))
	}
	return ListWorkspaceFiles200JSONResponse(out), nil
}

func (h *handlers) ReadWorkspaceFile(ctx context.Context, req ReadWorkspaceFileRequestObject) (ReadWorkspaceFileResponseObject, error) {
	res, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpRead, Path: deref(req.Params.Path),
		Offset: deref(req.Params.Offset), Length: deref(req.Params.Length)})
	if err != nil {
		return nil, err
	}
	f := res.File
	return ReadWorkspaceFile200JSONResponse(WorkspaceFile{Path: f.Path, Size: f.Size, Offset: f.Offset, Length: f.Length,
		Binary: f.Binary, Encoding: WorkspaceFileEncoding(f.Encoding), Content: f.Content, ModifiedAt: f.ModifiedAt, Truncated: f.Truncated}), nil
}

func (h *handlers) StatWorkspacePath(ctx context.Context, req StatWorkspacePathRequestObject) (StatWorkspacePathResponseObject, error) {
	res, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpStat, Path: deref(req.Params.Path)})
	if err != nil {
		return nil, err
	}
	return StatWorkspacePath200JSONResponse(workspaceEntryOf(*res.Entry)), nil
}

func workspaceEntryOf(e workspace.Entry) WorkspaceEntry {
	return WorkspaceEntry{Path: e.Path, Name: e.Name, Type: WorkspaceEntryType(e.Type), Size: e.Size, Mode: e.Mode, ModifiedAt: e.ModifiedAt}
}

func (h *handlers) GetGitStatus(ctx context.Context, req GetGitStatusRequestObject) (GetGitStatusResponseObject, error) {
	res, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpGitStatus})
	if err != nil {
		return nil, err
	}
	st := res.GitStatus
	out := GitStatus{Branch: ptrIf(st.Branch), Head: ptrIf(st.Head), Detached: st.Detached, Upstream: ptrIf(st.Upstream),
		Ahead: st.Ahead, Behind: st.Behind, Prefix: st.Prefix, Entries: make([]GitStatusEntry, 0, len(st.Entries))}
	for _, e := range st.Entries {
		out.Entries = append(out.Entries, GitStatusEntry{Path: e.Path, OrigPath: ptrIf(e.OrigPath), Index: e.Index, Worktree: e.Worktree})
	}
	return GetGitStatus200JSONResponse(out), nil
}

func (h *handlers) GetGitDiff(ctx context.Context, req GetGitDiffRequestObject) (GetGitDiffResponseObject, error) {
	res, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpGitDiff, Path: deref(req.Params.Path),
		Against: deref(req.Params.Against), Turn: deref(req.Params.Turn), ToTurn: deref(req.Params.ToTurn), Patch: deref(req.Params.Patch)})
	if err != nil {
		return nil, err
	}
	d := res.GitDiff
	out := GitDiff{Against: d.Against, Base: d.Base, Tree: d.Tree, Patch: ptrIf(d.Patch), PatchTruncated: d.PatchTruncated,
		Files: make([]GitDiffFile, 0, len(d.Files)), Head: ptrIf(d.Head)}
	if cp := d.Checkpoint; cp != nil {
		out.Checkpoint = checkpointOf(cp)
		out.HeadMoved = &d.HeadMoved
	}
	if cp := d.ToCheckpoint; cp != nil {
		out.ToCheckpoint = checkpointOf(cp)
	}
	for _, f := range d.Files {
		out.Files = append(out.Files, GitDiffFile{Path: f.Path, OldPath: ptrIf(f.OldPath), Status: GitDiffFileStatus(f.Status),
			Additions: f.Additions, Deletions: f.Deletions, Binary: f.Binary})
	}
	return GetGitDiff200JSONResponse(out), nil
}

func (h *handlers) GetGitLog(ctx context.Context, req GetGitLogRequestObject) (GetGitLogResponseObject, error) {
	res, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpGitLog, Limit: deref(req.Params.Limit)})
	if err != nil {
		return nil, err
	}
	out := GitLog{Commits: make([]GitCommit, 0, len(res.GitLog.Commits))}
	for _, c := range res.GitLog.Commits {
		out.Commits = append(out.Commits, GitCommit{Hash: c.Hash, AuthorName: c.AuthorName, AuthorEmail: c.AuthorEmail,
			AuthoredAt: c.AuthoredAt, Subject: c.Subject})
	}
	return GetGitLog200JSONResponse(out), nil
}

func checkpointOf(cp *workspace.Checkpoint) *Checkpoint {
	return &Checkpoint{Turn: cp.Turn, Tree: cp.Tree, Head: ptrIf(cp.Head), At: cp.At}
}
