// Package bigfiles checks .ci/bigfiles, the size check `make test` runs
// first (check-size): in scratch git repositories, that a tracked file over
// 2 MiB fails it with its path and size unless .ci/bigfiles.allow names it
// with a reason, and that the allow-list cannot rot. A check that passed
// whatever is committed would let the next 30 MB binary in unnoticed.
package bigfiles

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/testbin"
)

const limit = 2 << 20 // bytes; the script's limit

func TestBigFilesCheck(t *testing.T) {
	script := filepath.Join(testbin.Root(), ".ci", "bigfiles")
	type file struct {
		path    string
		size    int64
		tracked bool
	}
	for _, tc := range []struct {
		name  string
		files []file
		allow string // .ci/bigfiles.allow; "" writes none
		fail  bool
		want  []string // parts of the output
	}{
		{name: "small files pass", files: []file{{"a.txt", 10, true}, {"dir/b.bin", 100 << 10, true}}},
		{name: "a file of exactly the limit passes", files: []file{{"edge.bin", limit, true}}},
		{name: "a tracked file over the limit fails with its path and size",
			files: []file{{"small.txt", 10, true}, {"tools/tether-bench", 3 << 20, true}},
			fail:  true, want: []string{"tools/tether-bench: 3145728 bytes (3.0 MiB), over the 2 MiB limit"}},
		{name: "every file over the limit is named",
			files: []file{{"one.bin", limit + 1, true}, {"two.bin", 5 << 20, true}},
			fail:  true, want: []string{"one.bin: 2097153 bytes", "two.bin: 5242880 bytes"}},
		{name: "a file over the limit that git does not track passes",
			files: []file{{"bin/tetherd", 3 << 20, false}}},
		{name: "an allowed file passes",
			files: []file{{"docs/big.png", 3 << 20, true}},
			allow: "# header comment\ndocs/big.png   # the diagram, compressed as far as it goes\n"},
		{name: "an allowed file does not let another in",
			files: []file{{"docs/big.png", 3 << 20, true}, {"dump.sql", 3 << 20, true}},
			allow: "docs/big.png  # the diagram\n", fail: true, want: []string{"dump.sql: 3145728 bytes"}},
		{name: "an entry without a reason fails",
			files: []file{{"docs/big.png", 3 << 20, true}},
			allow: "docs/big.png\n", fail: true, want: []string{"'docs/big.png' has no comment saying why"}},
		{name: "an entry for a file no longer over the limit fails",
			files: []file{{"docs/big.png", 1 << 20, true}},
			allow: "docs/big.png  # the diagram\n", fail: true, want: []string{"'docs/big.png' is not a tracked file over the limit: remove the entry"}},
		{name: "an entry for a file that is gone fails",
			allow: "docs/gone.png  # the diagram\n", fail: true, want: []string{"'docs/gone.png' is not a tracked file over the limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			git(t, repo, "init", "-q")
			for _, f := range tc.files {
				p := filepath.Join(repo, f.path)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(p, f.size); err != nil {
					t.Fatal(err)
				}
				if f.tracked {
					git(t, repo, "add", f.path)
				}
			}
			if tc.allow != "" {
				if err := os.MkdirAll(filepath.Join(repo, ".ci"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(repo, ".ci", "bigfiles.allow"), []byte(tc.allow), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(script)
			cmd.Dir = repo
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if failed := err != nil; failed != tc.fail {
				t.Errorf("got failure %v, want %v\n%s", failed, tc.fail, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("got output\n%s\nwant it to contain %q", out, w)
				}
			}
			if !tc.fail && len(out) != 0 {
				t.Errorf("got output %q from a passing check, want none", out)
			}
		})
	}
}

// git runs git in dir, failing t if it fails.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
