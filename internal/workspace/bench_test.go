package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether/tether/internal/workspace"
)

// The workspace figures of docs/benchmarks.md: a listing of a directory
// of 10,000 files and a diff of 1,000 changed files (with the patch), as
// the executor serves them; "json-bytes" is the size of the answer.

func BenchmarkList10000Files(b *testing.B) {
	dir := b.TempDir()
	for i := range 10000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%05d.txt", i)), []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	req := workspace.Request{Root: dir, Op: workspace.OpList}
	var size int
	for b.Loop() {
		r, err := workspace.Serve(context.Background(), req, workspace.Config{})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Listing.Entries) != 10000 || r.Listing.Truncated {
			b.Fatalf("got %d entries (truncated %v), want 10000", len(r.Listing.Entries), r.Listing.Truncated)
		}
		out, _ := json.Marshal(r)
		size = len(out)
	}
	b.ReportMetric(float64(size), "json-bytes")
}

func BenchmarkDiff1000ChangedFiles(b *testing.B) {
	dir := b.TempDir()
	gitB(b, dir, "init", "-q", "-b", "main")
	for i := range 1000 {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package x\n\nfunc f() int { return 1 }\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gitB(b, dir, "add", ".")
	gitB(b, dir, "commit", "-q", "-m", "base")
	for i := range 1000 {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.go", i))
		if err := os.WriteFile(p, []byte("package x\n\nfunc f() int { return 2 }\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	req := workspace.Request{Root: dir, Op: workspace.OpGitDiff, Patch: true}
	var size int
	for b.Loop() {
		r, err := workspace.Serve(context.Background(), req, workspace.Config{})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.GitDiff.Files) != 1000 || r.GitDiff.PatchTruncated {
			b.Fatalf("got %d files (truncated %v), want 1000", len(r.GitDiff.Files), r.GitDiff.PatchTruncated)
		}
		out, _ := json.Marshal(r)
		size = len(out)
	}
	b.ReportMetric(float64(size), "json-bytes")
}

// BenchmarkCheckpoint is a turn's checkpoint of a directory of 1,000 files
// after the first: what each turn's start costs.
func BenchmarkCheckpoint1000Files(b *testing.B) {
	dir := b.TempDir()
	for i := range 1000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.txt", i)), []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfg := workspace.Config{Checkpoints: filepath.Join(b.TempDir(), "cp")}
	n := 0
	for b.Loop() {
		n++
		if _, err := workspace.Serve(context.Background(), workspace.Request{Root: dir, Op: workspace.OpCheckpoint, Session: "s", Turn: fmt.Sprint("t", n)}, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

func gitB(b *testing.B, dir string, args ...string) {
	b.Helper()
	if out, err := gitCmd(dir, args...).CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
