package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tether/tether/client"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// sharedDaemon is a daemon built once and shared by every run of a
// benchmark (-count): its setup is costly.
type sharedDaemon struct {
	once sync.Once
	d    *daemon
	sid  string // the session a benchmark reads
	err  string // why the setup failed
}

// get builds the daemon with setup on first use and returns it; the
// daemon is closed by TestMain. A setup that failed once fails every
// later run.
func (s *sharedDaemon) get(b *testing.B, setup func(b *testing.B, d *daemon) string) *daemon {
	b.Helper()
	s.once.Do(func() {
		root, err := os.MkdirTemp("", "tether-cli-bench-")
		if err != nil {
			s.err = err.Error()
			return
		}
		d := newDaemon(b, root)
		keepFixture(func() {
			d.tb = nil // the benchmark that made it is over
			d.close(func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) })
			_ = os.RemoveAll(root)
		})
		ok := false
		defer func() {
			if !ok && s.err == "" {
				s.err = "the shared daemon's setup failed (see the first run)"
			}
		}()
		s.sid = setup(b, d)
		d.tb = nil // shared: no one test's failure to report to
		s.d, ok = d, true
	})
	if s.d == nil {
		b.Fatal(s.err)
	}
	return s.d
}

var ls10k sharedDaemon

// nSeeded is how many sessions BenchmarkLs10k's database holds.
const nSeeded = 10_000

// seedSessions writes n sessions into the daemon's database before it
// starts, through internal/store as the daemon writes them: each with a
// task of its own (a session created without one gets one), the demo
// agent, a title, on the detached executor; nine in ten closed
// (COMPLETED), the rest idle (WAITING_FOR_INPUT with no agent running, as
// after the agent idle timeout). Creating them through the API would
// start an agent for each; the sessions' events are left out (tether ls
// reads no event).
func seedSessions(b *testing.B, d *daemon, n int) {
	b.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(d.dir, "tether.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cwd := d.newCwd(b)
	const batch = 500
	for start := 0; start < n; start += batch {
		err := st.Tx(ctx, func(tx *store.Store) error {
			for i := start; i < min(start+batch, n); i++ {
				title := fmt.Sprintf("seeded session %d", i)
				task, err := tx.CreateTask(ctx, session.Task{Title: title, Workspace: cwd})
				if err != nil {
					return err
				}
				state := session.SessionCompleted
				if i%10 == 0 {
					state = session.SessionWaitingForInput
				}
				_, err = tx.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: cwd, Title: title, State: state, Prompted: true},
					session.Executor{Runtime: session.RuntimeDetached, Host: "local", Status: session.ExecutorStopped})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatalf("seed sessions %d..: %v", start, err)
		}
	}
}

// BenchmarkLs10k times `tether ls` from exec to exit against a daemon
// whose database holds 10,000 sessions: the default listing (the newest
// 50) and, for scale, --all --json (every session, page by page).
func BenchmarkLs10k(b *testing.B) {
	d := ls10k.get(b, func(b *testing.B, d *daemon) string {
		seedSessions(b, d, nSeeded)
		d.start(b)
		// Once: the listing is whole and the daemon started no agent for
		// the seeded sessions.
		r := run{env: d.env()}.tether(b, "ls", "--all", "--json")
		var all []client.Session
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &all) != nil {
			b.Fatalf("tether ls --all --json: got %s, want the sessions as JSON", r)
		}
		ids := sessionIDs(all)
		slices.Sort(ids)
		if len(slices.Compact(ids)) != nSeeded {
			b.Fatalf("tether ls --all: got %d distinct sessions of %d listed, want %d", len(ids), len(all), nSeeded)
		}
		var busy client.SessionList
		d.get(b, "/sessions?state=STARTING,RUNNING", &busy)
		if len(busy.Sessions) != 0 {
			b.Fatalf("the daemon is starting or running %d seeded sessions, want none", len(busy.Sessions))
		}
		return ""
	})
	for _, bc := range []struct {
		name  string
		args  []string
		lines int // of stdout
	}{
		{"default", []string{"ls"}, 51},
		{"all-json", []string{"ls", "--all", "--json"}, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := run{env: d.env()}
			for b.Loop() {
				res := r.tether(b, bc.args...)
				if res.code != 0 {
					b.Fatalf("got %s, want exit 0", res)
				}
				if bc.lines > 0 && strings.Count(res.stdout, "\n") != bc.lines {
					b.Fatalf("got %d lines, want %d", strings.Count(res.stdout, "\n"), bc.lines)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/op")
		})
	}
}

var attach50 sharedDaemon

// nTurns is how many turns BenchmarkAttachFirstScreen's session has.
const nTurns = 50

// latestReply is the reply of the session's latest turn: the line the
// first screen must show.
const latestReply = "the latest reply, of turn 50"

// BenchmarkAttachFirstScreen times `tether attach` on a session of 50
// turns, in a 120×50 pseudo-terminal, from exec until the screen shows
// the latest turn's reply (the attach then detaches with Ctrl-D, untimed):
// with the default style on an xterm-256color terminal, and with NO_COLOR.
func BenchmarkAttachFirstScreen(b *testing.B) {
	d := attach50.get(b, func(b *testing.B, d *daemon) string {
		d.start(b)
		sid, _ := d.createSession(b)
		for i := 1; i <= nTurns; i++ {
			text := fmt.Sprintf("/echo reply of turn %d with **some** `markdown`", i)
			if i == nTurns {
				text = "/echo " + latestReply
			}
			if turn := d.waitTurn(b, sid, d.prompt(b, sid, text)); turn.State != "completed" {
				b.Fatalf("turn %d: got %s, want completed", i, turn.State)
			}
		}
		return sid
	})
	sid := attach50.sid
	for _, bc := range []struct {
		name string
		env  []string
	}{
		{"style-auto", []string{"TERM=xterm-256color"}},
		{"no-color", []string{"TERM=xterm-256color", "NO_COLOR=1"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				total += firstScreen(b, d.env(bc.env...), sid)
			}
			b.ReportMetric(float64(total)/float64(b.N)/1e6, "ms/op")
		})
	}
}

// ansiSeq matches terminal escape sequences (CSI and OSC).
var ansiSeq = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)`)

// firstScreen runs tether attach on sid in a pseudo-terminal and returns
// the time from exec until its output has a line that is latestReply;
// the detach that follows is not timed.
func firstScreen(b *testing.B, env []string, sid string) time.Duration {
	b.Helper()
	cmd := exec.Command(tetherBin(b), "attach", sid)
	cmd.Env = env
	start := time.Now()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 120})
	if err != nil {
		b.Fatal(err)
	}
	shown := make(chan time.Duration, 1)
	done := make(chan []byte, 1)
	go func() {
		var out []byte
		buf := make([]byte, 64<<10)
		found := false
		for {
			n, err := tty.Read(buf)
			out = append(out, buf[:n]...)
			if !found && n > 0 && hasLine(out, latestReply) {
				found = true
				shown <- time.Since(start)
			}
			if err != nil {
				done <- out
				return
			}
		}
	}()
	var took time.Duration
	select {
	case took = <-shown:
	case <-time.After(deadline):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = tty.Close()
		b.Fatalf("tether attach did not show %q within %s; it showed:\n%s", latestReply, deadline, <-done)
	}
	b.StopTimer()
	defer b.StartTimer()
	if _, err := tty.Write([]byte{4}); err != nil { // Ctrl-D on the empty line: detach
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-time.After(deadline):
		_ = cmd.Process.Kill()
		err = fmt.Errorf("still running %s after Ctrl-D: %w", deadline, <-exited)
	}
	_ = tty.Close()
	<-done
	if err != nil {
		b.Fatalf("tether attach: %v", err)
	}
	return took
}

// hasLine reports whether the terminal output has a line that shows
// want, escape sequences and surrounding space aside.
func hasLine(out []byte, want string) bool {
	if !bytes.Contains(out, []byte(strings.Fields(want)[0])) {
		return false
	}
	for _, l := range strings.Split(ansiSeq.ReplaceAllString(string(out), ""), "\n") {
		// A line in raw mode ends in \r\n; the line being typed is redrawn
		// after a \r (and an erase): what a line shows is after its last.
		l = strings.TrimRight(l, "\r")
		if i := strings.LastIndexByte(l, '\r'); i >= 0 {
			l = l[i+1:]
		}
		if strings.TrimSpace(l) == want {
			return true
		}
	}
	return false
}
