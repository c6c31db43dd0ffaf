package workspace_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/workspace"
)

// gitCmd is git in dir with a fixed identity and no user configuration.
func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	return cmd
}

// git runs git in dir for a test's set-up.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitRepo is a repository with one commit of two files, then one of them
// changed, one deleted, one added to the index and one left untracked.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	mustWrite(t, filepath.Join(dir, "keep.txt"), "one\ntwo\n")
	mustWrite(t, filepath.Join(dir, "gone.txt"), "bye\n")
	mustWrite(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "first commit")
	mustWrite(t, filepath.Join(dir, "keep.txt"), "one\ntwo\nthree\n")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "staged.txt"), "s\n")
	git(t, dir, "add", "staged.txt")
	mustWrite(t, filepath.Join(dir, "sub", "new.txt"), "n1\nn2\n")
	mustWrite(t, filepath.Join(dir, "debug.log"), "ignored\n")
	return dir
}

func serveGit(t *testing.T, req workspace.Request) (workspace.Result, error) {
	t.Helper()
	return workspace.Serve(context.Background(), req, workspace.Config{})
}

func TestGitStatus(t *testing.T) {
	dir := gitRepo(t)
	r, err := serveGit(t, workspace.Request{Root: dir, Op: workspace.OpGitStatus})
	if err != nil {
		t.Fatal(err)
	}
	st := r.GitStatus
	if st.Branch != "main" || st.Detached || len(st.Head) != 40 || st.Prefix != "" {
		t.Errorf("got branch %q head %q detached %v prefix %q, want main at a commit", st.Branch, st.Head, st.Detached, st.Prefix)
	}
	got := map[string]string{}
	for _, e := range st.Entries {
		got[e.Path] = e.Index + e.Worktree
	}
	want := map[string]string{"keep.txt": ".M", "gone.txt": ".D", "staged.txt": "A.", "sub/new.txt": "??"}
	if len(got) != len(want) {
		t.Errorf("got entries %v, want %v", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: got %q, want %q", p, got[p], w)
		}
	}
	// From a subdirectory: paths stay the repository's, the prefix says where.
	r, err = serveGit(t, workspace.Request{Root: filepath.Join(dir, "sub"), Op: workspace.OpGitStatus})
	if err != nil {
		t.Fatal(err)
	}
	if r.GitStatus.Prefix != "sub" || len(r.GitStatus.Entries) != 4 {
		t.Errorf("from sub: got prefix %q and %d entries, want sub and 4", r.GitStatus.Prefix, len(r.GitStatus.Entries))
	}
}

func TestGitDiffLeavesTheRepositoryAlone(t *testing.T) {
	dir := gitRepo(t)
	index, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	refs := git(t, dir, "for-each-ref")
	r, err := serveGit(t, workspace.Request{Root: dir, Op: workspace.OpGitDiff, Patch: true})
	if err != nil {
		t.Fatal(err)
	}
	d := r.GitDiff
	got := map[string]string{}
	for _, f := range d.Files {
		got[f.Path] = f.Status
	}
	want := map[string]string{"keep.txt": "modified", "gone.txt": "deleted", "staged.txt": "added", "sub/new.txt": "added"}
	if len(got) != len(want) {
		t.Errorf("got files %v, want %v (ignored debug.log left out)", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: got %q, want %q", p, got[p], w)
		}
	}
	for _, f := range d.Files {
		if f.Path == "keep.txt" && (f.Additions != 1 || f.Deletions != 0) {
			t.Errorf("keep.txt: got +%d -%d, want +1 -0", f.Additions, f.Deletions)
		}
	}
	if !strings.Contains(d.Patch, "+three") || !strings.Contains(d.Patch, "+n2") || d.PatchTruncated {
		t.Errorf("patch: got %q, want the added lines, whole", d.Patch)
	}
	after, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(index, after) {
		t.Error("the user's index changed")
	}
	if got := git(t, dir, "for-each-ref"); got != refs {
		t.Errorf("refs: got %q, want %q", got, refs)
	}
	if got := git(t, dir, "stash", "list"); got != "" {
		t.Errorf("stash list: got %q, want empty", got)
	}
	if got := git(t, dir, "status", "--porcelain", "--", "sub"); got != "?? sub/" {
		t.Errorf("the untracked file: got status %q, want it still untracked", got)
	}

	// Only one path, and against a snapshot: nothing changed since.
	r, err = serveGit(t, workspace.Request{Root: dir, Op: workspace.OpGitDiff, Path: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GitDiff.Files) != 1 || r.GitDiff.Files[0].Path != "sub/new.txt" || r.GitDiff.Patch != "" {
		t.Errorf("diff of sub: got %+v, want sub/new.txt only, no patch", r.GitDiff)
	}
	tree, err := workspace.Snapshot(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if tree != d.Tree {
		t.Errorf("a second snapshot of the same files: got %s, want %s", tree, d.Tree)
	}
}

func TestGitLog(t *testing.T) {
	dir := gitRepo(t)
	git(t, dir, "commit", "-q", "-m", "second commit")
	r, err := serveGit(t, workspace.Request{Root: dir, Op: workspace.OpGitLog, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.GitLog.Commits; len(c) != 1 || c[0].Subject != "second commit" || c[0].AuthorName != "Ada" || c[0].AuthoredAt.IsZero() {
		t.Errorf("got %+v, want the second commit by Ada", c)
	}
}

func TestGitWithoutCommits(t *testing.T) {
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	mustWrite(t, filepath.Join(dir, "first.txt"), "x\n")
	r, err := serveGit(t, workspace.Request{Root: dir, Op: workspace.OpGitDiff})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GitDiff.Files) != 1 || r.GitDiff.Files[0].Status != "added" {
		t.Errorf("diff: got %+v, want first.txt added", r.GitDiff.Files)
	}
	r, err = serveGit(t, workspace.Request{Root: dir, Op: workspace.OpGitLog})
	if err != nil || len(r.GitLog.Commits) != 0 {
		t.Errorf("log: got %v, %v; want no commits", r.GitLog, err)
	}
}

func TestGitRefusals(t *testing.T) {
	repo := gitRepo(t)
	plain := t.TempDir()
	cases := []struct {
		name string
		req  workspace.Request
		want errcode.Code
	}{
		{"status outside a repository", workspace.Request{Root: plain, Op: workspace.OpGitStatus}, errcode.WorkspaceNotRepository},
		{"diff outside a repository", workspace.Request{Root: plain, Op: workspace.OpGitDiff}, errcode.WorkspaceNotRepository},
		{"log outside a repository", workspace.Request{Root: plain, Op: workspace.OpGitLog}, errcode.WorkspaceNotRepository},
		{"unknown commit", workspace.Request{Root: repo, Op: workspace.OpGitDiff, Against: "no-such-branch"}, errcode.WorkspaceRevisionNotFound},
		{"an option as the commit", workspace.Request{Root: repo, Op: workspace.OpGitDiff, Against: "--output=/tmp/x"}, errcode.InvalidRequest},
		{"a range as the commit", workspace.Request{Root: repo, Op: workspace.OpGitDiff, Against: "HEAD..main"}, errcode.InvalidRequest},
		{"dot dot in the path", workspace.Request{Root: repo, Op: workspace.OpGitDiff, Path: "../x"}, errcode.WorkspacePathInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := serveGit(t, tc.req)
			if got := codeOf(err); got != tc.want {
				t.Errorf("got %v (code %q), want code %q", err, got, tc.want)
			}
		})
	}
}
