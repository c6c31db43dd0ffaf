package crash_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a repository in dir (made if missing) with file at
// content, committed, and returns the commit.
func gitRepo(t *testing.T, dir, file, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, file), content)
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-q", "-m", "commit of "+file)
	return gitIn(t, dir, "rev-parse", "HEAD")
}

// TestWorkspaceGitConfined, on every runtime: git reads for a session only
// the repository its directory is in. A .git that is a symlink, a gitfile,
// or a directory whose objects, refs and config are symlinks, leading to
// a repository elsewhere is refused on every git route
// with 403 workspace_repository_refused, nothing of that repository in the
// answer, and a worktree session asked there is refused without a branch
// added to it. What git itself records stays readable: a session in a
// subdirectory of a repository, in the user's own linked worktree, and in
// tetherd's own worktree of a repository.
func TestWorkspaceGitConfined(t *testing.T) {
	for _, rt := range allRuntimes() {
		t.Run(rt.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			executor, _ := rt.start(t, w)
			root := realTempDir(t)
			outside := filepath.Join(root, "outside")
			secret := gitRepo(t, outside, "secret.txt", "the outside secret\n")

			linked := filepath.Join(root, "linked")
			if err := os.MkdirAll(linked, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(linked, "mine.txt"), "mine\n")
			if err := os.Symlink(filepath.Join(outside, ".git"), filepath.Join(linked, ".git")); err != nil {
				t.Fatal(err)
			}
			gitfile := filepath.Join(root, "gitfile")
			if err := os.MkdirAll(gitfile, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(gitfile, "mine.txt"), "mine\n")
			writeFile(t, filepath.Join(gitfile, ".git"), "gitdir: "+filepath.Join(outside, ".git")+"\n")

			// A .git directory of its own whose insides are symlinks into
			// the other repository (git-new-workdir makes them so; an
			// unpacked archive may): git reads and writes that repository.
			insides := filepath.Join(root, "insides")
			if err := os.MkdirAll(filepath.Join(insides, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(insides, "mine.txt"), "mine\n")
			writeFile(t, filepath.Join(insides, ".git", "HEAD"), "ref: refs/heads/main\n")
			for _, name := range []string{"objects", "refs", "config"} {
				if err := os.Symlink(filepath.Join(outside, ".git", name), filepath.Join(insides, ".git", name)); err != nil {
					t.Fatal(err)
				}
			}

			for _, c := range []struct{ name, cwd string }{{"a .git symlink", linked}, {"a gitfile", gitfile}, {"a .git of symlinks", insides}} {
				sid := w.createSessionIn("demo", executor, c.cwd)
				for _, r := range workspaceRoutes(sid) {
					if !strings.Contains(r.path, "/git/") {
						continue
					}
					code, m := w.do(r.method, r.path, nil)
					if code != http.StatusForbidden || m["code"] != "workspace_repository_refused" {
						t.Errorf("%s leading outside: %s: got %d %v, want 403 workspace_repository_refused", c.name, r.name, code, m)
					}
					if b, _ := m["detail"].(string); strings.Contains(b, secret) || strings.Contains(b, "the outside secret") {
						t.Errorf("%s: %s tells of the outside repository: %v", c.name, r.name, m)
					}
				}
				body := sessionBody("demo", executor, c.cwd)
				body["worktree"] = true
				if code, m := w.do(http.MethodPost, "/session", body); code != http.StatusForbidden || m["code"] != "workspace_repository_refused" {
					t.Errorf("%s: worktree session: got %d %v, want 403 workspace_repository_refused", c.name, code, m)
				}
				if branches := gitIn(t, outside, "branch", "--list"); branches != "* main" {
					t.Errorf("%s: the outside repository's branches: got %q, want main alone", c.name, branches)
				}
				if wts := gitIn(t, outside, "worktree", "list"); strings.Count(wts, "\n") != 0 {
					t.Errorf("%s: the outside repository's worktrees: got\n%s\nwant its own checkout alone", c.name, wts)
				}
			}

			// What git records is read: a subdirectory, the user's own
			// linked worktree, tetherd's own worktree.
			proj := filepath.Join(root, "proj")
			head := gitRepo(t, proj, "README.md", "# proj\n")
			if err := os.MkdirAll(filepath.Join(proj, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			userWT := filepath.Join(root, "proj-wt")
			gitIn(t, proj, "worktree", "add", "-q", "-b", "mine", userWT)
			body := sessionBody("demo", executor, proj)
			body["worktree"] = true
			code, m := w.do(http.MethodPost, "/session", body)
			if code != http.StatusCreated {
				t.Fatalf("tetherd's own worktree: got %d %v, want 201", code, m)
			}
			for _, c := range []struct{ name, sid, prefix string }{
				{"a subdirectory of a repository", w.createSessionIn("demo", executor, filepath.Join(proj, "sub")), "sub"},
				{"the user's linked worktree", w.createSessionIn("demo", executor, userWT), ""},
				{"tetherd's own worktree", m["id"].(string), ""},
			} {
				st := w.get("/session/" + c.sid + "/workspace/git/status")
				if st["head"] != head || st["prefix"] != c.prefix {
					t.Errorf("%s: git status got %v, want head %s, prefix %q", c.name, st, head, c.prefix)
				}
				if l := list(w.get("/session/"+c.sid+"/workspace/git/log"), "commits"); len(l) != 1 || l[0]["hash"] != head {
					t.Errorf("%s: git log got %v, want the one commit %s", c.name, l, head)
				}
				if d := w.get("/session/" + c.sid + "/workspace/git/diff"); d["files"] == nil {
					t.Errorf("%s: git diff got %v", c.name, d)
				}
			}
		})
	}
}

// TestWorkspaceGitRunsNoRepositoryProgram, on every runtime: the programs
// a repository's own configuration names (an fsmonitor, a filter's clean
// and smudge commands, a post-checkout hook) never run when the workspace
// reads it or tetherd makes a worktree of it, while status, diff, log and
// the worktree still work.
func TestWorkspaceGitRunsNoRepositoryProgram(t *testing.T) {
	for _, rt := range allRuntimes() {
		t.Run(rt.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			executor, _ := rt.start(t, w)
			root := realTempDir(t)
			marks := filepath.Join(root, "marks")
			if err := os.MkdirAll(marks, 0o755); err != nil {
				t.Fatal(err)
			}
			// Each program that runs leaves a mark named after itself,
			// holding the command that ran it.
			program := func(name, then string) string {
				p := filepath.Join(root, name+".sh")
				writeFile(t, p, "#!/bin/sh\nps -o args= $PPID > "+filepath.Join(marks, name)+"\n"+then+"\n")
				if err := os.Chmod(p, 0o755); err != nil {
					t.Fatal(err)
				}
				return p
			}
			repo := filepath.Join(root, "repo")
			head := gitRepo(t, repo, "README.md", "# repo\n")
			gitIn(t, repo, "config", "core.fsmonitor", program("fsmonitor", "exit 1"))
			gitIn(t, repo, "config", "filter.evil.clean", program("clean", "cat"))
			gitIn(t, repo, "config", "filter.evil.smudge", program("smudge", "cat"))
			if err := os.Rename(program("post-checkout", ""), filepath.Join(repo, ".git", "hooks", "post-checkout")); err != nil {
				t.Fatal(err)
			}
			// The attributes arrive with a commit the worktree checks out;
			// the working tree then has a change that status and diff
			// must clean.
			writeFile(t, filepath.Join(repo, ".gitattributes"), "* filter=evil\n")
			gitIn(t, repo, "-c", "filter.evil.clean=cat", "-c", "filter.evil.smudge=cat", "-c", "core.fsmonitor=false", "add", ".gitattributes")
			gitIn(t, repo, "-c", "filter.evil.clean=cat", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "attributes")
			writeFile(t, filepath.Join(repo, "README.md"), "# repo, changed\n")
			writeFile(t, filepath.Join(repo, "new.txt"), "new\n")
			if entries, _ := os.ReadDir(marks); len(entries) != 0 {
				t.Fatalf("a program ran while the test set the repository up: %v", entries)
			}

			sid := w.createSessionIn("demo", executor, repo)
			st := w.get("/session/" + sid + "/workspace/git/status")
			if len(list(st, "entries")) != 2 {
				t.Errorf("git status: got %v, want README.md and new.txt", st)
			}
			d := w.get("/session/" + sid + "/workspace/git/diff?patch=true")
			if len(list(d, "files")) != 2 || !strings.Contains(d["patch"].(string), "+# repo, changed") {
				t.Errorf("git diff: got %v, want README.md and new.txt", d)
			}
			if l := list(w.get("/session/"+sid+"/workspace/git/log"), "commits"); len(l) != 2 || l[1]["hash"] != head {
				t.Errorf("git log: got %v", l)
			}
			body := sessionBody("demo", executor, repo)
			body["worktree"] = true
			if code, m := w.do(http.MethodPost, "/session", body); code != http.StatusCreated {
				t.Errorf("worktree session: got %d %v, want 201", code, m)
			}
			entries, err := os.ReadDir(marks)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				b, _ := os.ReadFile(filepath.Join(marks, e.Name()))
				t.Errorf("the repository's %s ran, from %s", e.Name(), b)
			}
		})
	}
}

// TestWorkspaceGitRunsNoTransport, on every runtime: a repository that
// allows a transport in its own configuration (protocol.ext.allow, which
// wins over the command line's protocol.allow=never) and is a promisor of
// an ext:: remote never has that remote's command run: a diff against a
// commit it lacks, which git would fetch lazily, is 404
// workspace_revision_not_found, and status still works.
func TestWorkspaceGitRunsNoTransport(t *testing.T) {
	for _, rt := range allRuntimes() {
		t.Run(rt.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			executor, _ := rt.start(t, w)
			root := realTempDir(t)
			mark := filepath.Join(root, "fetched")
			repo := filepath.Join(root, "repo")
			head := gitRepo(t, repo, "README.md", "# repo\n")
			for _, kv := range [][2]string{
				{"core.repositoryformatversion", "1"},
				{"extensions.partialClone", "origin"},
				{"remote.origin.promisor", "true"},
				// ext:: runs the rest as a command; "% " is a space.
				{"remote.origin.url", "ext::sh -c touch% " + mark},
				{"protocol.ext.allow", "always"},
			} {
				gitIn(t, repo, "config", kv[0], kv[1])
			}
			sid := w.createSessionIn("demo", executor, repo)
			missing := strings.Repeat("12", 20)
			if code, m := w.do(http.MethodGet, "/session/"+sid+"/workspace/git/diff?against="+missing, nil); code != http.StatusNotFound || m["code"] != "workspace_revision_not_found" {
				t.Errorf("diff against a commit the promisor lacks: got %d %v, want 404 workspace_revision_not_found", code, m)
			}
			if st := w.get("/session/" + sid + "/workspace/git/status"); st["head"] != head {
				t.Errorf("git status: got %v, want head %s", st, head)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Errorf("the repository's remote command ran (%s exists): git fetched through a transport its configuration allowed", mark)
			}
		})
	}
}
