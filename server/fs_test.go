package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/workspace"
)

// linesContaining counts the lines the daemon sent to the session's agent
// that contain s.
func (a *agentWire) linesContaining(sessionID, s string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, l := range a.lines[sessionID] {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// toolRun prompts a /tool command, insists the turn completes with
// end_turn and returns the status and text of the turn's tool call.
func (d *daemon) toolRun(sid, promptID, command string) (status, content string) {
	d.t.Helper()
	d.prompt(sid, command, promptID)
	turn := d.waitTurn(sid, promptID)
	if turn["state"] != "completed" || turn["stopReason"] != "end_turn" {
		d.t.Fatalf("turn of %q: got %v, want completed with end_turn", command, turn)
	}
	for _, c := range list(d.transcript(sid), "toolCalls") {
		if c["promptId"] != promptID {
			continue
		}
		var blocks []struct {
			Content struct{ Text string } `json:"content"`
		}
		_ = json.Unmarshal(mustJSON(d.t, c["content"]), &blocks)
		var b strings.Builder
		for _, blk := range blocks {
			b.WriteString(blk.Content.Text)
		}
		return c["status"].(string), b.String()
	}
	d.t.Fatalf("turn of %q has no tool call", command)
	return "", ""
}

// TestAgentSymlinkSwapAndHardLinks attacks the workspace confinement from
// the real demo agent: thousands of reads and writes through a symlink
// that a goroutine swaps between a regular file inside and links to a
// file outside, and a
// write through a hard link to a file outside. Before the fix the check
// and the open were two lookups of the name, and the swap won some.
func TestAgentSymlinkSwapAndHardLinks(t *testing.T) {
	const secret = "SECRET-OUTSIDE-THE-WORKSPACE"
	d := startDaemon(t, daemonOptions{})
	sid, cwd := d.createSession(nil)
	outside := t.TempDir()
	victim := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(victim, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "inside.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	relVictim, err := filepath.Rel(cwd, victim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, filepath.Join(cwd, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(cwd, "link.txt")
	if err := os.Symlink("inside.txt", link); err != nil { // replaced at once by the swapper
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// "" is a regular file inside; the rest are symlinks. Each
		// replaces link atomically (a rename over it).
		targets := []string{"", relVictim, "", victim}
		tmp := link + ".tmp"
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Remove(tmp)
			var err error
			if target := targets[i%len(targets)]; target == "" {
				err = os.WriteFile(tmp, []byte("inside\n"), 0o644)
			} else {
				err = os.Symlink(target, tmp)
			}
			if err != nil || os.Rename(tmp, link) != nil {
				t.Error("swapping the link failed")
				return
			}
		}
	}()
	cases := []struct {
		name, command string
		wantStatus    string
		wantIn        string
	}{
		{"reads through the swapped link", "/tool read-many 5000/4 link.txt", "", ""},
		{"writes through the swapped link", "/tool write-many 5000/4 link.txt written by the agent", "", ""},
		{"write through a hard link to a file outside", "/tool write hard.txt overwritten", "failed", "hard links"},
		{"write through dot-dot", "/tool write ../" + filepath.Base(outside) + "/secret.txt overwritten", "failed", "outside the session directory"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, content := d.toolRun(sid, fmt.Sprintf("p%d", i), tc.command)
			t.Logf("%s: %s", status, content)
			if tc.wantStatus != "" && status != tc.wantStatus {
				t.Errorf("tool call: got %s %q, want %s", status, content, tc.wantStatus)
			}
			if !strings.Contains(content, tc.wantIn) {
				t.Errorf("tool content %q: want it to contain %q", content, tc.wantIn)
			}
			if strings.Contains(content, secret) {
				t.Errorf("tool content %q: the outside file leaked", content)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != secret+"\n" {
				t.Fatalf("file outside the workspace: got (%q, %v), want it unchanged", b, err)
			}
		})
	}
	close(stop)
	wg.Wait()
	if n := d.Sent.linesContaining(sid, secret); n != 0 {
		t.Errorf("answers to the agent carrying the outside file's content: got %d, want 0", n)
	}
	// A hard-linked file is served for reads (docs/security.md says why).
	if status, content := d.toolRun(sid, "read-hard", "/tool read hard.txt"); status != "completed" || !strings.Contains(content, secret) {
		t.Errorf("read of a hard-linked file: got %s %q, want it served", status, content)
	}
}

// TestSystemDirectoriesRefusedAsCwd: sessions and tasks may not work in
// system directories unless the daemon allows them.
func TestSystemDirectoriesRefusedAsCwd(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	link := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/", "/dev", "/proc", "/proc/self", "/sys", "/etc", "/usr", link} {
		for _, route := range []struct{ path, field string }{{"/session", "cwd"}, {"/tasks", "workspace"}} {
			t.Run(route.path+" "+dir, func(t *testing.T) {
				body := map[string]any{route.field: dir, "agentProfileId": "demo", "title": "t"}
				if route.path == "/tasks" {
					delete(body, "agentProfileId")
				}
				r := d.do("POST", route.path, body)
				m := r.JSON(t)
				if r.Status != http.StatusBadRequest || m["code"] != "cwd_refused" {
					t.Fatalf("got %d %s, want 400 cwd_refused", r.Status, r.Body)
				}
				if detail, _ := m["detail"].(string); !strings.Contains(detail, "system directory") || !strings.Contains(detail, workspace.AllowCwdFlag) {
					t.Errorf("detail %q: want it to say why and how to allow it", detail)
				}
			})
		}
	}
	t.Run("a temp dir stays allowed", func(t *testing.T) { d.createSession(nil) })

	allowing := startDaemon(t, daemonOptions{sessions: sessions.Config{Cwd: workspace.CwdPolicy{Allow: []string{"/dev"}}}})
	for _, tc := range []struct {
		dir  string
		want int
	}{{"/dev", http.StatusCreated}, {"/proc", http.StatusBadRequest}} {
		t.Run("allow /dev: "+tc.dir, func(t *testing.T) {
			r := allowing.do("POST", "/tasks", map[string]any{"title": "t", "workspace": tc.dir})
			if r.Status != tc.want {
				t.Fatalf("got %d %s, want %d", r.Status, r.Body, tc.want)
			}
		})
	}
}
