package crash_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitIn runs git in dir for a test, with a fixed identity.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a git repository (its resolved path) on branch main with
// one commit holding README.md ("# repo").
func newRepo(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	if r, err := filepath.EvalSymlinks(repo); err == nil {
		repo = r
	}
	gitIn(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# repo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "first")
	return repo
}

// TestSessionWorktree, on the standalone and detached runtimes and a remote
// host in a network namespace: a session created with worktree
// works in a git worktree of the repository, on a branch of its own; the
// agent's files land there, not in the repository's own checkout. The
// worktree removed by hand (agent stopped) is made again from its branch,
// commits and all, when the next prompt starts the agent. Closing keeps a
// worktree with uncommitted changes and removes a clean one, and keeps
// every branch.
func TestSessionWorktree(t *testing.T) {
	for _, rt := range allRuntimes() {
		t.Run(rt.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			executor, _ := rt.start(t, w)
			create := func(body map[string]any) (int, map[string]any) {
				if executor != "" {
					body["executor"] = executor
				}
				return w.do(http.MethodPost, "/session", body)
			}
			repo := newRepo(t)

			code, s := create(map[string]any{"agentProfileId": "demo", "cwd": repo, "worktree": true, "title": "Fix the parser"})
			if code != http.StatusCreated {
				t.Fatalf("create: got %d %v", code, s)
			}
			sid := s["id"].(string)
			wt, _ := s["executor"].(map[string]any)["worktree"].(map[string]any)
			path, _ := wt["path"].(string)
			branch := "tether/fix-the-parser-" + sid[:8]
			if wt["state"] != "active" || wt["branch"] != branch || wt["repository"] != repo || s["cwd"] != path || path == "" || strings.HasPrefix(path, repo) {
				t.Fatalf("worktree: got %v (cwd %v), want active on %s, outside the repository's checkout", wt, s["cwd"], branch)
			}
			if list := gitIn(t, repo, "worktree", "list"); !strings.Contains(list, path) || !strings.Contains(list, "["+branch+"]") {
				t.Errorf("git worktree list: got\n%s\nwant %s on %s", list, path, branch)
			}
			w.prompt(sid, "/tool write made.txt made in the worktree", "p1")
			if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
				t.Fatalf("turn p1: got %v", turn)
			}
			if _, err := os.Stat(filepath.Join(path, "made.txt")); err != nil {
				t.Fatalf("the agent's file is not in the worktree: %v", err)
			}
			if _, err := os.Stat(filepath.Join(repo, "made.txt")); err == nil {
				t.Fatal("the agent's file is in the repository's own checkout")
			}
			gitIn(t, path, "add", "made.txt")
			gitIn(t, path, "commit", "-q", "-m", "the agent's work")

			// Stop the agent, remove the worktree by hand: the next prompt
			// makes it again from its branch.
			agents := w.agentsIn(path)
			if len(agents) != 1 {
				t.Fatalf("agents in the worktree: got %v, want one", agents)
			}
			if err := killGroup(agents[0].pid); err != nil {
				t.Fatal(err)
			}
			w.waitFor("the agent's exit", func() bool { return w.status(sid)["isAgentRunning"] == false })
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			w.prompt(sid, "/echo back", "p2")
			if turn := w.waitTurn(sid, "p2"); turn["state"] != "completed" {
				t.Fatalf("turn p2 after the worktree was removed: got %v", turn)
			}
			if b, err := os.ReadFile(filepath.Join(path, "made.txt")); err != nil || string(b) != "made in the worktree" {
				t.Errorf("made.txt in the recreated worktree: got %q, %v, want the committed file", b, err)
			}
			if !hasSystemMessage(w.transcript(sid), "was made again from branch "+branch) {
				t.Errorf("the transcript does not say the worktree was made again")
			}

			// Close with an uncommitted change: kept; a clean one: removed.
			if err := os.WriteFile(filepath.Join(path, "draft.txt"), []byte("not committed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, m := w.do(http.MethodDelete, "/session/"+sid, nil); code != http.StatusOK {
				t.Fatalf("close: got %d %v", code, m)
			}
			closed := w.get("/session/" + sid)
			if st := closed["executor"].(map[string]any)["worktree"].(map[string]any)["state"]; st != "kept" {
				t.Errorf("closed with a draft: got worktree state %v, want kept", st)
			}
			if _, err := os.Stat(filepath.Join(path, "draft.txt")); err != nil {
				t.Errorf("the draft is gone: %v", err)
			}
			if !hasSystemMessage(w.transcript(sid), "1 paths in it have uncommitted changes") {
				t.Errorf("the transcript does not say why the worktree was kept")
			}

			code, s2 := create(map[string]any{"agentProfileId": "demo", "cwd": repo, "worktree": true})
			if code != http.StatusCreated {
				t.Fatalf("second session: got %d %v", code, s2)
			}
			sid2 := s2["id"].(string)
			path2 := s2["executor"].(map[string]any)["worktree"].(map[string]any)["path"].(string)
			if code, m := w.do(http.MethodDelete, "/session/"+sid2, nil); code != http.StatusOK {
				t.Fatalf("close: got %d %v", code, m)
			}
			if st := w.get("/session/" + sid2)["executor"].(map[string]any)["worktree"].(map[string]any)["state"]; st != "removed" {
				t.Errorf("closed clean: got worktree state %v, want removed", st)
			}
			if _, err := os.Stat(path2); !os.IsNotExist(err) {
				t.Errorf("the clean worktree is still there: %v", err)
			}
			branches := gitIn(t, repo, "branch", "--list", "tether/*")
			if !strings.Contains(branches, branch) || !strings.Contains(branches, sid2[:8]) {
				t.Errorf("branches after the closes: got\n%s\nwant both sessions' branches kept", branches)
			}
		})
	}
}

// TestSessionWorktreeRefused: worktree isolation needs a repository with a
// commit; anything else is a clear 4xx and creates nothing.
func TestSessionWorktreeRefused(t *testing.T) {
	w := newWorld(t, profile{id: "demo"})
	w.start()
	plain := t.TempDir()
	empty := t.TempDir()
	gitIn(t, empty, "init", "-q")
	for _, c := range []struct {
		name, cwd string
		status    int
		code      string
	}{
		{"not a repository", plain, http.StatusConflict, "workspace_not_a_repository"},
		{"no commit yet", empty, http.StatusNotFound, "workspace_revision_not_found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, m := w.do(http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": c.cwd, "worktree": true})
			if code != c.status || m["code"] != c.code {
				t.Errorf("got %d %v, want %d %s", code, m, c.status, c.code)
			}
		})
	}
	if n := len(list(w.get("/sessions"), "sessions")); n != 0 {
		t.Errorf("got %d sessions after the refusals, want none", n)
	}
}

func hasSystemMessage(transcript map[string]any, part string) bool {
	for _, m := range list(transcript, "messages") {
		if m["role"] == "system" && strings.Contains(m["text"].(string), part) {
			return true
		}
	}
	return false
}
