package crash_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// workspaceRoutes are a request on every route of the workspace that uses
// the session's directory: files, git, commands and terminals.
func workspaceRoutes(sid string) []struct{ name, method, path string } {
	base := "/session/" + sid
	return []struct{ name, method, path string }{
		{"list", http.MethodGet, base + "/workspace/files"},
		{"read", http.MethodGet, base + "/workspace/file?path=secret.txt"},
		{"stat", http.MethodGet, base + "/workspace/stat?path=secret.txt"},
		{"git status", http.MethodGet, base + "/workspace/git/status"},
		{"git diff", http.MethodGet, base + "/workspace/git/diff?patch=true"},
		{"git log", http.MethodGet, base + "/workspace/git/log"},
		{"command", http.MethodPost, base + "/commands"},
		{"terminal", http.MethodPost, base + "/terminals"},
	}
}

// routeBody is the body a workspace route's request takes.
func routeBody(method, path string) any {
	switch {
	case strings.HasSuffix(path, "/commands"):
		return map[string]any{"command": "cat secret.txt"}
	case method == http.MethodPost:
		return map[string]any{}
	}
	return nil
}

// TestWorkspaceRootReplacedBySymlink, on every runtime: when the session's
// directory, or a directory above it, is moved away and a symlink to
// another directory put at its path, no route of the workspace follows it
// there: files, git, commands and terminals all answer 409
// workspace_root_changed and nothing of the other directory. Put back,
// the directory is served again.
func TestWorkspaceRootReplacedBySymlink(t *testing.T) {
	for _, rt := range allRuntimes("--terminal", "on") {
		t.Run(rt.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			executor, _ := rt.start(t, w)
			top := realTempDir(t)
			cwd := filepath.Join(top, "above", "project")
			outside := realTempDir(t)
			for _, dir := range []string{cwd, filepath.Join(outside, "project")} {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFile(t, filepath.Join(cwd, "README.md"), "# mine\n")
			gitIn(t, cwd, "init", "-q", "-b", "main")
			gitIn(t, cwd, "add", ".")
			gitIn(t, cwd, "commit", "-q", "-m", "mine")
			// The other directory, where a symlink at the session's path
			// would lead: a repository with a secret, whole.
			for _, dir := range []string{outside, filepath.Join(outside, "project")} {
				writeFile(t, filepath.Join(dir, "secret.txt"), "the outside secret\n")
				gitIn(t, dir, "init", "-q", "-b", "main")
				gitIn(t, dir, "add", ".")
				gitIn(t, dir, "commit", "-q", "-m", "outside commit")
			}
			sid := w.createSessionIn("demo", executor, cwd)
			if m := w.get("/session/" + sid + "/workspace/file?path=README.md"); m["content"] != "# mine\n" {
				t.Fatalf("read before: got %v", m)
			}

			for _, c := range []struct {
				name     string
				replaced string // the directory moved away and replaced by a symlink to outside
			}{
				{"the session's directory", cwd},
				{"a directory above it", filepath.Join(top, "above")},
			} {
				if err := os.Rename(c.replaced, c.replaced+".moved"); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, c.replaced); err != nil {
					t.Fatal(err)
				}
				for _, r := range workspaceRoutes(sid) {
					code, m := w.do(r.method, r.path, routeBody(r.method, r.path))
					if code != http.StatusConflict || m["code"] != "workspace_root_changed" {
						t.Errorf("%s replaced: %s: got %d %v, want 409 workspace_root_changed", c.name, r.name, code, m)
					}
				}
				for _, c := range list(w.get("/session/"+sid+"/commands"), "commands") {
					t.Errorf("a command ran in the replaced directory: %v", c)
				}
				if err := os.Remove(c.replaced); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(c.replaced+".moved", c.replaced); err != nil {
					t.Fatal(err)
				}
				if m := w.get("/session/" + sid + "/workspace/file?path=README.md"); m["content"] != "# mine\n" {
					t.Errorf("%s put back: read got %v", c.name, m)
				}
			}
		})
	}
}

// realTempDir is a temporary directory by its path with no symlink (what
// tetherd stores as a session's directory).
func realTempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWorkspaceRootSwappedWhileReading, on every runtime: while another
// process swaps the session's directory with a symlink to another
// directory, over and over, reads, listings and stats of the workspace
// answer with the session's own files or with a problem that says the
// directory changed, never with the other directory's files and never
// with a 500.
func TestWorkspaceRootSwappedWhileReading(t *testing.T) {
	for _, rt := range allRuntimes() {
		t.Run(rt.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			executor, _ := rt.start(t, w)
			cwd := filepath.Join(realTempDir(t), "project")
			outside := realTempDir(t)
			if err := os.MkdirAll(cwd, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(cwd, "notes.txt"), "mine\n")
			writeFile(t, filepath.Join(outside, "notes.txt"), "the outside secret\n")
			sid := w.createSessionIn("demo", executor, cwd)

			stop := make(chan struct{})
			swapped := make(chan error, 1)
			go func() {
				var err error
				defer func() { swapped <- err }()
				for {
					select {
					case <-stop:
						return
					default:
					}
					for _, step := range []func() error{
						func() error { return os.Rename(cwd, cwd+".moved") },
						func() error { return os.Symlink(outside, cwd) },
						func() error { return os.Remove(cwd) },
						func() error { return os.Rename(cwd+".moved", cwd) },
					} {
						if err = step(); err != nil {
							return
						}
					}
				}
			}()
			base := "/session/" + sid + "/workspace"
			answers := map[string]int{}
			for i := 0; i < 100; i++ {
				for _, path := range []string{base + "/file?path=notes.txt", base + "/files", base + "/stat?path=notes.txt"} {
					code, m := w.do(http.MethodGet, path, nil)
					b, _ := json.Marshal(m)
					switch {
					// The other notes.txt is 19 bytes, the session's 5.
					case strings.Contains(string(b), "outside secret") || strings.Contains(string(b), `"size":19`):
						t.Fatalf("%s served the other directory: %d %s", path, code, b)
					case code >= 500:
						t.Fatalf("%s: got %d %s, want the file or a problem of the client's", path, code, b)
					}
					answers[strconv.Itoa(code)+" "+fmt.Sprint(m["code"])]++
				}
			}
			close(stop)
			if err := <-swapped; err != nil {
				t.Fatal(err)
			}
			t.Logf("answers while the directory was swapped: %v", answers)
		})
	}
}
