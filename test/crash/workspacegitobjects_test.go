package crash_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkspaceGitObjectsConfined, on every runtime: git reads for a
// session no other repository's objects. A repository whose alternates
// (objects/info/alternates, as `git clone --shared` and `--reference`
// write them, followed through an alternate's own alternates) name an
// object directory outside the session's directory, or whose packs or
// loose objects are symlinks to another repository's, is refused on every
// git route with 403 workspace_repository_refused, a diff against the
// other repository's commit included, nothing of that repository in the
// answer; and GIT_ALTERNATE_OBJECT_DIRECTORIES in the executor's
// environment lends git no objects (the commit is not found). Alternates
// inside the session's directory are read, and so is a --shared checkout
// repacked with its alternates removed.
func TestWorkspaceGitObjectsConfined(t *testing.T) {
	for _, rt := range allRuntimes() {
		t.Run(rt.name, func(t *testing.T) {
			root := realTempDir(t)
			outside := filepath.Join(root, "outside")
			secret := gitRepo(t, outside, "secret.txt", "the outside secret\n")
			looseOutside := filepath.Join(root, "loose-outside")
			looseSecret := gitRepo(t, looseOutside, "secret.txt", "the outside secret\n")

			cases := []struct {
				name, cwd, secret string
			}{
				{"git clone --shared", filepath.Join(root, "shared"), secret},
				{"git clone --reference", filepath.Join(root, "reference"), secret},
				{"an alternate's alternate", filepath.Join(root, "chained"), secret},
				{"symlinked packs", filepath.Join(root, "packs"), secret},
				{"symlinked loose objects", filepath.Join(root, "loose"), looseSecret},
			}
			gitIn(t, root, "clone", "-q", "--shared", outside, cases[0].cwd)
			gitIn(t, root, "clone", "-q", "--reference", outside, outside, cases[1].cwd)
			// chained: its alternate is inside it, and that one's is outside.
			chained := cases[2].cwd
			gitIn(t, root, "init", "-q", "-b", "main", chained)
			gitIn(t, chained, "init", "-q", "--bare", "mirror.git")
			writeFile(t, filepath.Join(chained, ".git", "objects", "info", "alternates"), "../../mirror.git/objects\n")
			writeFile(t, filepath.Join(chained, "mirror.git", "objects", "info", "alternates"), filepath.Join(outside, ".git", "objects")+"\n")
			gitIn(t, chained, "update-ref", "refs/heads/main", secret)
			// packs: the other repository's packs linked in.
			gitIn(t, outside, "repack", "-q", "-a", "-d")
			packs := cases[3].cwd
			gitIn(t, root, "init", "-q", "-b", "main", packs)
			linkAll(t, filepath.Join(outside, ".git", "objects", "pack"), filepath.Join(packs, ".git", "objects", "pack"))
			gitIn(t, packs, "update-ref", "refs/heads/main", secret)
			// loose: each loose object of the other repository linked in.
			loose := cases[4].cwd
			gitIn(t, root, "init", "-q", "-b", "main", loose)
			fanout, err := filepath.Glob(filepath.Join(looseOutside, ".git", "objects", "[0-9a-f][0-9a-f]"))
			if err != nil || len(fanout) == 0 {
				t.Fatalf("loose objects of %s: %v %v", looseOutside, fanout, err)
			}
			for _, dir := range fanout {
				linkAll(t, dir, filepath.Join(loose, ".git", "objects", filepath.Base(dir)))
			}
			gitIn(t, loose, "update-ref", "refs/heads/main", looseSecret)

			// Alternates inside the session's directory: a repository
			// whose commit is in a repository it holds.
			holds := filepath.Join(root, "holds")
			inner := gitRepo(t, filepath.Join(holds, "origin"), "inner.txt", "inner\n")
			gitIn(t, holds, "init", "-q", "-b", "main")
			writeFile(t, filepath.Join(holds, ".git", "objects", "info", "alternates"), "../../origin/.git/objects\n")
			gitIn(t, holds, "update-ref", "refs/heads/main", inner)

			// The environment's route: the executor's git gets the other
			// repository's objects directory by GIT_ALTERNATE_OBJECT_DIRECTORIES.
			plain := filepath.Join(root, "plain")
			gitRepo(t, plain, "mine.txt", "mine\n")
			t.Setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", filepath.Join(outside, ".git", "objects"))

			w := newWorld(t, profile{id: "demo"})
			executor, _ := rt.start(t, w)
			for _, c := range cases {
				sid := w.createSessionIn("demo", executor, c.cwd)
				routes := append(workspaceRoutes(sid), struct{ name, method, path string }{
					"git diff against the other repository's commit", http.MethodGet, "/session/" + sid + "/workspace/git/diff?patch=true&against=" + c.secret})
				for _, r := range routes {
					if !strings.Contains(r.path, "/git/") {
						continue
					}
					code, m := w.do(r.method, r.path, nil)
					if code != http.StatusForbidden || m["code"] != "workspace_repository_refused" {
						t.Errorf("%s: %s: got %d %v, want 403 workspace_repository_refused", c.name, r.name, code, m)
					}
					if b, _ := json.Marshal(m); strings.Contains(string(b), "the outside secret") {
						t.Errorf("%s: %s served the other repository: %s", c.name, r.name, b)
					}
				}
			}

			// The way out docs/workspace.md gives a --shared checkout: copy
			// the objects in, drop the alternates.
			gitIn(t, cases[0].cwd, "repack", "-q", "-a", "-d")
			if err := os.Remove(filepath.Join(cases[0].cwd, ".git", "objects", "info", "alternates")); err != nil {
				t.Fatal(err)
			}
			sid := w.createSessionIn("demo", executor, cases[0].cwd)
			if st := w.get("/session/" + sid + "/workspace/git/status"); st["head"] != secret {
				t.Errorf("git clone --shared, repacked and its alternates removed: git status got %v, want head %s", st, secret)
			}

			sid = w.createSessionIn("demo", executor, plain)
			code, m := w.do(http.MethodGet, "/session/"+sid+"/workspace/git/diff?patch=true&against="+secret, nil)
			if b, _ := json.Marshal(m); code != http.StatusNotFound || m["code"] != "workspace_revision_not_found" || strings.Contains(string(b), "the outside secret") {
				t.Errorf("GIT_ALTERNATE_OBJECT_DIRECTORIES in the environment: diff against the other repository's commit: got %d %s, want 404 workspace_revision_not_found", code, b)
			}

			sid = w.createSessionIn("demo", executor, holds)
			if l := list(w.get("/session/"+sid+"/workspace/git/log"), "commits"); len(l) != 1 || l[0]["hash"] != inner {
				t.Errorf("alternates inside the session's directory: git log got %v, want the one commit %s", l, inner)
			}
			if code, m := w.do(http.MethodGet, "/session/"+sid+"/workspace/git/diff?against="+inner, nil); code != http.StatusOK {
				t.Errorf("alternates inside the session's directory: git diff got %d %v, want 200", code, m)
			}
		})
	}
}

// linkAll puts in dst (made if missing) a symlink to each file of src.
func linkAll(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil || len(entries) == 0 {
		t.Fatalf("files of %s: %v %v", src, entries, err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}
