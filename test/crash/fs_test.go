package crash_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// These drive the agent's fs requests against the real tetherd binary with
// the real demo agent and measure the daemon process itself.

// procStatus reads one numeric field of /proc/<pid>/status (the first
// number on its line: Threads is a count, VmHWM is in kB).
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read status of the daemon: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				t.Fatalf("parse %s: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func (w *world) pid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.daemon.pid()
}

// runTool prompts sid with a /tool command, insists that the turn ends
// end_turn (a tool failure is the agent's business, not the turn's) and
// returns the status and text content of the turn's only tool call.
func (w *world) runTool(sid, promptID, command string) (status, content string) {
	w.t.Helper()
	w.prompt(sid, command, promptID)
	turn := w.waitTurn(sid, promptID)
	if turn["state"] != "completed" || turn["stopReason"] != "end_turn" {
		w.t.Fatalf("turn of %q: got %v, want completed with end_turn", command, turn)
	}
	var calls []map[string]any
	for _, c := range list(w.transcript(sid), "toolCalls") {
		if c["promptId"] == promptID {
			calls = append(calls, c)
		}
	}
	if len(calls) != 1 {
		w.t.Fatalf("tool calls of %q: got %v, want one", command, calls)
	}
	b, _ := json.Marshal(calls[0]["content"])
	var blocks []struct {
		Content struct{ Text string } `json:"content"`
	}
	_ = json.Unmarshal(b, &blocks)
	var text strings.Builder
	for _, blk := range blocks {
		text.WriteString(blk.Content.Text)
	}
	return calls[0]["status"].(string), text.String()
}

// TestFIFOFloodKeepsTheDaemon floods fs/read_text_file on a FIFO in the
// workspace. Before the fix every read blocked in open(2) forever, pinning
// one OS thread each until tetherd died of thread exhaustion: here each
// read is refused at once and the daemon's thread count stays bounded.
func TestFIFOFloodKeepsTheDaemon(t *testing.T) {
	w := newWorld(t, profile{id: "fsagent"})
	w.start()
	sid, cwd := w.createSession("fsagent")
	if err := syscall.Mkfifo(filepath.Join(cwd, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	status, content := w.runTool(sid, "warm-up", "/tool read README.md")
	if status != "completed" {
		t.Fatalf("warm-up read: got %s %q, want completed", status, content)
	}
	pid := w.pid()
	before := procStatus(t, pid, "Threads")

	cases := []struct {
		name, command string
		// wantAll: every request was answered "not a regular file"
		// (with 8 in flight none exceeds the per-agent queue).
		wantAll string
	}{
		{"3000 at once", "/tool read-many 3000 fifo", ""},
		{"3000, 8 in flight", "/tool read-many 3000/8 fifo", "3000 requests: 0 served, 3000 failed"},
		{"write to the FIFO", "/tool write fifo hello", ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, content := w.runTool(sid, fmt.Sprintf("p%d", i), tc.command)
			if status != "failed" || !strings.Contains(content, "named pipe") {
				t.Fatalf("tool call: got %s %q, want failed, naming the named pipe", status, content)
			}
			if tc.wantAll != "" && !strings.HasPrefix(content, tc.wantAll) {
				t.Errorf("summary: got %q, want it to start %q", content, tc.wantAll)
			}
		})
	}
	// Go keeps the threads it made, so "came back" means: the flood added
	// at most a few (one per fs slot, one per CPU), not one per request.
	after := procStatus(t, pid, "Threads")
	if after > before+16 {
		t.Errorf("daemon threads: %d before the flood, %d after; want at most %d", before, after, before+16)
	}
	if code, m := w.do("DELETE", "/session/"+sid, nil); code != http.StatusOK {
		t.Fatalf("close session: got %d %v, want 200", code, m)
	}
	if got := procStatus(t, pid, "Threads"); got > before+16 {
		t.Errorf("daemon threads after the session closed: got %d, want at most %d", got, before+16)
	}
	t.Logf("daemon threads: %d before, %d after the flood", before, after)
}

// TestLargeFileKeepsTheDaemon asks for a 256 MiB sparse file. Before the
// fix the daemon read it whole (and died of memory); now the whole-file
// read is refused with the size and a hint, ranges are streamed, and the
// daemon's peak memory stays far below the file's size.
func TestLargeFileKeepsTheDaemon(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	const size = 256 << 20
	w := newWorld(t, profile{id: "fsagent"})
	w.start()
	sid, cwd := w.createSession("fsagent")
	big := filepath.Join(cwd, "big.bin")
	if err := os.WriteFile(big, []byte("line 1\nline 2\nline 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, size); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, command, wantStatus string
		wantIn                    []string
	}{
		{"whole file", "/tool read big.bin", "failed", []string{strconv.Itoa(size) + " bytes", "line and limit"}},
		{"a range at the start", "/tool read-range big.bin 2 1", "completed", []string{"line 2"}},
		{"a range past the end streams the whole file", "/tool read-range big.bin 100000000 1", "completed", nil},
		{"from line 3 to the end", "/tool read-range big.bin 3 -1", "failed", []string{"line and limit"}},
		{"whole file, many at once", "/tool read-many 50 big.bin", "failed", []string{"50 failed"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, content := w.runTool(sid, fmt.Sprintf("p%d", i), tc.command)
			if status != tc.wantStatus {
				t.Fatalf("tool call: got %s %q, want %s", status, content, tc.wantStatus)
			}
			for _, s := range tc.wantIn {
				if !strings.Contains(content, s) {
					t.Errorf("tool content %q: want it to contain %q", content, s)
				}
			}
		})
	}
	// The default read limit is 4 MiB with at most 4 requests at once.
	hwm := procStatus(t, w.pid(), "VmHWM") << 10
	if hwm > 128<<20 {
		t.Errorf("daemon peak memory (VmHWM): got %d MiB, want under 128 MiB for a %d MiB file", hwm>>20, size>>20)
	}
	t.Logf("daemon peak memory: %d MiB", hwm>>20)
}

// TestAllowCwdFlag: system directories are refused as a workspace by
// default and allowed by --allow-cwd, through the real binary's flags.
func TestAllowCwdFlag(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	w := newWorld(t)
	cases := []struct {
		name  string
		flags []string
		dir   string
		want  int
	}{
		{"/ by default", nil, "/", http.StatusBadRequest},
		{"/proc by default", nil, "/proc", http.StatusBadRequest},
		{"/ with --allow-cwd /", []string{"--allow-cwd", "/"}, "/", http.StatusCreated},
		{"/proc with --allow-cwd /dev", []string{"--allow-cwd", "/dev"}, "/proc", http.StatusBadRequest},
		{"/dev with --allow-cwd /dev", []string{"--allow-cwd", "/dev"}, "/dev", http.StatusCreated},
		{"a temp dir with --refuse-cwd on its parent's subtree", []string{"--refuse-cwd", filepath.Dir(t.TempDir()) + "/..."}, t.TempDir(), http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w.start(tc.flags...)
			defer w.term()
			code, m := w.do("POST", "/tasks", map[string]any{"title": "t", "workspace": tc.dir})
			if code != tc.want {
				t.Fatalf("POST /tasks workspace %s: got %d %v, want %d", tc.dir, code, m, tc.want)
			}
			if code == http.StatusBadRequest && m["code"] != "cwd_refused" {
				t.Errorf("problem code: got %v, want cwd_refused", m["code"])
			}
		})
	}
}
