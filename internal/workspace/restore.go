package workspace

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// Restoring a turn's end state (rewind and fork): the files of a session's
// directory as one of its turns left them, put back in place (a rewind)
// or written into another directory (a fork's).
//
// A turn's end state is its end checkpoint (refs/tether/ends/, recorded
// when its prompt returns); a turn that has none (it was cut off, or ran
// before end checkpoints existed) ended where the next turn began (that
// turn's checkpoint), and the latest turn, where the files are now. A
// rewind first records the files as they are under refs/tether/safety/,
// named by the rewind, so that it can be undone; an undo restores that.
//
// Only what a checkpoint holds is restored: the files of the directory,
// untracked ones included, ignored ones and .git not. The user's HEAD,
// branches and commits are left as they are (a rewind says whether HEAD
// moved since), and nothing outside the directory is touched.

// OpRestore restores a turn's end state (Request.Restore).
const OpRestore Op = "restore"

// RestoreSpec is what OpRestore restores, and where.
type RestoreSpec struct {
	// Turn is the turn whose end state is restored; NextTurn the turn
	// that started after it (empty when it is the latest), whose
	// checkpoint is Turn's end when Turn has no end checkpoint.
	Turn     string `json:"turn,omitempty"`
	NextTurn string `json:"nextTurn,omitempty"`
	// Safety restores a rewind's safety checkpoint instead (an undo).
	Safety string `json:"safety,omitempty"`
	// Target is the directory to write into (absolute; a fork's): new or
	// empty but for a worktree's .git, unless Replace. Empty restores the
	// session's directory in place.
	Target string `json:"target,omitempty"`
	// Replace lets a restore into Target replace the files there (the
	// fork's own new worktree, checked out because the session's
	// directory is a subdirectory of it).
	Replace bool `json:"replace,omitempty"`
	// SafetyID names the safety checkpoint an in-place restore records
	// first (required in place, unless DryRun).
	SafetyID string `json:"safetyId,omitempty"`
	// LastTurn is the session's latest turn that ended: files changed
	// since its end checkpoint were changed outside any turn, and an
	// in-place restore names those it would change (Restored.UserChanged).
	LastTurn string `json:"lastTurn,omitempty"`
	// DryRun only says what an in-place restore would change.
	DryRun bool `json:"dryRun,omitempty"`
	// Resolve only says where the turn's end comes from: its tree, source
	// and HEAD (what a fork's worktree is made at), reading no file.
	Resolve bool `json:"resolve,omitempty"`
}

// Restore sources: where a restored tree came from.
const (
	SourceEnd     = "end"        // the turn's end checkpoint
	SourceNext    = "next_start" // the next turn's start checkpoint
	SourceCurrent = "current"    // the files as they are (the latest turn)
	SourceSafety  = "safety"     // a rewind's safety checkpoint
)

// Restored is what OpRestore did (or, on a dry run, would do).
type Restored struct {
	// Tree is the restored tree; Source where it came from; Head the
	// user's HEAD recorded with it (empty when unknown or none).
	Tree   string `json:"tree"`
	Source string `json:"source"`
	Head   string `json:"head,omitempty"`
	// HeadMoved: in place, the repository's HEAD now is not Head (commits
	// are never rewound).
	HeadMoved bool `json:"headMoved,omitempty"`
	// Files are the files the restore changes, from the directory's
	// point of view (in place: added means the restore brings it back).
	// A restore into a new directory lists none; Written counts them.
	Files []GitDiffFile `json:"files"`
	// UserChanged are the files of Files that were changed outside any
	// turn (since RestoreSpec.LastTurn's end).
	UserChanged []string `json:"userChanged"`
	// Written counts the files written into a new directory.
	Written int `json:"written,omitempty"`
	// Safety is the safety checkpoint recorded first (in place).
	Safety *Checkpoint `json:"safety,omitempty"`
	DryRun bool        `json:"dryRun,omitempty"`
}

func endRef(turn string) string  { return "refs/tether/ends/" + hex.EncodeToString([]byte(turn)) }
func safetyRef(id string) string { return "refs/tether/safety/" + hex.EncodeToString([]byte(id)) }

// errRefExists: commitSnapshot was to record a checkpoint once, and one
// is there.
var errRefExists = errors.New("workspace: the checkpoint exists")

// commitSnapshot records tree as a commit under ref, its message naming
// what it is (checkpointMeta), and returns the checkpoint. With once, a
// checkpoint already at ref stays and errRefExists says so.
func (s shadow) commitSnapshot(ctx context.Context, ref, name, tree, head string, once bool) (*Checkpoint, error) {
	msg, _ := json.Marshal(checkpointMeta{Turn: name, Head: head})
	now := time.Now().UTC().Truncate(time.Second)
	stamp := now.Format(time.RFC3339)
	env := append(s.env(), "GIT_AUTHOR_NAME=tether", "GIT_AUTHOR_EMAIL=tether@localhost", "GIT_AUTHOR_DATE="+stamp,
		"GIT_COMMITTER_NAME=tether", "GIT_COMMITTER_EMAIL=tether@localhost", "GIT_COMMITTER_DATE="+stamp)
	out, _, err := s.git(ctx, env, 1<<10, "commit-tree", tree, "-m", string(msg))
	if err != nil {
		return nil, err
	}
	args := []string{"update-ref", ref, strings.TrimSpace(string(out))}
	if once {
		args = append(args, strings.Repeat("0", len(tree))) // only where none is
	}
	if _, _, err := s.git(ctx, nil, 1<<10, args...); err != nil {
		if once {
			if _, _, rerr := s.git(ctx, nil, 1<<10, "rev-parse", "--verify", "--quiet", ref); rerr == nil {
				return nil, errRefExists
			}
		}
		return nil, err
	}
	return &Checkpoint{Turn: name, Tree: tree, Head: head, At: now}, nil
}

// readRef is the checkpoint at ref, or nil when there is none.
func (s shadow) readRef(ctx context.Context, ref, name string) (*Checkpoint, error) {
	cp, err := s.readCommit(ctx, ref, name)
	if errcode.Is(err, errcode.WorkspaceCheckpointNotFound) {
		return nil, nil
	}
	return cp, err
}

// source resolves what spec restores: its tree, where it came from and
// the HEAD recorded with it. current is the tree of the files now.
func (s shadow) source(ctx context.Context, spec RestoreSpec, current func() (string, string, error)) (tree, from, head string, err error) {
	if spec.Safety != "" {
		cp, err := s.readRef(ctx, safetyRef(spec.Safety), spec.Safety)
		if err != nil {
			return "", "", "", err
		}
		if cp == nil {
			return "", "", "", errcode.New(errcode.WorkspaceCheckpointNotFound, "rewind %s has no safety checkpoint on this executor", spec.Safety).With("rewind", spec.Safety)
		}
		return cp.Tree, SourceSafety, cp.Head, nil
	}
	if cp, err := s.readRef(ctx, endRef(spec.Turn), spec.Turn); err != nil || cp != nil {
		if err != nil {
			return "", "", "", err
		}
		return cp.Tree, SourceEnd, cp.Head, nil
	}
	if spec.NextTurn != "" {
		cp, err := s.readRef(ctx, turnRef(spec.NextTurn), spec.NextTurn)
		if err != nil {
			return "", "", "", err
		}
		if cp == nil {
			return "", "", "", errcode.New(errcode.WorkspaceCheckpointNotFound,
				"turn %s has no end checkpoint, nor has the turn after it a checkpoint, on this executor", spec.Turn).With("turn", spec.Turn)
		}
		return cp.Tree, SourceNext, cp.Head, nil
	}
	tree, head, err = current()
	return tree, SourceCurrent, head, err
}

// restore performs OpRestore in the session's directory d.
func restore(ctx context.Context, d *sessionDir, req Request, cfg Config) (*Restored, error) {
	if req.Restore == nil {
		return nil, errcode.New(errcode.InvalidRequest, "a restore says what to restore")
	}
	spec := *req.Restore
	if (spec.Turn == "") == (spec.Safety == "") {
		return nil, errcode.New(errcode.InvalidRequest, "a restore names a turn or a rewind's safety checkpoint, one of them")
	}
	for what, v := range map[string]string{"turn": spec.Turn, "nextTurn": spec.NextTurn, "safety": spec.Safety, "safetyId": spec.SafetyID, "lastTurn": spec.LastTurn} {
		if v != "" && !namePattern.MatchString(v) {
			return nil, errcode.New(errcode.InvalidRequest, "%s %q cannot name a checkpoint", what, v).With(what, v)
		}
	}
	name := spec.Turn
	if name == "" {
		name = spec.Safety
	}
	s, unlock, err := openShadow(ctx, d, Request{Session: req.Session, Turn: name}, cfg, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	current := func() (string, string, error) {
		tree, err := s.snapshot(ctx)
		if err != nil {
			return "", "", err
		}
		head, err := userHead(ctx, d)
		return tree, head, err
	}
	if spec.Resolve {
		tree, from, head, err := s.source(ctx, spec, current)
		if err != nil {
			return nil, err
		}
		return &Restored{Tree: tree, Source: from, Head: head, Files: []GitDiffFile{}, UserChanged: []string{}}, nil
	}
	if spec.Target != "" {
		return s.restoreInto(ctx, spec, current)
	}
	if spec.SafetyID == "" && !spec.DryRun {
		return nil, errcode.New(errcode.InvalidRequest, "an in-place restore records a safety checkpoint first: it needs its id")
	}
	// The files now, in the shadow index too: the restore below then
	// writes only what differs and removes what the target lacks.
	now, head, err := current()
	if err != nil {
		return nil, err
	}
	tree, from, cpHead, err := s.source(ctx, spec, func() (string, string, error) { return now, head, nil })
	if err != nil {
		return nil, err
	}
	out := &Restored{Tree: tree, Source: from, Head: cpHead, HeadMoved: head != cpHead, UserChanged: []string{}, DryRun: spec.DryRun}
	dif, err := diffTrees(ctx, s.root, s.env(), "restore", now, tree, ".", false, cfg)
	if err != nil {
		return nil, err
	}
	out.Files = dif.Files
	if out.UserChanged, err = s.userChanged(ctx, spec.LastTurn, now, dif.Files, cfg); err != nil {
		return nil, err
	}
	if spec.DryRun {
		return out, nil
	}
	if out.Safety, err = s.commitSnapshot(ctx, safetyRef(spec.SafetyID), spec.SafetyID, now, head, false); err != nil {
		return nil, err
	}
	if tree != now {
		if _, _, err := s.git(ctx, nil, 1<<16, "read-tree", "-u", "--reset", tree); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// userChanged are the files of files (what a restore changes) that
// changed since lastTurn's end checkpoint, the files now being tree now:
// the user's edits outside any turn.
func (s shadow) userChanged(ctx context.Context, lastTurn, now string, files []GitDiffFile, cfg Config) ([]string, error) {
	out := []string{}
	if lastTurn == "" || len(files) == 0 {
		return out, nil
	}
	end, err := s.readRef(ctx, endRef(lastTurn), lastTurn)
	if err != nil || end == nil || end.Tree == now {
		return out, err
	}
	dif, err := diffTrees(ctx, s.root, s.env(), "user", end.Tree, now, ".", false, cfg)
	if err != nil {
		return nil, err
	}
	touched := map[string]bool{}
	for _, f := range files {
		touched[f.Path] = true
		if f.OldPath != "" {
			touched[f.OldPath] = true
		}
	}
	for _, f := range dif.Files {
		if touched[f.Path] || (f.OldPath != "" && touched[f.OldPath]) {
			out = append(out, f.Path)
		}
	}
	return out, nil
}

// restoreInto writes spec's tree into spec.Target, a new or empty
// directory (a worktree's .git aside), through an index of its own.
func (s shadow) restoreInto(ctx context.Context, spec RestoreSpec, current func() (string, string, error)) (*Restored, error) {
	if !filepath.IsAbs(spec.Target) {
		return nil, errcode.New(errcode.InvalidRequest, "a restore's target must be absolute, got %q", spec.Target)
	}
	if spec.DryRun {
		return nil, errcode.New(errcode.InvalidRequest, "a dry run is of an in-place restore")
	}
	tree, from, head, err := s.source(ctx, spec, current)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.Target, 0o755); err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "cannot make the directory %s: %v", spec.Target, err)
	}
	entries, err := os.ReadDir(spec.Target)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "cannot read the directory %s: %v", spec.Target, err)
	}
	empty := true
	for _, e := range entries {
		if e.Name() != ".git" {
			empty = false
		}
	}
	if !empty && !spec.Replace {
		return nil, errcode.New(errcode.WorkspaceTargetNotEmpty, "%s is not empty: a fork restores its files into a new or empty directory", spec.Target).With("path", spec.Target)
	}
	index, err := os.CreateTemp(s.gitDir, "restore-index-")
	if err != nil {
		return nil, err
	}
	index.Close()
	os.Remove(index.Name()) // git wants no file there, or an index
	defer os.Remove(index.Name())
	env := []string{"GIT_DIR=" + s.gitDir, "GIT_WORK_TREE=.", "GIT_INDEX_FILE=" + index.Name()}
	if !empty {
		// What is there, in the index: the restore then removes what the
		// tree lacks.
		if _, _, err := runGitFiltered(ctx, spec.Target, env, 1<<16, false, "add", "--all", "--ignore-errors", "--", "."); err != nil {
			return nil, err
		}
	}
	// The shadow's own configuration (GIT_DIR): no filter of the
	// repository's to switch off (shadow.git).
	if _, _, err := runGitFiltered(ctx, spec.Target, env, 1<<16, false, "read-tree", "-u", "--reset", tree); err != nil {
		return nil, err
	}
	n, _, err := runGitFiltered(ctx, spec.Target, env, gitOutputLimit, false, "ls-files", "-z")
	if err != nil {
		return nil, err
	}
	return &Restored{Tree: tree, Source: from, Head: head, Files: []GitDiffFile{}, UserChanged: []string{}, Written: strings.Count(string(n), "\x00")}, nil
}
