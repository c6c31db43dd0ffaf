package crash_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWorkspaceOnDetachedHost: a detached session's workspace is served by
// its executor host, with the confinement of the daemon's own, while the
// agent runs, after the agent was killed, and after tetherd was killed and
// restarted: the workspace needs the executor, never the agent.
func TestWorkspaceOnDetachedHost(t *testing.T) {
	w := hostedWorld(t)
	w.startHosted()
	sid, cwd := w.createSession("demo")
	if err := os.MkdirAll(filepath.Join(cwd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "sub", "notes.txt"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(cwd, "out")); err != nil {
		t.Fatal(err)
	}
	w.prompt(sid, "/echo hi", "p1")
	if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
		t.Fatalf("turn: got %v, want completed", turn)
	}
	if ex := w.get("/session/" + sid)["executor"].(map[string]any); ex["runtime"] != "detached" {
		t.Fatalf("executor: got %v, want detached", ex)
	}
	base := "/session/" + sid + "/workspace"
	check := func(when string) {
		t.Helper()
		m := w.get(base + "/file?path=sub/notes.txt")
		if m["content"] != "from the host\n" {
			t.Errorf("%s: read: got %v", when, m)
		}
		names := map[string]string{}
		for _, e := range list(w.get(base+"/files"), "entries") {
			names[e["name"].(string)] = e["type"].(string)
		}
		if names["README.md"] != "file" || names["sub"] != "dir" || names["out"] != "symlink" {
			t.Errorf("%s: list: got %v", when, names)
		}
		for _, c := range []struct {
			path   string
			status int
			code   string
		}{
			{"../etc/passwd", http.StatusBadRequest, "workspace_path_invalid"},
			{"out/secret", http.StatusForbidden, "workspace_path_outside"},
			{"nope", http.StatusNotFound, "workspace_path_not_found"},
		} {
			code, m := w.do("GET", base+"/file?path="+url.QueryEscape(c.path), nil)
			if code != c.status || m["code"] != c.code {
				t.Errorf("%s: read %s: got %d %v, want %d %s", when, c.path, code, m, c.status, c.code)
			}
		}
		code, m := w.do("GET", base+"/git/status", nil)
		if code != http.StatusConflict || m["code"] != "workspace_not_a_repository" {
			t.Errorf("%s: git status: got %d %v, want 409 workspace_not_a_repository", when, code, m)
		}
		if ws := workspaceOf(w.status(sid)); ws["status"] != "ready" {
			t.Errorf("%s: status: got workspace %v, want ready", when, ws)
		}
	}
	check("agent running")

	agents := w.agentsIn(cwd)
	if len(agents) != 1 {
		t.Fatalf("agents in the session's directory: got %v, want one", agents)
	}
	if err := syscall.Kill(agents[0].pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.waitFor("the agent's exit to reach the session", func() bool { return w.status(sid)["isAgentRunning"] == false })
	check("agent killed")

	// tetherd killed, and its host held (SIGSTOP) while the next one
	// starts: the workspace is "starting" (the daemon is reconnecting),
	// then ready once the host answers.
	w.kill9()
	hosts := w.processes(" host ")
	if len(hosts) != 1 {
		t.Fatalf("executor hosts: got %v, want one", hosts)
	}
	if err := syscall.Kill(hosts[0].pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = syscall.Kill(hosts[0].pid, syscall.SIGCONT)
		}
	}()
	w.startHosted()
	if ws := workspaceOf(w.status(sid)); ws["status"] != "starting" || ws["errorCode"] != "executor_unavailable" {
		t.Errorf("host held: status: got workspace %v, want starting with executor_unavailable", ws)
	}
	if err := syscall.Kill(hosts[0].pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	w.waitFor("the workspace to be ready again", func() bool { return workspaceOf(w.status(sid))["status"] == "ready" })
	check("after tetherd was killed and restarted")
}

// workspaceOf is a status's workspace availability.
func workspaceOf(status map[string]any) map[string]any {
	ws, _ := status["workspace"].(map[string]any)
	return ws
}
