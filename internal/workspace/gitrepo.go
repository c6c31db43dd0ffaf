package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether/tether/internal/errcode"
)

// Which repository git may read for a session. git finds a directory's
// repository by walking up to the first `.git`, and follows that `.git`
// wherever it leads: a symlink, or a gitfile ("gitdir: PATH"), can put any
// repository of the machine behind a workspace, and a repository's own
// configuration can move its work tree (core.worktree). tetherd runs git
// on the repository git finds from the session's directory only when
//
//   - its work tree's top level is the session's directory or a directory
//     above it (a session may work in a subdirectory of a repository), and
//   - the `.git` at that top level is no symlink, and is either
//     - a directory, which is the repository itself (git dir and common
//       dir both that directory), or
//     - a gitfile whose repository links back to it as git records it: a
//       linked worktree (`git worktree add`, tetherd's own session
//       worktrees included), whose `<git dir>/gitdir` names this very
//       `.git`, or a submodule, whose git dir lies in the `.git/modules`
//       of the superproject that has it.
//
// Anything else is refused with errcode.WorkspaceRepositoryRefused, before
// git reads or writes anything of it.

// repository is the repository of a session's directory, as checked.
type repository struct {
	// top is its work tree's top level; gitDir and commonDir its git
	// directories (the same but in a linked worktree).
	top, gitDir, commonDir string
}

// repoOf finds and checks the repository of d.
func repoOf(ctx context.Context, d *sessionDir) (*repository, error) {
	out, _, err := runGit(ctx, d.execDir(), nil, 1<<14, "rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 3 {
		return nil, refused(d.path, "git names its directories in a way tetherd cannot read (%q)", out)
	}
	r := &repository{top: filepath.Clean(lines[0]), gitDir: filepath.Clean(lines[1]), commonDir: filepath.Clean(lines[2])}
	if !within(r.top, d.path) {
		return nil, refused(d.path, "its work tree is %s, which does not hold the session's directory", r.top)
	}
	dotgit := filepath.Join(r.top, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return nil, refused(d.path, "its work tree %s has no .git of its own (git dir %s)", r.top, r.gitDir)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, refused(d.path, "%s is a symlink", dotgit)
	case fi.IsDir():
		if r.gitDir != dotgit || r.commonDir != dotgit {
			return nil, refused(d.path, "%s leads to the repository at %s", dotgit, r.commonDir)
		}
		return r, nil
	case fi.Mode().IsRegular():
		if linkedWorktree(r, dotgit) || submoduleOf(ctx, d, r) {
			return r, nil
		}
		return nil, refused(d.path, "the gitfile %s leads to %s, which is neither a worktree nor a submodule recorded there", dotgit, r.gitDir)
	}
	return nil, refused(d.path, "%s is neither a directory nor a gitfile", dotgit)
}

// linkedWorktree reports whether r is a linked worktree whose repository
// records it at dotgit: its git dir is <common dir>/worktrees/<name>, and
// that directory's gitdir file names dotgit, as `git worktree add`
// writes it.
func linkedWorktree(r *repository, dotgit string) bool {
	if filepath.Dir(r.gitDir) != filepath.Join(r.commonDir, "worktrees") {
		return false
	}
	b, err := os.ReadFile(filepath.Join(r.gitDir, "gitdir"))
	if err != nil {
		return false
	}
	back := strings.TrimSpace(string(b))
	if !filepath.IsAbs(back) {
		back = filepath.Join(r.gitDir, back)
	}
	return sameFile(back, dotgit)
}

// submoduleOf reports whether r is a submodule of the repository above
// it, its git dir in that superproject's own .git/modules.
func submoduleOf(ctx context.Context, d *sessionDir, r *repository) bool {
	out, _, err := runGit(ctx, d.execDir(), nil, 1<<12, "rev-parse", "--show-superproject-working-tree")
	super := strings.TrimSpace(string(out))
	if err != nil || super == "" || !filepath.IsAbs(super) {
		return false
	}
	modules := filepath.Join(filepath.Clean(super), ".git")
	if fi, err := os.Lstat(modules); err != nil || !fi.IsDir() {
		return false
	}
	return within(filepath.Join(modules, "modules"), r.gitDir) && r.gitDir == r.commonDir
}

func sameFile(a, b string) bool {
	x, err := os.Stat(a)
	if err != nil {
		return false
	}
	y, err := os.Stat(b)
	return err == nil && os.SameFile(x, y)
}

func refused(root, format string, args ...any) error {
	return errcode.New(errcode.WorkspaceRepositoryRefused,
		"tetherd does not run git on the repository of %s: %s (a repository's .git must be a directory at the top of its work tree, or a worktree or submodule that git records there)",
		root, fmt.Sprintf(format, args...)).With("root", root)
}
