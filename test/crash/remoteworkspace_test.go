package crash_test

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tether/tether/internal/testbin"
)

// TestRemoteWorkspace: on a remote host in its own network namespace
// (TLS, token), the workspace is the host's: files served with the same
// confinement, a turn's checkpoint taken there and its recovery report
// after kill -9 of the agent mid-tool listing exactly the files it wrote,
// and a terminal (enabled on that host with --terminal on) typed into and
// read back through the daemon. A remote host left at its default serves
// no terminal.
func TestRemoteWorkspace(t *testing.T) {
	ns := newNetns(t)
	w := newWorld(t, profile{id: "demo"})
	far := w.newRemoteHost("far", net.JoinHostPort(ns.IP, "7778"), ns, "--terminal", "on")
	far.start()
	plain := w.newRemoteHost("plain", testbin.FreeAddr(t), nil)
	plain.start()
	w.setHosts(far.pinned(), plain.pinned())
	w.start(pingFlags...)
	w.waitHost("far", "connected", hostState("connected"))
	w.waitHost("plain", "connected", hostState("connected"))

	sid, cwd := w.createSessionOn("demo", "far")
	base := "/session/" + sid + "/workspace"
	if m := w.get(base + "/file?path=README.md"); m["content"] != "# Fixture\nhello from the fixture\n" {
		t.Errorf("read on the remote host: got %v", m)
	}
	if code, m := w.do(http.MethodGet, base+"/file?path=../etc/passwd", nil); code != http.StatusBadRequest || m["code"] != "workspace_path_invalid" {
		t.Errorf("confinement on the remote host: got %d %v", code, m)
	}

	w.prompt(sid, "/work a.txt sub/b.txt", "p1")
	w.waitFor("the demo agent to run `sleep 3600`", func() bool {
		for _, c := range list(w.transcript(sid), "toolCalls") {
			if c["title"] == "Run `sleep 3600`" && c["status"] == "in_progress" {
				return true
			}
		}
		return false
	})
	agents := w.agentsIn(cwd)
	if len(agents) != 1 {
		t.Fatalf("agents in the session's directory: got %v, want one", agents)
	}
	if err := killGroup(agents[0].pid); err != nil {
		t.Fatal(err)
	}
	var report map[string]any
	w.waitFor("the recovery report's workspace part", func() bool {
		rec, _ := w.sessionContext(sid)["recovery"].(map[string]any)
		report, _ = rec["report"].(map[string]any)
		return report != nil && report["workspace"] != nil
	})
	var files []string
	for _, f := range list(report["workspace"].(map[string]any), "files") {
		files = append(files, f["path"].(string))
	}
	slices.Sort(files)
	if !slices.Equal(files, []string{"a.txt", "sub/b.txt"}) {
		t.Errorf("report on the remote host: got files %v, want a.txt and sub/b.txt", files)
	}
	if _, err := os.Stat(filepath.Join(far.dir, "checkpoints", sid+".git")); err != nil {
		t.Errorf("the checkpoint is not in the remote host's data dir: %v", err)
	}

	tid := w.openTerminal(sid)
	s := w.attach(t, sid, tid, 0)
	s.typeText("echo \"R\"\"EMOTE=$((40+2))\"\n")
	s.until("REMOTE=42")

	other, _ := w.createSessionOn("demo", "plain")
	if code, m := w.do(http.MethodPost, "/session/"+other+"/terminals", nil); code != http.StatusForbidden || m["code"] != "terminal_disabled" {
		t.Errorf("terminal on a remote host at its default: got %d %v, want 403 terminal_disabled", code, m)
	}
}
