package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
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
			got, err := workspace.CwdPolicy{}.ResolveDir(tc.in)
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

func TestCwdPolicy(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(tmp, "project")
	private := filepath.Join(tmp, "private", "inner")
	rootLink := filepath.Join(tmp, "root-link")
	devLink := filepath.Join(tmp, "dev-link")
	for _, d := range []string{project, private} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{rootLink: "/", devLink: "/dev"} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name        string
		policy      workspace.CwdPolicy
		in          string
		wantRefused bool
	}{
		{"the root", workspace.CwdPolicy{}, "/", true},
		{"the root, unclean", workspace.CwdPolicy{}, "//./", true},
		{"/dev", workspace.CwdPolicy{}, "/dev", true},
		{"under /dev", workspace.CwdPolicy{}, "/dev/shm", true},
		{"/proc", workspace.CwdPolicy{}, "/proc", true},
		{"under /proc through /proc/self", workspace.CwdPolicy{}, "/proc/self", true},
		{"/sys", workspace.CwdPolicy{}, "/sys", true},
		{"/etc", workspace.CwdPolicy{}, "/etc", true},
		{"/usr", workspace.CwdPolicy{}, "/usr", true},
		{"/var", workspace.CwdPolicy{}, "/var", true},
		{"a symlink to the root", workspace.CwdPolicy{}, rootLink, true},
		{"a symlink to /dev", workspace.CwdPolicy{}, devLink, true},
		{"a temp dir", workspace.CwdPolicy{}, project, false},
		{"the temp root itself", workspace.CwdPolicy{}, os.TempDir(), false},
		{"allow / allows the root", workspace.CwdPolicy{Allow: []string{"/"}}, "/", false},
		{"allow / allows /proc", workspace.CwdPolicy{Allow: []string{"/"}}, "/proc", false},
		{"allow /dev allows /dev", workspace.CwdPolicy{Allow: []string{"/dev"}}, "/dev", false},
		{"allow /dev allows under it", workspace.CwdPolicy{Allow: []string{"/dev"}}, "/dev/shm", false},
		{"allow /dev leaves /proc refused", workspace.CwdPolicy{Allow: []string{"/dev"}}, "/proc", true},
		{"refuse a subtree", workspace.CwdPolicy{Refuse: []string{filepath.Join(tmp, "private") + "/..."}}, private, true},
		{"refuse one dir only", workspace.CwdPolicy{Refuse: []string{filepath.Join(tmp, "private")}}, private, false},
		{"refuse one dir exactly", workspace.CwdPolicy{Refuse: []string{project}}, project, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.policy.ResolveDir(tc.in)
			if tc.wantRefused {
				if !errcode.Is(err, errcode.CwdRefused) {
					t.Fatalf("got %q, %v; want a cwd_refused error", got, err)
				}
				if msg := err.Error(); !strings.Contains(msg, workspace.AllowCwdFlag) || !strings.Contains(msg, "system directory") {
					t.Errorf("message %q: want it to say why and to name %s", msg, workspace.AllowCwdFlag)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want %q allowed", err, tc.in)
			}
		})
	}
}

func TestParseCwdList(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
		wantErr  bool
	}{
		{"empty", "", nil, false},
		{"list", " /a , /b/../c ,", []string{"/a", "/c"}, false},
		{"subtree", "/srv/...,/x/y/...", []string{"/srv/...", "/x/y/..."}, false},
		{"root subtree", "/...", []string{"/..."}, false},
		{"relative", "srv", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := workspace.ParseCwdList(tc.in)
			if tc.wantErr != (err != nil) || strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
