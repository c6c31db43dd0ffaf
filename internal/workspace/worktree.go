package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether/tether/internal/errcode"
)

// Session worktrees: a session that asks for isolation works in a git
// worktree of its task's repository, on a branch of its own, in the
// executor's data directory (Config.Worktrees/<session>). The executor
// makes it when the session is created, checks it before every start of
// the agent and makes it again from its branch when it went missing, and
// on close removes it only when nothing in it is uncommitted. The branch
// is never deleted: nothing here ever throws work away.

// The worktree operations.
const (
	// OpWorktreeEnsure makes the session's worktree (Root is a directory
	// of the repository, Branch its branch) or checks the one there.
	OpWorktreeEnsure Op = "worktree_ensure"
	// OpWorktreeRelease removes the session's worktree if it is clean
	// (and Keep is not set); its branch stays.
	OpWorktreeRelease Op = "worktree_release"
)

// Worktree is a session's worktree as its executor found or left it.
type Worktree struct {
	// Repository is the top level of the repository it belongs to.
	Repository string `json:"repository"`
	Path       string `json:"path"`
	Branch     string `json:"branch"`
	// Cwd is the session's directory in it: Path, or the subdirectory of
	// it that Root was of the repository.
	Cwd string `json:"cwd,omitempty"`
	// Created: made now, on a new branch; Recreated: the directory was
	// missing and was made again from its branch, commits and all.
	Created   bool `json:"created,omitempty"`
	Recreated bool `json:"recreated,omitempty"`
	// Removed: the release removed the directory; Changed counts the
	// uncommitted paths that made it keep it instead.
	Removed bool `json:"removed,omitempty"`
	Changed int  `json:"changed,omitempty"`
	// Bare: made without its files (Request.Bare), its index HEAD's.
	Bare bool `json:"bare,omitempty"`
}

// worktreePath is where the session's worktree lives on its executor.
func worktreePath(req Request, cfg Config) (string, error) {
	if cfg.Worktrees == "" {
		return "", errcode.New(errcode.WorkspaceUnsupported, "this executor makes no worktrees")
	}
	if !namePattern.MatchString(req.Session) || strings.Contains(req.Session, ":") {
		return "", errcode.New(errcode.InvalidRequest, "session %q cannot name a worktree", req.Session)
	}
	return filepath.Join(cfg.Worktrees, req.Session), nil
}

// checkBranch refuses what git would not take as a branch name, and
// options.
func checkBranch(ctx context.Context, dir, branch string) error {
	if branch == "" || strings.HasPrefix(branch, "-") {
		return errcode.New(errcode.InvalidRequest, "%q is not a branch name", branch)
	}
	if _, _, err := runGit(ctx, dir, nil, 1<<10, "check-ref-format", "--branch", branch); err != nil {
		return errcode.New(errcode.InvalidRequest, "%q is not a branch name git accepts", branch)
	}
	return nil
}

// ensureWorktree makes or checks the session's worktree.
func ensureWorktree(ctx context.Context, d *sessionDir, req Request, cfg Config) (*Worktree, error) {
	path, err := worktreePath(req, cfg)
	if err != nil {
		return nil, err
	}
	repo, err := repoOf(ctx, d)
	if err != nil {
		return nil, err
	}
	top := repo.top
	prefix, err := gitPrefix(ctx, d.execDir(), nil)
	if err != nil {
		return nil, err
	}
	if err := checkBranch(ctx, top, req.Branch); err != nil {
		return nil, err
	}
	wt := &Worktree{Repository: top, Path: path, Branch: req.Branch, Cwd: filepath.Join(path, filepath.FromSlash(prefix))}
	if _, err := os.Lstat(path); err == nil {
		return wt, checkWorktree(ctx, top, path, req.Branch)
	}
	// Gone (removed by hand, a wiped disk): git still lists it until a
	// prune, and refuses a second worktree on its branch meanwhile.
	if _, _, err := runGit(ctx, top, nil, 1<<12, "worktree", "prune"); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Worktrees, 0o700); err != nil {
		return nil, err
	}
	if _, _, err := runGit(ctx, top, nil, 1<<12, "show-ref", "--verify", "--quiet", "refs/heads/"+req.Branch); err == nil {
		if _, _, err := runGit(ctx, top, nil, 1<<16, "worktree", "add", "--quiet", path, req.Branch); err != nil {
			return nil, worktreeError(err)
		}
		wt.Recreated = true
		return wt, nil
	}
	at := "HEAD"
	if req.At != "" {
		if strings.HasPrefix(req.At, "-") {
			return nil, errcode.New(errcode.InvalidRequest, "%q is not a commit", req.At)
		}
		at = req.At
	}
	if _, _, err := runGit(ctx, top, nil, 1<<10, "rev-parse", "--verify", "--quiet", at+"^{commit}"); err != nil {
		if req.At != "" {
			return nil, errcode.New(errcode.WorkspaceRevisionNotFound, "the repository at %s has no commit %s to branch from", top, req.At).With("revision", req.At)
		}
		return nil, errcode.New(errcode.WorkspaceRevisionNotFound, "the repository at %s has no commit yet: a worktree needs one to branch from", top)
	}
	args := []string{"worktree", "add", "--quiet"}
	if wt.Bare = req.Bare && prefix == ""; wt.Bare {
		args = append(args, "--no-checkout")
	}
	if _, _, err := runGit(ctx, top, nil, 1<<16, append(args, "-b", req.Branch, path, at)...); err != nil {
		return nil, worktreeError(err)
	}
	if wt.Bare {
		// Its index is HEAD's, its files are the fork's to write.
		if _, _, err := runGit(ctx, path, nil, 1<<16, "read-tree", "HEAD"); err != nil {
			return nil, err
		}
	}
	wt.Created = true
	return wt, nil
}

// checkWorktree verifies that path is a worktree of top's repository on
// branch; anything else there is refused, never replaced.
func checkWorktree(ctx context.Context, top, path, branch string) error {
	bad := func(why string) error {
		return errcode.New(errcode.WorkspaceWorktreeInvalid, "%s is not the session's worktree: %s; move it away to have it made again", path, why).With("path", path)
	}
	mine, _, err := runGit(ctx, top, nil, 1<<12, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return err
	}
	theirs, _, err := runGit(ctx, path, nil, 1<<12, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return bad("it is not in the repository")
	}
	if strings.TrimSpace(string(mine)) != strings.TrimSpace(string(theirs)) {
		return bad("it belongs to another repository")
	}
	head, _, err := runGit(ctx, path, nil, 1<<12, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil || strings.TrimSpace(string(head)) != branch {
		return bad("it is not on branch " + branch)
	}
	return nil
}

// releaseWorktree removes the session's worktree if nothing in it is
// uncommitted; its branch always stays.
func releaseWorktree(ctx context.Context, d *sessionDir, req Request, cfg Config) (*Worktree, error) {
	path, err := worktreePath(req, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := repoOf(ctx, d); err != nil {
		return nil, err
	}
	wt := &Worktree{Repository: req.Root, Path: path, Branch: req.Branch}
	if _, err := os.Lstat(path); err != nil {
		wt.Removed = true // gone already
		_, _, _ = runGit(ctx, d.execDir(), nil, 1<<12, "worktree", "prune")
		return wt, nil
	}
	out, _, err := runGit(ctx, path, nil, gitOutputLimit, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	for _, e := range strings.Split(string(out), "\x00") {
		if len(e) > 3 && e[2] == ' ' {
			wt.Changed++
		}
	}
	if wt.Changed > 0 || req.Keep {
		return wt, nil
	}
	if _, _, err := runGit(ctx, d.execDir(), nil, 1<<12, "worktree", "remove", path); err != nil {
		return nil, worktreeError(err)
	}
	wt.Removed = true
	return wt, nil
}

// worktreeError explains a refused `git worktree` command.
func worktreeError(err error) error {
	if _, ok := err.(*errcode.Error); ok {
		return err
	}
	return errcode.Wrap(errcode.WorkspaceWorktreeInvalid, err, "git could not make the worktree: %v", err)
}
