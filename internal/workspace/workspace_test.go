package workspace_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/workspace"
)

func TestResolveDir(t *testing.T) {
	base := t.TempDir()
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(real, "work")
	file := filepath.Join(real, "file.txt")
	link := filepath.Join(real, "link")
	dangling := filepath.Join(real, "dangling")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"directory", dir, dir, false},
		{"unclean path", dir + "/./", dir, false},
		{"symlink resolves to its target", link, dir, false},
		{"empty", "", "", true},
		{"relative", "work", "", true},
		{"missing", filepath.Join(real, "missing"), "", true},
		{"a file", file, "", true},
		{"dangling symlink", dangling, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := workspace.ResolveDir(tc.in)
			if tc.wantErr {
				if !errcode.Is(err, errcode.InvalidCwd) {
					t.Fatalf("got %q, %v; want an invalid_cwd error", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
