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
//       `.git`, or a git dir whose own core.worktree names this top level
//       (a submodule's, which git writes so; a --separate-git-dir
//       checkout once told `git config core.worktree`),
//   - and its objects come from nowhere else (gitobjects.go).
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
	if err := linkedOut(d.path, r); err != nil {
		return nil, err
	}
	if err := objectsConfined(d.path, r); err != nil {
		return nil, err
	}
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
		if linkedWorktree(r, dotgit) || namesWorkTree(ctx, d, r) {
			return r, nil
		}
		return nil, refused(d.path, "the gitfile %s leads to %s, which does not record %s as its worktree", dotgit, r.gitDir, r.top)
	}
	return nil, refused(d.path, "%s is neither a directory nor a gitfile", dotgit)
}

// linkedOut refuses a repository whose git directories lead elsewhere
// through symlinks inside them: a real .git directory whose objects, refs,
// config or HEAD are symlinks into another repository (as git-new-workdir
// makes them, or an unpacked archive could) is that other repository for
// git, which reads it and adds a worktree's branch to it. The hooks
// directory may be a link (tetherd runs no hook); below the top level the
// directories git writes refs and packs into are checked too.
func linkedOut(root string, r *repository) error {
	for _, dir := range []string{r.gitDir, r.commonDir} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return refused(root, "its git directory %s cannot be read: %v", dir, err)
		}
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink != 0 && e.Name() != "hooks" {
				return refused(root, "%s is a symlink", filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, sub := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags", "refs/remotes"} {
		p := filepath.Join(r.commonDir, sub)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return refused(root, "%s is a symlink", p)
		}
	}
	return nil
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

// namesWorkTree reports whether r's git dir, a whole repository (no
// commondir leading to another), names r's top level as its work tree in
// its own configuration (core.worktree, relative to the git dir), as a
// submodule's git dir does.
func namesWorkTree(ctx context.Context, d *sessionDir, r *repository) bool {
	if r.commonDir != r.gitDir {
		return false // its objects and refs would be another's
	}
	out, _, err := runGit(ctx, d.execDir(), nil, 1<<12, "config", "--file", filepath.Join(r.gitDir, "config"), "--get", "core.worktree")
	wt := strings.TrimSpace(string(out))
	if err != nil || wt == "" {
		return false
	}
	if !filepath.IsAbs(wt) {
		wt = filepath.Join(r.gitDir, wt)
	}
	return sameFile(wt, r.top)
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
		"tetherd does not run git on the repository of %s: %s (a repository's .git must be a directory at the top of its work tree, or a gitfile whose git dir records that work tree: a linked worktree, a submodule, or one given core.worktree)",
		root, fmt.Sprintf(format, args...)).With("root", root)
}
