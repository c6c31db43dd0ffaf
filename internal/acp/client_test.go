package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/sandbox"
)

// TestFSConfinement asks the demo agent to read files through the daemon's
// fs/read_text_file and checks that only files inside the session
// directory are served, symlinks included.
func TestFSConfinement(t *testing.T) {
	outside := t.TempDir()
	secret := "TOP-SECRET outside the session directory\n"
	writeTestFile(t, filepath.Join(outside, "secret.txt"), secret)

	cwd := newCwd(t, "readme inside\n")
	writeTestFile(t, filepath.Join(cwd, "sub", "notes.txt"), "notes inside\n")
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(cwd, "leak.txt"))
	symlink(t, outside, filepath.Join(cwd, "outdir"))
	symlink(t, filepath.Join(cwd, "sub", "notes.txt"), filepath.Join(cwd, "alias.txt"))

	a := startDemoAgent(t, t.TempDir(), cwd)
	sid, err := a.conn.NewSession(callCtx(t), acp.SessionParams{Cwd: cwd})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}

	const (
		served   = "served"   // the client answered with the file content
		refused  = "refused"  // the client answered -32602
		notAsked = "notAsked" // the agent refused on its own; no fs request
	)
	tests := []struct {
		name       string
		path       string
		wantStatus string
		wantWire   string
		wantText   string // content served, for wantWire == served
	}{
		{"relative path inside cwd", "README.md", "completed", served, "readme inside\n"},
		{"absolute path inside cwd", filepath.Join(cwd, "sub", "notes.txt"), "completed", served, "notes inside\n"},
		{"symlink inside cwd to a file inside", "alias.txt", "completed", served, "notes inside\n"},
		{"dot-dot escape", "../outside", "failed", notAsked, ""},
		{"absolute path outside cwd", filepath.Join(outside, "secret.txt"), "failed", notAsked, ""},
		{"symlink inside cwd to a file outside", "leak.txt", "failed", refused, ""},
		{"file under a symlinked directory outside", "outdir/secret.txt", "failed", refused, ""},
		{"missing file inside cwd", "nope.txt", "failed", refused, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(a.handler.Updates())
			linesBefore, _ := a.out.Lines()
			stop, err := a.conn.Prompt(callCtx(t), sid, textPrompt(t, "/tool read "+tt.path))
			if err != nil || stop != "end_turn" {
				t.Fatalf("Prompt(/tool read %s): got (%q, %v), want (\"end_turn\", nil)", tt.path, stop, err)
			}
			ups := a.handler.Updates()[before:]
			if got := finalToolStatus(ups); got != tt.wantStatus {
				t.Errorf("tool call status: got %q, want %q; updates %s", got, tt.wantStatus, describeUpdates(ups))
			}

			// The daemon writes to the agent first and to Outgoing second,
			// so the copy of the fs answer may land just after Prompt
			// returns: wait for the answer this case expects.
			want := 1
			if tt.wantWire == notAsked {
				want = 0
			}
			responses := waitResponses(t, a.out, len(linesBefore), want)
			var got string
			switch {
			case len(responses) == 0:
				got = notAsked
			case len(responses) > 1:
				t.Fatalf("responses to the agent: got %d, want at most 1", len(responses))
			case responses[0]["error"] != nil:
				var e struct{ Code int }
				_ = json.Unmarshal(responses[0]["error"], &e)
				got = "error " + strconv.Itoa(e.Code)
				if e.Code == -32602 {
					got = refused
				}
			default:
				var r struct{ Content string }
				_ = json.Unmarshal(responses[0]["result"], &r)
				got = served
				if r.Content != tt.wantText {
					t.Errorf("served content: got %q, want %q", r.Content, tt.wantText)
				}
			}
			if got != tt.wantWire {
				t.Errorf("daemon's answer to fs/read_text_file: got %s, want %s", got, tt.wantWire)
			}
		})
	}
}

// waitResponses returns the responses (lines without a method) recorded
// after the first from lines, polling until there are at least want. Every
// recorded line is also checked for the outside file's content.
func waitResponses(t *testing.T, rec *lineRecorder, from, want int) []map[string]json.RawMessage {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		lines, _ := rec.Lines()
		var responses []map[string]json.RawMessage
		for _, line := range lines[from:] {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("outgoing line is not JSON: %v: %s", err, line)
			}
			if _, isReq := m["method"]; !isReq {
				responses = append(responses, m)
			}
			if bytes.Contains(line, []byte("TOP-SECRET")) {
				t.Fatalf("outgoing line leaks the outside file: %s", line)
			}
		}
		if len(responses) >= want || time.Now().After(deadline) {
			return responses
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// finalToolStatus is the last status reported for a tool call.
func finalToolStatus(ups []acp.Update) string {
	status := "<none>"
	for _, u := range ups {
		if u.Tool != nil && u.Tool.Status != nil {
			status = *u.Tool.Status
		}
	}
	return status
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestStopKillsProcessGroup checks that stopping an agent also ends the
// processes it spawned, which share its process group.
func TestStopKillsProcessGroup(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("sh not found: %v", err)
	}

	t.Run("initialize fails", func(t *testing.T) {
		// sh never answers initialize; the background sleep holds the
		// agent's pipes like a tool or MCP server would.
		pidFile := filepath.Join(t.TempDir(), "pids")
		script := `sleep 300 & echo $! > "$0"; echo $$ >> "$0"; sleep 300`
		t.Cleanup(func() {
			// Only matters when the test fails: take the whole group
			// down ($$, the second pid, is its id) so nothing leaks.
			b, _ := os.ReadFile(pidFile)
			for i, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					if i == 1 {
						_ = syscall.Kill(-pid, syscall.SIGKILL)
					}
					_ = killIfAlive(pid)
				}
			}
		})
		type started struct {
			conn *acp.Conn
			err  error
		}
		done := make(chan started, 1)
		go func() {
			conn, err := acp.Start(context.Background(), acp.Options{
				Spec:        acp.Spec{Command: sh, Args: []string{"-c", script, pidFile}, Sandbox: unsandboxed},
				Handler:     &recordingHandler{},
				InitTimeout: 500 * time.Millisecond,
				StopGrace:   time.Second,
			})
			done <- started{conn, err}
		}()
		var res started
		select {
		case res = <-done:
		case <-time.After(waitTimeout):
			// Start waits for the agent to be reaped, which cannot happen
			// while the group's other members hold its stderr.
			t.Fatalf("Start(sh) has not returned after %s, want it bounded by InitTimeout plus StopGrace", waitTimeout)
		}
		if res.err == nil {
			res.conn.Stop()
			t.Fatalf("Start(sh): got nil error, want initialize to fail")
		}
		if !strings.Contains(res.err.Error(), "initialize") {
			t.Errorf("Start(sh) error: got %q, want it to mention initialize", res.err)
		}
		pids := readPIDs(t, pidFile, 2)
		for _, pid := range pids {
			waitGone(t, pid)
		}
	})

	t.Run("Stop after a clean exit on EOF", func(t *testing.T) {
		// The agent (the demo agent, exec'd by sh so it keeps the group
		// leader's pid) has spawned a detached helper that does not hold its
		// pipes, e.g. an MCP server or a dev server started by a tool.
		// Closing stdin makes the agent exit at once; the helper must
		// still be stopped with it.
		bin := tetherdBinary(t)
		pidFile := filepath.Join(t.TempDir(), "pids")
		script := `sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "$0"; exec "$1" demo-agent --state-dir "$2"`
		conn, err := acp.Start(callCtx(t), acp.Options{
			Spec:        acp.Spec{Command: sh, Args: []string{"-c", script, pidFile, bin, t.TempDir()}, Sandbox: unsandboxed},
			Handler:     &recordingHandler{},
			InitTimeout: waitTimeout,
			StopGrace:   2 * time.Second,
		})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		pids := readPIDs(t, pidFile, 1)
		if !alive(pids[0]) {
			t.Fatalf("helper %d: not running before Stop", pids[0])
		}
		t.Cleanup(func() { _ = killIfAlive(pids[0]) })
		exit := conn.Stop()
		if exit.Code != 0 || exit.Signal != "" {
			t.Errorf("agent exit: got %s, want a clean exit on EOF", exit)
		}
		waitGone(t, conn.PID())
		// Stop returns once the agent is reaped, by which time the group
		// should have been signalled; allow a moment for delivery.
		if !goneWithin(pids[0], 3*time.Second) {
			t.Errorf("helper %d: still running after Stop, want the agent's whole group stopped", pids[0])
		}
	})
}

// TestStopReturnsWhenADescendantLeftTheGroup: a child that moved to its own
// session (setsid, as daemonising tools do) cannot be signalled through the
// agent's group; if it still holds the agent's stderr, Stop must return
// anyway instead of waiting for it to exit.
func TestStopReturnsWhenADescendantLeftTheGroup(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("sh not found: %v", err)
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skipf("setsid not available: %v", err)
	}
	bin := tetherdBinary(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	script := `setsid sleep 120 </dev/null >/dev/null & echo $! > "$0"; exec "$1" demo-agent --state-dir "$2"`
	conn, err := acp.Start(callCtx(t), acp.Options{
		Spec:        acp.Spec{Command: sh, Args: []string{"-c", script, pidFile, bin, t.TempDir()}, Sandbox: unsandboxed},
		Handler:     &recordingHandler{},
		InitTimeout: waitTimeout,
		StopGrace:   time.Second,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	pids := readPIDs(t, pidFile, 1)
	t.Cleanup(func() { _ = killIfAlive(pids[0]) })

	stopped := make(chan acp.Exit, 1)
	go func() { stopped <- conn.Stop() }()
	const bound = 5 * time.Second // StopGrace is 1s
	select {
	case <-stopped:
		if !goneWithin(conn.PID(), 5*time.Second) {
			t.Errorf("agent %d: still running after Stop returned", conn.PID())
		}
	case <-time.After(bound):
		// Cleanup kills the escaped child, which lets Stop return.
		t.Errorf("Stop has not returned after %s while an escaped child holds stderr", bound)
	}
}

// readPIDs polls for a file of n pids, one a line, written by a script.
func readPIDs(t *testing.T, path string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		b, _ := os.ReadFile(path)
		fields := strings.Fields(string(b))
		if len(fields) >= n && strings.HasSuffix(string(b), "\n") {
			pids := make([]int, 0, n)
			for _, f := range fields[:n] {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("pid file %s: %v", path, err)
				}
				pids = append(pids, pid)
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s: got %q, want %d pids", path, b, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is a running (not zombie) process. Orphans that
// are killed may stay zombies when the container's init does not reap.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state != 'Z' && state != 'X'
}

// goneWithin polls until pid is no longer running, up to d.
func goneWithin(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// waitGone fails the test unless pid stops running soon.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if !goneWithin(pid, 10*time.Second) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		t.Errorf("process %d (%s): still running 10s after Stop, want it killed with the agent's process group",
			pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
	}
}

func killIfAlive(pid int) error {
	if !alive(pid) {
		return nil
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// unsandboxed runs an agent as the daemon's plain child: what these tests
// check, its process group, is how mode off stops an agent's tree (a
// sandboxed one ends with its PID namespace: internal/sandbox).
var unsandboxed = sandbox.Spec{Policy: sandbox.Policy{Mode: sandbox.ModeOff}}
