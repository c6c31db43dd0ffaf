package cli_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// logLine is one line of tether logs: {id, type, data}.
type logLine struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// promptID is the promptId of the line's data ("" if none).
func (l logLine) promptID() string {
	var d struct {
		PromptID string `json:"promptId"`
	}
	_ = json.Unmarshal(l.Data, &d)
	return d.PromptID
}

// logLines parses tether logs output: one JSON object per line, each
// with an id, a type and data, which it returns.
func logLines(t *testing.T, out string) []logLine {
	t.Helper()
	var lines []logLine
	for i, s := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if s == "" && out == "" {
			break
		}
		var l logLine
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("line %d is not a {id, type, data} object (%v): %q", i+1, err, s)
		}
		if l.ID == "" || l.Type == "" || len(l.Data) == 0 {
			t.Fatalf("line %d: got %q, want an id, a type and data", i+1, s)
		}
		lines = append(lines, l)
	}
	return lines
}

// seqOf is the sequence number of a cursor <epoch>:<seq>.
func seqOf(t *testing.T, id string) int64 {
	t.Helper()
	v := seqNum(id)
	if v < 0 {
		t.Fatalf("event id %q is no <epoch>:<seq> cursor", id)
	}
	return v
}

// seqNum is the sequence number of a cursor <epoch>:<seq>, -1 if id is
// none.
func seqNum(id string) int64 {
	_, n, ok := strings.Cut(id, ":")
	v, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || v < 0 {
		return -1
	}
	return v
}

// wantIncreasing fails t unless the lines' ids strictly increase.
func wantIncreasing(t *testing.T, lines []logLine) {
	t.Helper()
	for i := 1; i < len(lines); i++ {
		if a, b := seqOf(t, lines[i-1].ID), seqOf(t, lines[i].ID); b <= a {
			t.Fatalf("event ids not strictly increasing: line %d is %s after %s", i+1, lines[i].ID, lines[i-1].ID)
		}
	}
}

// not is the negation of keep.
func not(keep func(testbin.Frame) bool) func(testbin.Frame) bool {
	return func(f testbin.Frame) bool { return !keep(f) }
}

// wantLog fails t unless got, the ids a command printed, are the stored
// log's: all of before (read before the command ran), and then at most
// what after (read after it) holds, in order, each once.
func wantLog(t *testing.T, got, before, after []string) {
	t.Helper()
	if len(got) < len(before) || len(got) > len(after) || !slices.Equal(got, after[:len(got)]) || !slices.Equal(got[:len(before)], before) {
		t.Fatalf("got ids %v, want the stored log's %v (at least %d of them)", got, after, len(before))
	}
}

// idsOf are the ids of the log lines.
func idsOf(lines []logLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.ID
	}
	return out
}

// frameIDs are the ids of the frames, of those types only when given.
func frameIDs(frames []testbin.Frame, types ...string) []string {
	var out []string
	for _, f := range frames {
		if len(types) == 0 || slices.Contains(types, f.Event) {
			out = append(out, f.ID)
		}
	}
	return out
}

func TestLogs(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	first := d.prompt(t, sid, "/echo logged")
	d.waitTurn(t, sid, first)
	before := d.replay(t, sid)
	cases := []struct {
		name  string
		args  []string
		keep  func(f testbin.Frame) bool // the stored events the command prints
		check func(t *testing.T, lines []logLine)
	}{
		{"all", []string{"logs", sid}, func(testbin.Frame) bool { return true }, func(t *testing.T, lines []logLine) {
			if lines[0].Type != "session.created" || !slices.ContainsFunc(lines, func(l logLine) bool { return l.Type == "turn.completed" && l.promptID() == first }) {
				t.Errorf("got %v, want session.created first and turn %s completed", lines, first)
			}
		}},
		{"types", []string{"logs", "--types", "turn.completed,message.added", sid}, func(f testbin.Frame) bool {
			return f.Event == "turn.completed" || f.Event == "message.added"
		}, func(t *testing.T, lines []logLine) {
			if len(lines) != 3 {
				t.Errorf("got %d lines, want the prompt, the reply and the turn's end", len(lines))
			}
		}},
		{"from", []string{"logs", "--from", before[2].ID, sid}, func(f testbin.Frame) bool { return seqNum(f.ID) > seqNum(before[2].ID) }, func(t *testing.T, lines []logLine) {}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := d.tether(t, tc.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("got %s, want exit 0 and no stderr", r)
			}
			lines := logLines(t, r.stdout)
			if len(lines) == 0 {
				t.Fatal("got no lines")
			}
			wantIncreasing(t, lines)
			// The log may grow while the command runs, never shrink.
			wantLog(t, idsOf(lines), frameIDs(slices.DeleteFunc(slices.Clone(before), not(tc.keep))), frameIDs(slices.DeleteFunc(d.replay(t, sid), not(tc.keep))))
			tc.check(t, lines)
		})
	}

	t.Run("follow ends only when killed", func(t *testing.T) {
		f := d.follow(t, sid)
		last := before[len(before)-1].ID
		waitFor(t, "tether logs -f to print the stored log", func() bool { return strings.Contains(f.out.String(), `"id":"`+last+`"`) })
		pid := d.prompt(t, sid, "/stream 3")
		waitFor(t, "tether logs -f to print the new turn's end", func() bool {
			return slices.ContainsFunc(logLines(t, completeLines(f.out.String())), func(l logLine) bool { return l.Type == "turn.completed" && l.promptID() == pid })
		})
		if f.exited() {
			t.Fatalf("tether logs -f ended on its own (%v), want it to follow until killed\n%s", f.cmd.ProcessState, f.out.String())
		}
		f.kill()
		if ws, ok := f.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("got %v, want tether logs -f ended by the kill", f.cmd.ProcessState)
		}
		lines := logLines(t, completeLines(f.out.String()))
		wantIncreasing(t, lines)
		wantLog(t, idsOf(lines), frameIDs(before), frameIDs(d.replay(t, sid)))
	})

	t.Run("follow ends when the session is closed", func(t *testing.T) {
		f := d.follow(t, sid)
		waitFor(t, "tether logs -f to print the stored log", func() bool { return strings.Contains(f.out.String(), `"turn.completed"`) })
		d.must(t, "close", sid)
		select {
		case <-f.done:
		case <-time.After(deadline):
			t.Fatalf("tether logs -f still running %s after the session was closed", deadline)
		}
		if !f.cmd.ProcessState.Success() {
			t.Errorf("got %v, want exit 0\nstderr: %s", f.cmd.ProcessState, f.errs.String())
		}
		lines := logLines(t, f.out.String())
		if last := lines[len(lines)-1]; last.Type != "session.closed" {
			t.Errorf("got last line %s, want session.closed", last.Type)
		}
		if got, want := idsOf(lines), frameIDs(d.replay(t, sid)); !slices.Equal(got, want) {
			t.Errorf("got ids %v, want the whole stored log's %v", got, want)
		}
	})
}

// following is a running tether logs -f.
type following struct {
	cmd       *exec.Cmd
	out, errs *testbin.LogBuffer
	done      chan struct{}
}

// follow starts tether logs -f on the session; the test kills it at its
// end if it still runs.
func (d *daemon) follow(t *testing.T, sid string) *following {
	t.Helper()
	f := &following{cmd: exec.Command(tetherBin(t), "logs", "-f", sid), out: &testbin.LogBuffer{}, errs: &testbin.LogBuffer{}, done: make(chan struct{})}
	f.cmd.Env = d.env()
	f.cmd.Stdout, f.cmd.Stderr = f.out, f.errs
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = f.cmd.Wait(); close(f.done) }()
	t.Cleanup(f.kill)
	return f
}

// exited reports whether the command has ended.
func (f *following) exited() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// kill ends the command with SIGKILL (if it still runs) and waits for it.
func (f *following) kill() {
	if !f.exited() {
		_ = f.cmd.Process.Kill()
	}
	<-f.done
}

// completeLines is out up to its last newline.
func completeLines(out string) string {
	return out[:strings.LastIndexByte(out, '\n')+1]
}

// TestLogsExitCodes checks tether logs against a daemon it cannot use:
// exit 3, as for every other command (TestUnreachable, TestWrongToken).
// tether logs reads the event stream at once, with no API call before it
// that would fail the usual way: a stream that never opened must not
// retry (else the command never ends: run's timeout kills it), and its
// 401 must be exit 3 as the other calls' is.
func TestLogsExitCodes(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	closed, wrong := d.env("TETHER_ADDR="+testbin.FreeAddr(t)), d.env("TETHER_TOKEN=wrong")
	cases := []struct {
		name string
		env  []string
		args []string
		want string // on stderr
	}{
		{"unreachable", closed, []string{"logs", sid}, "connection refused"},
		{"wrong token", wrong, []string{"logs", sid}, "unauthorized"},
		{"follow with a wrong token", wrong, []string{"logs", "-f", sid}, "unauthorized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run{env: tc.env, timeout: 20 * time.Second}.tether(t, tc.args...)
			if r.code != 3 || r.stdout != "" || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("got %s, want exit 3 and %q on stderr", r, tc.want)
			}
		})
	}
}

// TestPromptWaitJSONEventsOnly checks that prompt --wait --json prints the
// session's events as tether logs does, {id, type, data} each: not the
// stream's control frames (replay_complete has no id and is no event).
func TestPromptWaitJSONEventsOnly(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	r := d.tether(t, "prompt", "--wait", "--json", sid, "/echo", "events only")
	if r.code != 0 {
		t.Fatalf("got %s, want exit 0", r)
	}
	lines := logLines(t, r.stdout)
	wantIncreasing(t, lines)
	all := frameIDs(d.replay(t, sid))
	got := idsOf(lines)
	if i := slices.Index(all, got[0]); i < 0 || len(all) < i+len(got) || !slices.Equal(got, all[i:i+len(got)]) {
		t.Errorf("got ids %v, want a run of the stored log's %v", got, all)
	}
}
