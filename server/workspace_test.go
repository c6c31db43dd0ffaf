package server_test

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// workspaceFixture is a session whose directory is a git repository with
// one commit, a change, an untracked file, a binary file, and symlinks that
// stay inside and lead out, beside a secret outside it.
func workspaceFixture(t *testing.T, d *daemon) (sid, cwd string) {
	t.Helper()
	sid, cwd = d.createSession(nil)
	outside := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
			"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write(filepath.Join(outside, "secret.txt"), "secret\n")
	write(filepath.Join(cwd, "src", "main.go"), "package main\n")
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "fixture")
	write(filepath.Join(cwd, "src", "main.go"), "package main\n\nfunc main() {}\n")
	write(filepath.Join(cwd, "notes.txt"), "untracked\n")
	write(filepath.Join(cwd, "blob.bin"), "\x00\x01\x02")
	for link, target := range map[string]string{"in-link": "src/main.go", "out-link": filepath.Join(outside, "secret.txt"), "out-dir": outside} {
		if err := os.Symlink(target, filepath.Join(cwd, link)); err != nil {
			t.Fatal(err)
		}
	}
	return sid, cwd
}

func TestWorkspaceAPI(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := workspaceFixture(t, d)
	base := "/session/" + sid + "/workspace"

	r := d.do("GET", base+"/files", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("list: got %d: %s", r.Status, r.Body)
	}
	var names []string
	for _, e := range list(r.JSON(t), "entries") {
		names = append(names, e["name"].(string)+":"+e["type"].(string))
	}
	if got, want := strings.Join(names, " "), ".git:dir src:dir README.md:file blob.bin:file in-link:symlink notes.txt:file out-dir:symlink out-link:symlink"; got != want {
		t.Errorf("entries: got %s, want %s", got, want)
	}

	r = d.do("GET", base+"/file?path=src/main.go&offset=14", nil)
	if m := r.JSON(t); r.Status != http.StatusOK || m["content"] != "func main() {}\n" || m["encoding"] != "utf-8" || m["size"] != 29.0 {
		t.Errorf("read a range: got %d %v", r.Status, m)
	}
	r = d.do("GET", base+"/file?path=in-link", nil)
	if m := r.JSON(t); r.Status != http.StatusOK || !strings.HasPrefix(m["content"].(string), "package main") {
		t.Errorf("read through a link inside: got %d %v", r.Status, m)
	}
	r = d.do("GET", base+"/file?path=blob.bin", nil)
	if m := r.JSON(t); r.Status != http.StatusOK || m["binary"] != true || m["encoding"] != "base64" || m["content"] != "AAEC" {
		t.Errorf("read a binary file: got %d %v", r.Status, m)
	}
	r = d.do("GET", base+"/stat?path=out-link", nil)
	if m := r.JSON(t); r.Status != http.StatusOK || m["type"] != "symlink" {
		t.Errorf("stat a link out: got %d %v, want it described as a link", r.Status, m)
	}

	r = d.do("GET", base+"/git/status", nil)
	st := r.JSON(t)
	if r.Status != http.StatusOK || st["branch"] != "main" {
		t.Fatalf("git status: got %d %v", r.Status, st)
	}
	states := map[string]string{}
	for _, e := range list(st, "entries") {
		states[e["path"].(string)] = e["index"].(string) + e["worktree"].(string)
	}
	if states["src/main.go"] != ".M" || states["notes.txt"] != "??" {
		t.Errorf("git status entries: got %v, want src/main.go .M and notes.txt ??", states)
	}
	r = d.do("GET", base+"/git/diff?patch=true", nil)
	diff := r.JSON(t)
	files := map[string]string{}
	for _, f := range list(diff, "files") {
		files[f["path"].(string)] = f["status"].(string)
	}
	if r.Status != http.StatusOK || files["src/main.go"] != "modified" || files["notes.txt"] != "added" || !strings.Contains(diff["patch"].(string), "+func main() {}") {
		t.Errorf("git diff: got %d files %v patch %q", r.Status, files, diff["patch"])
	}
	r = d.do("GET", base+"/git/log?limit=5", nil)
	if c := list(r.JSON(t), "commits"); r.Status != http.StatusOK || len(c) != 1 || c[0]["subject"] != "fixture" {
		t.Errorf("git log: got %d %v", r.Status, c)
	}
}

// TestWorkspaceConfinement sends every workspace route the attacks on its
// path: each is refused with a 4xx problem and a stable code, and no answer
// carries what lies outside.
func TestWorkspaceConfinement(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := workspaceFixture(t, d)
	routes := []string{"files", "file", "stat", "git/diff"}
	attacks := []struct {
		name, path string
		status     int
		code       string
	}{
		{"parent", "..", 400, "workspace_path_invalid"},
		{"parent inside", "src/../../etc/passwd", 400, "workspace_path_invalid"},
		{"absolute", "/etc/passwd", 400, "workspace_path_invalid"},
		{"NUL byte", "src/main.go\x00.txt", 400, "workspace_path_invalid"},
		{"longer than PATH_MAX", strings.Repeat("d/", 2100), 400, "validation_failed"},
	}
	for _, route := range routes {
		for _, a := range attacks {
			t.Run(route+"/"+a.name, func(t *testing.T) {
				r := d.do("GET", "/session/"+sid+"/workspace/"+route+"?path="+url.QueryEscape(a.path), nil)
				if m := r.JSON(t); r.Status != a.status || m["code"] != a.code {
					t.Errorf("got %d %v, want %d %s", r.Status, m["code"], a.status, a.code)
				}
			})
		}
	}
	outside := []struct {
		route, path string
		status      int
		code        string
	}{
		{"file", "out-link", 403, "workspace_path_outside"},
		{"files", "out-dir", 403, "workspace_path_outside"},
		{"file", "out-dir/secret.txt", 403, "workspace_path_outside"},
		{"stat", "out-dir/secret.txt", 403, "workspace_path_outside"},
		{"file", "missing.txt", 404, "workspace_path_not_found"},
		{"file", "src", 400, "workspace_not_a_file"},
		{"files", "README.md", 400, "workspace_not_a_directory"},
	}
	for _, o := range outside {
		t.Run(o.route+"/"+o.path, func(t *testing.T) {
			r := d.do("GET", "/session/"+sid+"/workspace/"+o.route+"?path="+url.QueryEscape(o.path), nil)
			if m := r.JSON(t); r.Status != o.status || m["code"] != o.code {
				t.Errorf("got %d %v, want %d %s", r.Status, m, o.status, o.code)
			}
			if strings.Contains(string(r.Body), "secret\\n") {
				t.Errorf("the answer leaks the secret: %s", r.Body)
			}
		})
	}
	for _, c := range []struct{ name, query, code string }{
		{"an option as the commit", "against=--output%3D%2Ftmp%2Fx", "invalid_request"},
		{"an unknown commit", "against=nope", "workspace_revision_not_found"},
	} {
		t.Run("git/diff/"+c.name, func(t *testing.T) {
			r := d.do("GET", "/session/"+sid+"/workspace/git/diff?"+c.query, nil)
			if m := r.JSON(t); r.Status < 400 || r.Status >= 500 || m["code"] != c.code {
				t.Errorf("got %d %v, want 4xx %s", r.Status, m, c.code)
			}
		})
	}
	r := d.do("GET", "/session/nope/workspace/files", nil)
	if m := r.JSON(t); r.Status != http.StatusNotFound || m["code"] != "session_not_found" {
		t.Errorf("unknown session: got %d %v", r.Status, m)
	}
}

// TestWorkspaceWithoutAgent: the workspace answers for a session whose
// agent is not running (closed, here), and outside a repository git says
// so.
func TestWorkspaceWithoutAgent(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	if r := d.do("DELETE", "/session/"+sid, nil); r.Status >= 300 {
		t.Fatalf("close: got %d %s", r.Status, r.Body)
	}
	// The status says the workspace is served, though no agent runs.
	st := d.do("GET", "/session/"+sid+"/status", nil).JSON(t)
	if ws, _ := st["workspace"].(map[string]any); st["isAgentRunning"] != false || ws["status"] != "ready" {
		t.Errorf("status after close: got isAgentRunning %v, workspace %v; want false, ready", st["isAgentRunning"], st["workspace"])
	}
	r := d.do("GET", "/session/"+sid+"/workspace/file?path=README.md", nil)
	if m := r.JSON(t); r.Status != http.StatusOK || !strings.Contains(m["content"].(string), "hello from the fixture") {
		t.Errorf("read after close: got %d %v", r.Status, m)
	}
	r = d.do("GET", "/session/"+sid+"/workspace/git/status", nil)
	if m := r.JSON(t); r.Status != http.StatusConflict || m["code"] != "workspace_not_a_repository" {
		t.Errorf("git status outside a repository: got %d %v", r.Status, m)
	}
}
