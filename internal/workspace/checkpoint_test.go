package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/workspace"
)

// checkpointCfg is an executor's configuration with its checkpoints in a
// temp dir.
func checkpointCfg(t *testing.T) workspace.Config {
	t.Helper()
	return workspace.Config{Checkpoints: filepath.Join(t.TempDir(), "checkpoints")}
}

func takeCheckpoint(t *testing.T, cfg workspace.Config, root, turn string) *workspace.Checkpoint {
	t.Helper()
	r, err := workspace.Serve(context.Background(), workspace.Request{Root: root, Op: workspace.OpCheckpoint, Session: "s1", Turn: turn}, cfg)
	if err != nil {
		t.Fatalf("checkpoint %s: %v", turn, err)
	}
	return r.Checkpoint
}

func turnDiff(t *testing.T, cfg workspace.Config, root, turn, path string) *workspace.GitDiff {
	t.Helper()
	r, err := workspace.Serve(context.Background(), workspace.Request{Root: root, Op: workspace.OpGitDiff, Session: "s1", Turn: turn, Path: path, Patch: true}, cfg)
	if err != nil {
		t.Fatalf("diff against %s: %v", turn, err)
	}
	return r.GitDiff
}

// changed is a diff's files as path → status.
func changed(d *workspace.GitDiff) map[string]string {
	m := map[string]string{}
	for _, f := range d.Files {
		m[f.Path] = f.Status
	}
	return m
}

func wantChanged(t *testing.T, d *workspace.GitDiff, want map[string]string) {
	t.Helper()
	got := changed(d)
	if len(got) != len(want) {
		t.Errorf("got changed files %v, want %v", got, want)
		return
	}
	for p, s := range want {
		if got[p] != s {
			t.Errorf("%s: got %q, want %q (all: %v)", p, got[p], s, got)
		}
	}
}

// A directory that is no repository has checkpoints too: the report
// lists what the turn added, changed and removed, and nothing else.
func TestCheckpointPlainDirectory(t *testing.T) {
	cfg := checkpointCfg(t)
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "same.txt"), "same\n")
	mustWrite(t, filepath.Join(dir, "edit.txt"), "before\n")
	mustWrite(t, filepath.Join(dir, "gone.txt"), "bye\n")
	cp := takeCheckpoint(t, cfg, dir, "turn-1")
	if cp.Head != "" || len(cp.Tree) != 40 || cp.At.IsZero() {
		t.Fatalf("got checkpoint %+v, want a tree, a time and no HEAD", cp)
	}
	mustWrite(t, filepath.Join(dir, "edit.txt"), "after\n")
	mustWrite(t, filepath.Join(dir, "sub", "new.txt"), "new\n")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	d := turnDiff(t, cfg, dir, "turn-1", "")
	wantChanged(t, d, map[string]string{"edit.txt": "modified", "sub/new.txt": "added", "gone.txt": "deleted"})
	if d.HeadMoved || d.Against != "turn:turn-1" || d.Checkpoint == nil || d.Checkpoint.Tree != cp.Tree {
		t.Errorf("got against %q headMoved %v checkpoint %+v, want turn:turn-1, false, %+v", d.Against, d.HeadMoved, d.Checkpoint, cp)
	}
	if !strings.Contains(d.Patch, "\n+after\n") {
		t.Errorf("patch lacks the edit:\n%s", d.Patch)
	}
	// Under a path: only what changed there.
	wantChanged(t, turnDiff(t, cfg, dir, "turn-1", "sub"), map[string]string{"sub/new.txt": "added"})
	// A later turn's checkpoint starts from there.
	takeCheckpoint(t, cfg, dir, "turn-2")
	wantChanged(t, turnDiff(t, cfg, dir, "turn-2", ""), map[string]string{})
}

// Two turns' checkpoints compared: what one turn changed (up to the start
// of the next), whatever happened in the directory since.
func TestCheckpointToTurn(t *testing.T) {
	cfg := checkpointCfg(t)
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "a.txt"), "a\n")
	takeCheckpoint(t, cfg, dir, "t1")
	mustWrite(t, filepath.Join(dir, "a.txt"), "a, edited by t1\n")
	mustWrite(t, filepath.Join(dir, "t1.txt"), "made by t1\n")
	takeCheckpoint(t, cfg, dir, "t2")
	mustWrite(t, filepath.Join(dir, "t2.txt"), "made by t2\n")
	diff := func(req workspace.Request) (*workspace.GitDiff, error) {
		req.Root, req.Op, req.Session = dir, workspace.OpGitDiff, "s1"
		r, err := workspace.Serve(context.Background(), req, cfg)
		return r.GitDiff, err
	}
	cases := []struct {
		name     string
		req      workspace.Request
		want     map[string]string
		wantCode errcode.Code
	}{
		{"turn 1 alone", workspace.Request{Turn: "t1", ToTurn: "t2"}, map[string]string{"a.txt": "modified", "t1.txt": "added"}, ""},
		{"turn 1 until now", workspace.Request{Turn: "t1"}, map[string]string{"a.txt": "modified", "t1.txt": "added", "t2.txt": "added"}, ""},
		{"turn 2 until now", workspace.Request{Turn: "t2"}, map[string]string{"t2.txt": "added"}, ""},
		{"backwards", workspace.Request{Turn: "t2", ToTurn: "t1"}, map[string]string{"a.txt": "modified", "t1.txt": "deleted"}, ""},
		{"unknown later turn", workspace.Request{Turn: "t1", ToTurn: "t9"}, nil, errcode.WorkspaceCheckpointNotFound},
		{"toTurn without turn", workspace.Request{ToTurn: "t2"}, nil, errcode.InvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := diff(tc.req)
			if tc.wantCode != "" {
				if !errcode.Is(err, tc.wantCode) {
					t.Fatalf("got %v, want %s", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantChanged(t, d, tc.want)
			if (d.ToCheckpoint != nil) != (tc.req.ToTurn != "") || (d.ToCheckpoint != nil && d.ToCheckpoint.Turn != tc.req.ToTurn) {
				t.Errorf("got toCheckpoint %+v, want the checkpoint of %q", d.ToCheckpoint, tc.req.ToTurn)
			}
		})
	}
}

// In a repository a checkpoint leaves the user's index, refs, stash and
// objects as they were, honours .gitignore, and sees HEAD move.
func TestCheckpointRepositoryUntouched(t *testing.T) {
	cfg := checkpointCfg(t)
	dir := gitRepo(t)
	git(t, dir, "stash", "push", "-q", "--", "keep.txt") // a stash entry to keep
	mustWrite(t, filepath.Join(dir, "keep.txt"), "one\ntwo\nthree\n")
	state := func() []string {
		t.Helper()
		index, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		return []string{git(t, dir, "for-each-ref"), git(t, dir, "stash", "list"), git(t, dir, "count-objects"), string(index)}
	}
	before := state()
	cp := takeCheckpoint(t, cfg, dir, "t1")
	if after := state(); !slices.Equal(before, after) {
		t.Errorf("the checkpoint changed the user's repository:\nbefore %q\nafter  %q", before[:3], after[:3])
	}
	if cp.Head != git(t, dir, "rev-parse", "HEAD") {
		t.Errorf("got checkpoint head %q, want HEAD", cp.Head)
	}
	mustWrite(t, filepath.Join(dir, "agent.txt"), "x\n")
	mustWrite(t, filepath.Join(dir, "trace.log"), "ignored\n")
	d := turnDiff(t, cfg, dir, "t1", "")
	wantChanged(t, d, map[string]string{"agent.txt": "added"})
	if d.HeadMoved {
		t.Error("got headMoved, want HEAD where it was")
	}
	git(t, dir, "add", "agent.txt")
	git(t, dir, "commit", "-q", "-m", "agent's commit")
	d = turnDiff(t, cfg, dir, "t1", "")
	if !d.HeadMoved || d.Head != git(t, dir, "rev-parse", "HEAD") || d.Checkpoint.Head != cp.Head {
		t.Errorf("got head %q moved %v (checkpoint %q), want the new commit, moved", d.Head, d.HeadMoved, d.Checkpoint.Head)
	}
	wantChanged(t, d, map[string]string{"agent.txt": "added"})
}

// A turn's start retried (after a daemon restart) keeps its first
// checkpoint: what the agent did meanwhile stays in the report.
func TestCheckpointOncePerTurn(t *testing.T) {
	cfg := checkpointCfg(t)
	dir := t.TempDir()
	first := takeCheckpoint(t, cfg, dir, "t1")
	mustWrite(t, filepath.Join(dir, "a.txt"), "a\n")
	again := takeCheckpoint(t, cfg, dir, "t1")
	if again.Tree != first.Tree {
		t.Errorf("got tree %s on the retry, want the first %s", again.Tree, first.Tree)
	}
	wantChanged(t, turnDiff(t, cfg, dir, "t1", ""), map[string]string{"a.txt": "added"})
}

func TestCheckpointRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := checkpointCfg(t)
	takeCheckpoint(t, cfg, dir, "known")
	cases := []struct {
		name string
		cfg  workspace.Config
		req  workspace.Request
		want errcode.Code
	}{
		{"no checkpoint dir", workspace.Config{}, workspace.Request{Op: workspace.OpCheckpoint, Session: "s1", Turn: "t"}, errcode.WorkspaceUnsupported},
		{"turn with a slash", cfg, workspace.Request{Op: workspace.OpCheckpoint, Session: "s1", Turn: "a/b"}, errcode.InvalidRequest},
		{"session with dots", cfg, workspace.Request{Op: workspace.OpCheckpoint, Session: "../x", Turn: "t"}, errcode.InvalidRequest},
		{"empty session", cfg, workspace.Request{Op: workspace.OpCheckpoint, Turn: "t"}, errcode.InvalidRequest},
		{"unknown turn", cfg, workspace.Request{Op: workspace.OpGitDiff, Session: "s1", Turn: "never"}, errcode.WorkspaceCheckpointNotFound},
		{"unknown session", cfg, workspace.Request{Op: workspace.OpGitDiff, Session: "s2", Turn: "known"}, errcode.WorkspaceCheckpointNotFound},
		{"turn and commit", cfg, workspace.Request{Op: workspace.OpGitDiff, Session: "s1", Turn: "known", Against: "HEAD"}, errcode.InvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.req.Root = dir
			_, err := workspace.Serve(context.Background(), c.req, c.cfg)
			if !errcode.Is(err, c.want) {
				t.Errorf("got %v, want %s", err, c.want)
			}
		})
	}
}
