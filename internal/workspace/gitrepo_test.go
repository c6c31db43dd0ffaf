package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/workspace"
)

// TestRepositoryRule: git status is served for the repositories git
// records at a session's directory (its own .git directory, one above it,
// a linked worktree, a submodule) and refused with
// workspace_repository_refused for a .git that leads elsewhere (a
// symlink, a gitfile naming another repository, a work tree moved by
// configuration).
func TestRepositoryRule(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	commit := func(dir, file string) {
		t.Helper()
		mustWrite(t, filepath.Join(dir, file), file+"\n")
		git(t, dir, "add", ".")
		git(t, dir, "commit", "-q", "-m", file)
	}
	repo := filepath.Join(root, "repo")
	if err := os.MkdirAll(filepath.Join(repo, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "init", "-q", "-b", "main")
	commit(repo, "a.txt")
	git(t, repo, "worktree", "add", "-q", "-b", "other", filepath.Join(root, "linked"))

	lib := filepath.Join(root, "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, lib, "init", "-q", "-b", "main")
	commit(lib, "lib.txt")
	super := filepath.Join(root, "super")
	if err := os.MkdirAll(super, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, super, "init", "-q", "-b", "main")
	commit(super, "s.txt")
	git(t, super, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "mod")
	git(t, super, "commit", "-q", "-m", "mod")

	symlinked := filepath.Join(root, "symlinked")
	gitfile := filepath.Join(root, "gitfile")
	moved := filepath.Join(root, "moved")
	for _, d := range []string{symlinked, gitfile, moved} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(repo, ".git"), filepath.Join(symlinked, ".git")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(gitfile, ".git"), "gitdir: "+filepath.Join(repo, ".git")+"\n")
	// Checkouts of a separate git dir: one that records the checkout as
	// its work tree, one that does not.
	for _, name := range []string{"separate", "separate-unrecorded"} {
		git(t, root, "init", "-q", "-b", "main", "--separate-git-dir", filepath.Join(root, name+".git"), name)
		commit(filepath.Join(root, name), name+".txt")
	}
	git(t, root, "--git-dir", filepath.Join(root, "separate.git"), "config", "core.worktree", filepath.Join(root, "separate"))
	// A repository of its own whose configuration moves its work tree to
	// the directory above it.
	git(t, moved, "init", "-q", "-b", "main")
	git(t, moved, "config", "core.worktree", root)

	for _, c := range []struct {
		name, dir string
		refused   bool
	}{
		{"its own .git directory", repo, false},
		{"a subdirectory", filepath.Join(repo, "sub"), false},
		{"a linked worktree", filepath.Join(root, "linked"), false},
		{"a submodule", filepath.Join(super, "mod"), false},
		{"a separate git dir that records the checkout", filepath.Join(root, "separate"), false},
		{"a .git symlink", symlinked, true},
		{"a separate git dir that does not record the checkout", filepath.Join(root, "separate-unrecorded"), true},
		{"a gitfile naming another repository", gitfile, true},
		{"a work tree moved by configuration", moved, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := workspace.Serve(context.Background(), workspace.Request{Root: c.dir, Op: workspace.OpGitStatus}, workspace.Config{})
			switch {
			case c.refused && !errcode.Is(err, errcode.WorkspaceRepositoryRefused):
				t.Errorf("got %v, %v, want workspace_repository_refused", res.GitStatus, err)
			case !c.refused && (err != nil || res.GitStatus.Head == ""):
				t.Errorf("got %v, %v, want the status of its repository", res.GitStatus, err)
			}
		})
	}
}
