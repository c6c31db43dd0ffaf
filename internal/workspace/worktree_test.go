package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/workspace"
)

func worktreeOp(t *testing.T, cfg workspace.Config, op workspace.Op, root, branch string, keep bool) (*workspace.Worktree, error) {
	t.Helper()
	r, err := workspace.Serve(context.Background(), workspace.Request{Root: root, Op: op, Session: "s1", Branch: branch, Keep: keep}, cfg)
	return r.Worktree, err
}

func committedRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	git(t, dir, "init", "-q", "-b", "main")
	mustWrite(t, filepath.Join(dir, "sub", "a.txt"), "a\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func TestWorktreeLifecycle(t *testing.T) {
	repo := committedRepo(t)
	cfg := workspace.Config{Worktrees: filepath.Join(t.TempDir(), "worktrees")}
	wt, err := worktreeOp(t, cfg, workspace.OpWorktreeEnsure, filepath.Join(repo, "sub"), "tether/x-1", false)
	if err != nil {
		t.Fatal(err)
	}
	if !wt.Created || wt.Repository != repo || wt.Cwd != filepath.Join(wt.Path, "sub") || wt.Branch != "tether/x-1" {
		t.Fatalf("got %+v, want a new worktree of %s, its cwd in sub", wt, repo)
	}
	// Checked again: there, nothing made.
	again, err := worktreeOp(t, cfg, workspace.OpWorktreeEnsure, repo, "tether/x-1", false)
	if err != nil || again.Created || again.Recreated {
		t.Fatalf("second ensure: got %+v, %v, want the same worktree, untouched", again, err)
	}
	mustWrite(t, filepath.Join(wt.Path, "b.txt"), "b\n")
	git(t, wt.Path, "add", "b.txt")
	git(t, wt.Path, "commit", "-q", "-m", "b")
	if err := os.RemoveAll(wt.Path); err != nil {
		t.Fatal(err)
	}
	re, err := worktreeOp(t, cfg, workspace.OpWorktreeEnsure, repo, "tether/x-1", false)
	if err != nil || !re.Recreated {
		t.Fatalf("ensure after removal: got %+v, %v, want recreated", re, err)
	}
	if _, err := os.Stat(filepath.Join(re.Path, "b.txt")); err != nil {
		t.Errorf("the recreated worktree lacks the branch's commit: %v", err)
	}
	// Dirty: kept; clean: removed; the branch stays.
	mustWrite(t, filepath.Join(re.Path, "draft.txt"), "d\n")
	kept, err := worktreeOp(t, cfg, workspace.OpWorktreeRelease, repo, "tether/x-1", false)
	if err != nil || kept.Removed || kept.Changed != 1 {
		t.Fatalf("release dirty: got %+v, %v, want kept with 1 change", kept, err)
	}
	if err := os.Remove(filepath.Join(re.Path, "draft.txt")); err != nil {
		t.Fatal(err)
	}
	if k, err := worktreeOp(t, cfg, workspace.OpWorktreeRelease, repo, "tether/x-1", true); err != nil || k.Removed {
		t.Fatalf("release clean with keep: got %+v, %v, want kept", k, err)
	}
	gone, err := worktreeOp(t, cfg, workspace.OpWorktreeRelease, repo, "tether/x-1", false)
	if err != nil || !gone.Removed {
		t.Fatalf("release clean: got %+v, %v, want removed", gone, err)
	}
	if _, err := os.Stat(re.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
	if b := git(t, repo, "branch", "--list", "tether/x-1"); !strings.Contains(b, "tether/x-1") {
		t.Errorf("the branch is gone: %q", b)
	}
}

func TestWorktreeRefused(t *testing.T) {
	repo := committedRepo(t)
	cfg := workspace.Config{Worktrees: filepath.Join(t.TempDir(), "worktrees")}
	// Something else at the worktree's path is never replaced.
	mustWrite(t, filepath.Join(cfg.Worktrees, "s1", "precious.txt"), "mine\n")
	empty := t.TempDir()
	git(t, empty, "init", "-q")
	cases := []struct {
		name   string
		cfg    workspace.Config
		root   string
		branch string
		want   errcode.Code
	}{
		{"not the worktree at its path", cfg, repo, "tether/ok", errcode.WorkspaceWorktreeInvalid},
		{"bad branch", workspace.Config{Worktrees: t.TempDir()}, repo, "-x", errcode.InvalidRequest},
		{"branch git refuses", workspace.Config{Worktrees: t.TempDir()}, repo, "a..b", errcode.InvalidRequest},
		{"not a repository", workspace.Config{Worktrees: t.TempDir()}, t.TempDir(), "tether/ok", errcode.WorkspaceNotRepository},
		{"no commit", workspace.Config{Worktrees: t.TempDir()}, empty, "tether/ok", errcode.WorkspaceRevisionNotFound},
		{"no worktrees dir", workspace.Config{}, repo, "tether/ok", errcode.WorkspaceUnsupported},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := worktreeOp(t, c.cfg, workspace.OpWorktreeEnsure, c.root, c.branch, false)
			if !errcode.Is(err, c.want) {
				t.Errorf("got %v, want %s", err, c.want)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(cfg.Worktrees, "s1", "precious.txt")); err != nil || string(b) != "mine\n" {
		t.Errorf("what was at the worktree's path: got %q, %v, want it untouched", b, err)
	}
}
