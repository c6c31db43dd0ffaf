package testbin

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TreeFiles reads every regular file under dir but .git, as its
// "/"-separated path → content: what a workspace checkpoint holds of a
// directory, for tests that compare restored files byte for byte.
func TreeFiles(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// SameTree reports each difference between two TreeFiles as an error of
// tb, what naming the comparison.
func SameTree(tb testing.TB, what string, got, want map[string]string) {
	tb.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			tb.Errorf("%s: %s: got %q (present %v), want %q", what, p, g, ok, w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			tb.Errorf("%s: %s is there, want it gone", what, p)
		}
	}
}
