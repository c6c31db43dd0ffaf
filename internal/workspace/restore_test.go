package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/internal/testbin"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/workspace"
)

func endCheckpoint(t *testing.T, cfg workspace.Config, root, turn string) *workspace.Checkpoint {
	t.Helper()
	r, err := workspace.Serve(context.Background(), workspace.Request{Root: root, Op: workspace.OpCheckpoint, Session: "s1", Turn: turn, End: true}, cfg)
	if err != nil {
		t.Fatalf("end checkpoint %s: %v", turn, err)
	}
	return r.Checkpoint
}

func restoreOp(cfg workspace.Config, root string, spec workspace.RestoreSpec) (*workspace.Restored, error) {
	r, err := workspace.Serve(context.Background(), workspace.Request{Root: root, Op: workspace.OpRestore, Session: "s1", Restore: &spec}, cfg)
	return r.Restored, err
}

func paths(fs []workspace.GitDiffFile) map[string]string {
	m := map[string]string{}
	for _, f := range fs {
		m[f.Path] = f.Status
	}
	return m
}

// Three turns change a plain directory; the user edits it after the
// last. A rewind to the end of turn 1 names the user's edit, restores
// turn 1's files byte-exact (ignored files untouched), and its undo
// gives back the files exactly as they were before the rewind.
func TestRewindAndUndoInPlace(t *testing.T) {
	cfg := checkpointCfg(t)
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	mustWrite(t, filepath.Join(dir, "a.txt"), "a0\n")
	takeCheckpoint(t, cfg, dir, "t1")
	mustWrite(t, filepath.Join(dir, "a.txt"), "a1\n")
	mustWrite(t, filepath.Join(dir, "deep", "b.txt"), "b1\n")
	endCheckpoint(t, cfg, dir, "t1")
	afterT1 := testbin.TreeFiles(t, dir)

	takeCheckpoint(t, cfg, dir, "t2")
	mustWrite(t, filepath.Join(dir, "a.txt"), "a2\n")
	if err := os.RemoveAll(filepath.Join(dir, "deep")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "c.bin"), "c\x00binary")
	endCheckpoint(t, cfg, dir, "t2")
	mustWrite(t, filepath.Join(dir, "user.txt"), "mine\n")     // outside any turn
	mustWrite(t, filepath.Join(dir, "debug.log"), "ignored\n") // ignored: never touched
	before := testbin.TreeFiles(t, dir)

	dry, err := restoreOp(cfg, dir, workspace.RestoreSpec{Turn: "t1", LastTurn: "t2", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(dry.Files), map[string]string{"a.txt": "modified", "deep/b.txt": "added", "c.bin": "deleted", "user.txt": "deleted"}; !mapsEqual(got, want) {
		t.Errorf("dry run files: got %v, want %v", got, want)
	}
	if !slices.Equal(dry.UserChanged, []string{"user.txt"}) {
		t.Errorf("dry run: got user changes %v, want [user.txt]", dry.UserChanged)
	}
	if dry.Source != workspace.SourceEnd || dry.Safety != nil {
		t.Errorf("dry run: got source %q safety %v, want end and none", dry.Source, dry.Safety)
	}
	testbin.SameTree(t, "after the dry run", testbin.TreeFiles(t, dir), before)

	if _, err := restoreOp(cfg, dir, workspace.RestoreSpec{Turn: "t1"}); !errcode.Is(err, errcode.InvalidRequest) {
		t.Errorf("restore without a safety id: got %v, want invalid_request", err)
	}
	res, err := restoreOp(cfg, dir, workspace.RestoreSpec{Turn: "t1", LastTurn: "t2", SafetyID: "rw-1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Safety == nil || res.Safety.Tree == "" {
		t.Fatalf("got no safety checkpoint: %+v", res)
	}
	want := map[string]string{}
	for p, c := range afterT1 {
		want[p] = c
	}
	want["debug.log"] = "ignored\n"
	testbin.SameTree(t, "after the rewind", testbin.TreeFiles(t, dir), want)

	undo, err := restoreOp(cfg, dir, workspace.RestoreSpec{Safety: "rw-1", SafetyID: "rw-2"})
	if err != nil {
		t.Fatal(err)
	}
	if undo.Source != workspace.SourceSafety {
		t.Errorf("undo: got source %q, want safety", undo.Source)
	}
	testbin.SameTree(t, "after the undo", testbin.TreeFiles(t, dir), before)
	// The undo is itself undoable.
	if _, err := restoreOp(cfg, dir, workspace.RestoreSpec{Safety: "rw-2", SafetyID: "rw-3"}); err != nil {
		t.Fatal(err)
	}
	testbin.SameTree(t, "after undoing the undo", testbin.TreeFiles(t, dir), want)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A turn with no end checkpoint ended where the next turn began; the
// latest turn without one ended where the files are now.
func TestRestoreSources(t *testing.T) {
	cfg := checkpointCfg(t)
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "a.txt"), "0\n")
	takeCheckpoint(t, cfg, dir, "t1")
	mustWrite(t, filepath.Join(dir, "a.txt"), "1\n")
	takeCheckpoint(t, cfg, dir, "t2") // t1 was cut off: no end
	mustWrite(t, filepath.Join(dir, "a.txt"), "2\n")

	for _, tc := range []struct {
		name       string
		spec       workspace.RestoreSpec
		wantSource string
		wantA      string
		wantCode   errcode.Code
	}{
		{"next turn's start", workspace.RestoreSpec{Turn: "t1", NextTurn: "t2"}, workspace.SourceNext, "1\n", ""},
		{"the latest: the files now", workspace.RestoreSpec{Turn: "t2"}, workspace.SourceCurrent, "2\n", ""},
		{"no checkpoint anywhere", workspace.RestoreSpec{Turn: "t1", NextTurn: "t9"}, "", "", errcode.WorkspaceCheckpointNotFound},
		{"unknown safety", workspace.RestoreSpec{Safety: "nope"}, "", "", errcode.WorkspaceCheckpointNotFound},
		{"both a turn and a safety", workspace.RestoreSpec{Turn: "t1", Safety: "x"}, "", "", errcode.InvalidRequest},
		{"a bad name", workspace.RestoreSpec{Turn: "../x"}, "", "", errcode.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			where := tc.spec
			where.Resolve = true
			resolved, rerr := restoreOp(cfg, dir, where)
			target := filepath.Join(t.TempDir(), "fork")
			tc.spec.Target = target
			res, err := restoreOp(cfg, dir, tc.spec)
			if tc.wantCode == "" && err == nil && (rerr != nil || resolved.Source != tc.wantSource || resolved.Tree != res.Tree) {
				t.Errorf("resolve: got %+v, %v, want the restore's source %q and tree", resolved, rerr, tc.wantSource)
			}
			if tc.wantCode != "" {
				if !errcode.Is(err, tc.wantCode) {
					t.Fatalf("got %v, want %s", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Source != tc.wantSource || res.Written != 1 {
				t.Errorf("got source %q written %d, want %q and 1", res.Source, res.Written, tc.wantSource)
			}
			testbin.SameTree(t, "fork", testbin.TreeFiles(t, target), map[string]string{"a.txt": tc.wantA})
		})
	}
}

// A fork's files go into a new or empty directory; one with files is
// refused unless told to replace them (its own new worktree).
func TestRestoreIntoDirectory(t *testing.T) {
	cfg := checkpointCfg(t)
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "a.txt"), "a\n")
	mustWrite(t, filepath.Join(dir, "x", "y.txt"), "y\n")
	takeCheckpoint(t, cfg, dir, "t1")
	endCheckpoint(t, cfg, dir, "t1")
	want := testbin.TreeFiles(t, dir)

	full := t.TempDir()
	mustWrite(t, filepath.Join(full, "other.txt"), "o\n")
	if _, err := restoreOp(cfg, dir, workspace.RestoreSpec{Turn: "t1", Target: full}); !errcode.Is(err, errcode.WorkspaceTargetNotEmpty) {
		t.Fatalf("into a directory with files: got %v, want %s", err, errcode.WorkspaceTargetNotEmpty)
	}
	if _, err := restoreOp(cfg, dir, workspace.RestoreSpec{Turn: "t1", Target: full, Replace: true}); err != nil {
		t.Fatal(err)
	}
	testbin.SameTree(t, "replaced", testbin.TreeFiles(t, full), want)
	if _, err := restoreOp(cfg, dir, workspace.RestoreSpec{Turn: "t1", Target: "rel"}); !errcode.Is(err, errcode.InvalidRequest) {
		t.Errorf("relative target: got %v, want invalid_request", err)
	}
}

// A fork's worktree is made at the checkpoint's HEAD without its files,
// then the checkpoint is written into it: git sees exactly the turn's
// changes against that commit.
func TestForkIntoBareWorktree(t *testing.T) {
	repo := committedRepo(t)
	cfg := checkpointCfg(t)
	cfg.Worktrees = filepath.Join(t.TempDir(), "worktrees")
	takeCheckpoint(t, cfg, repo, "t1")
	mustWrite(t, filepath.Join(repo, "sub", "a.txt"), "a changed\n")
	mustWrite(t, filepath.Join(repo, "new.txt"), "new\n")
	cp := endCheckpoint(t, cfg, repo, "t1")
	want := testbin.TreeFiles(t, repo)
	git(t, repo, "commit", "-qam", "later work") // HEAD moves on after the turn

	r, err := workspace.Serve(context.Background(), workspace.Request{Root: repo, Op: workspace.OpWorktreeEnsure, Session: "fork1",
		Branch: "tether/fork-1", At: cp.Head, Bare: true}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	wt := r.Worktree
	if !wt.Bare || !wt.Created {
		t.Fatalf("got %+v, want a new bare worktree", wt)
	}
	if len(testbin.TreeFiles(t, wt.Path)) != 0 {
		t.Fatalf("a bare worktree has files: %v", testbin.TreeFiles(t, wt.Path))
	}
	res, err := restoreOp(cfg, repo, workspace.RestoreSpec{Turn: "t1", Target: wt.Cwd})
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != 2 {
		t.Errorf("got %d files written, want 2", res.Written)
	}
	testbin.SameTree(t, "fork worktree", testbin.TreeFiles(t, wt.Path), want)
	if got := git(t, wt.Path, "rev-parse", "HEAD"); got != cp.Head {
		t.Errorf("fork HEAD: got %s, want the checkpoint's %s", got, cp.Head)
	}
	status := git(t, wt.Path, "status", "--porcelain")
	if !strings.Contains(status, "M sub/a.txt") || !strings.Contains(status, "?? new.txt") || strings.Count(status, "\n") != 1 {
		t.Errorf("fork status: got %q, want sub/a.txt modified and new.txt untracked", status)
	}
}
