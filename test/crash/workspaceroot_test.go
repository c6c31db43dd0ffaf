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

	"golang.org/x/sys/unix"
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
// directory, over and over, reads, listings, stats and git's status, diff
// and log answer with the session's own files or with 409
// workspace_root_changed, the problem that says the directory changed:
// never with the other directory's files, never with another problem (a
// repository refused, no repository, no such commit: what git found in a
// directory swapped under it), never with a 500. Swapped by moves (mv
// away, ln -s, rm, mv back) the path holds nothing for moments, and a
// request that starts then is 409 working_directory_missing, which is
// true; exchanged with the symlink in one step (renameat2
// RENAME_EXCHANGE), the path always holds something, and every answer
// that is not the session's files is 409 workspace_root_changed.
func TestWorkspaceRootSwappedWhileReading(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
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
			// Both are repositories: git finds one or the other.
			for _, dir := range []string{cwd, outside} {
				gitIn(t, dir, "init", "-q", "-b", "main")
				gitIn(t, dir, "add", ".")
				gitIn(t, dir, "commit", "-q", "-m", "commit of "+filepath.Base(dir))
			}
			head := gitIn(t, cwd, "rev-parse", "HEAD")
			sid := w.createSessionIn("demo", executor, cwd)
			link := cwd + ".link"
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			exchange := func() error { return unix.Renameat2(unix.AT_FDCWD, cwd, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) }

			for _, c := range []struct {
				name  string
				steps []func() error
				// missing: the path holds nothing for moments.
				missing bool
			}{
				{"moved and replaced", []func() error{
					func() error { return os.Rename(cwd, cwd+".moved") },
					func() error { return os.Symlink(outside, cwd) },
					func() error { return os.Remove(cwd) },
					func() error { return os.Rename(cwd+".moved", cwd) },
				}, true},
				{"exchanged with a symlink", []func() error{exchange, exchange}, false},
			} {
				answers := swapWhileReading(t, w, sid, head, c.steps, c.missing)
				t.Logf("%s: answers while the directory was swapped: %v", c.name, answers)
			}
		})
	}
}

// swapWhileReading runs steps over and over (each round leaves the
// session's directory in place) while it reads the workspace of sid, and
// checks every answer; it returns how many of each it got.
func swapWhileReading(t *testing.T, w *world, sid, head string, steps []func() error, missing bool) map[string]int {
	t.Helper()
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
			for _, step := range steps {
				if err = step(); err != nil {
					return
				}
			}
		}
	}()
	base := "/session/" + sid + "/workspace"
	answers := map[string]int{}
	paths := []string{base + "/file?path=notes.txt", base + "/files", base + "/stat?path=notes.txt",
		base + "/git/status", base + "/git/diff?patch=true&against=" + head, base + "/git/log"}
	for i := 0; i < 50; i++ {
		for _, path := range paths {
			code, m := w.do(http.MethodGet, path, nil)
			b, _ := json.Marshal(m)
			switch {
			// The other notes.txt is 19 bytes, the session's 5.
			case strings.Contains(string(b), "outside secret") || strings.Contains(string(b), `"size":19`):
				close(stop)
				<-swapped
				t.Fatalf("%s served the other directory: %d %s", path, code, b)
			case code == http.StatusOK,
				code == http.StatusConflict && m["code"] == "workspace_root_changed",
				code == http.StatusConflict && m["code"] == "working_directory_missing" && missing:
			default:
				t.Errorf("%s: got %d %s, want 200 or 409 workspace_root_changed", path, code, b)
			}
			answers[strconv.Itoa(code)+" "+fmt.Sprint(m["code"])]++
		}
	}
	close(stop)
	if err := <-swapped; err != nil {
		t.Fatal(err)
	}
	return answers
}
