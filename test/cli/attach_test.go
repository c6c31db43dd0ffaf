package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tmuxServers numbers the private tmux servers of this process.
var tmuxServers atomic.Int64

// pane is a command running in the one pane of a private tmux server
// (tmux -L), 120×50 with a history that keeps everything printed.
type pane struct {
	t    *testing.T
	name string   // the server's socket name (-L)
	env  []string // tmux's environment: TMUX_TMPDIR is the test's
}

// startPane starts a private tmux server running argv in its one pane,
// killed when the test ends. The pane stays after argv exits, so that
// its last screen can still be read.
func startPane(t *testing.T, argv ...string) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (apt-get install tmux; .ci/run installs it)")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g history-limit 100000\nset -g remain-on-exit on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &pane{t: t, name: fmt.Sprintf("tether-cli-%d-%d", os.Getpid(), tmuxServers.Add(1)), env: append(cleanEnv(), "TMUX_TMPDIR="+dir)}
	t.Cleanup(func() { _, _ = p.tmuxErr("kill-server") })
	p.tmux(append([]string{"-f", conf, "new-session", "-d", "-s", "main", "-x", "120", "-y", "50"}, argv...)...)
	return p
}

// tmuxErr runs a tmux command on the server and returns its output.
func (p *pane) tmuxErr(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-L", p.name}, args...)...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// tmux runs a tmux command on the server, failing the test if it fails.
func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := p.tmuxErr(args...)
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return out
}

// send types text (literally) into the pane.
func (p *pane) send(text string) {
	p.t.Helper()
	p.tmux("send-keys", "-t", "main", "-l", text)
}

// key presses keys named as tmux names them (Enter, C-c).
func (p *pane) key(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", "main"}, keys...)...)
}

// line types text and Enter.
func (p *pane) line(text string) {
	p.t.Helper()
	p.send(text)
	p.key("Enter")
}

// lines is everything the pane shows and has scrolled off, wrapped lines
// joined, trailing blanks dropped.
func (p *pane) lines() []string {
	p.t.Helper()
	out := strings.Split(p.tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", "main"), "\n")
	for i, l := range out {
		out[i] = strings.TrimRight(l, " ")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// after is what follows the last line that is marker ("› TEXT", a prompt
// as attach shows it), and whether there is one.
func after(lines []string, marker string) ([]string, bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i] == marker {
			return lines[i+1:], true
		}
	}
	return nil, false
}

// waitAfter polls the pane until marker is on it and cond holds for the
// lines after it, which it returns.
func (p *pane) waitAfter(marker, what string, cond func(lines []string) bool) []string {
	p.t.Helper()
	var got []string
	end := time.Now().Add(deadline)
	for {
		all := p.lines()
		rest, ok := after(all, marker)
		if ok && cond(rest) {
			return rest
		}
		got = all
		if time.Now().After(end) {
			p.t.Fatalf("timed out after %s waiting for %s after %q; the pane:\n%s", deadline, what, marker, strings.Join(got, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// has reports whether one of lines, trimmed, is want.
func has(want string) func([]string) bool {
	return func(lines []string) bool { return slices.Contains(trimmed(lines), want) }
}

// trimmed is lines without surrounding space (the Markdown renderer
// indents).
func trimmed(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimSpace(l)
	}
	return out
}

// attachArgv is the command line of tether attach on sid in a pane: the
// daemon's address and data dir as a user's shell has them, plus env.
func (d *daemon) attachArgv(t *testing.T, sid string, env []string, flags ...string) []string {
	t.Helper()
	argv := append([]string{"env", "TETHER_ADDR=" + d.addr, "XDG_DATA_HOME=" + d.xdg}, env...)
	return append(append(append(argv, tetherBin(t), "attach"), flags...), sid)
}

// TestAttach drives tether attach through tmux, in order on one session:
// a reply rendered, a permission answered with a key, Ctrl-C cancelling
// a turn, and a kill -9 of tetherd in the middle of a streamed reply that
// the screen must show whole, once, as the transcript holds it.
func TestAttach(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	p := startPane(t, d.attachArgv(t, sid, []string{"NO_COLOR=1"}, "--style", "notty")...)

	t.Run("reply", func(t *testing.T) {
		p.t = t
		p.line("/echo some **markdown** text")
		marker := "› /echo some **markdown** text"
		rest := p.waitAfter(marker, "the turn's end", has("── turn completed (end_turn)"))
		end := slices.Index(trimmed(rest), "── turn completed (end_turn)")
		var reply []string
		for _, l := range trimmed(rest[:end]) {
			if l != "" {
				reply = append(reply, strings.ReplaceAll(l, "*", ""))
			}
		}
		if !slices.Equal(reply, []string{"some markdown text"}) {
			t.Errorf("got reply lines %q, want the one line some markdown text (emphasis rendered or not)", reply)
		}
		tr := d.transcript(t, sid)
		pid := userTurn(tr, "/echo some **markdown** text")
		if got := agentText(tr, pid); got != "some **markdown** text" || d.turn(t, sid, pid).State != "completed" {
			t.Errorf("stored: got reply %q of a %s turn, want some **markdown** text, completed", got, d.turn(t, sid, pid).State)
		}
	})

	t.Run("permission", func(t *testing.T) {
		p.t = t
		p.line("/permission")
		marker := "› /permission"
		p.waitAfter(marker, "the permission card", func(l []string) bool {
			return has("? permission: Edit demo.txt")(l) && has("[1] Allow once")(l) && has("[3] Reject")(l)
		})
		p.send("1")
		rest := trimmed(p.waitAfter(marker, "the turn's end", has("── turn completed (end_turn)")))
		answer, outcome, end := slices.Index(rest, "→ Allow once"), slices.Index(rest, "Permission outcome: selected allow_once"), slices.Index(rest, "── turn completed (end_turn)")
		if !(slices.Index(rest, "? permission: Edit demo.txt") < answer && answer < outcome && outcome < end) {
			t.Errorf("got %q, want the card, → Allow once, the outcome and the turn's end in that order", rest)
		}
		tr := d.transcript(t, sid)
		pid := userTurn(tr, "/permission")
		if got := agentText(tr, pid); !strings.Contains(got, "selected allow_once") || len(tr.PendingPermissions) != 0 || d.turn(t, sid, pid).State != "completed" {
			t.Errorf("stored: got reply %q, pending %v, want the outcome selected allow_once, none pending, the turn completed", got, tr.PendingPermissions)
		}
		var resolved []string
		for _, f := range d.replay(t, sid) {
			var data struct{ PromptId, OptionId string }
			if f.Event == "permission.resolved" && json.Unmarshal([]byte(f.Data), &data) == nil && data.PromptId == pid {
				resolved = append(resolved, data.OptionId)
			}
		}
		if !slices.Equal(resolved, []string{"allow_once"}) {
			t.Errorf("stored: got the turn's permission resolved %v, want once, allow_once", resolved)
		}
	})

	t.Run("ctrl-c", func(t *testing.T) {
		p.t = t
		p.line("/hang")
		marker := "› /hang"
		// The prompt is shown once the screen has seen its turn start
		// (turn.started comes first), so Ctrl-C is a cancel, not a detach.
		p.waitAfter(marker, "the prompt", func([]string) bool { return true })
		var pid string
		waitFor(t, "the agent to hang", func() bool {
			tr := d.transcript(t, sid)
			pid = userTurn(tr, "/hang")
			return pid != "" && agentText(tr, pid) != ""
		})
		p.key("C-c")
		rest := trimmed(p.waitAfter(marker, "the turn's end", func(l []string) bool { return slices.ContainsFunc(trimmed(l), isEnd) }))
		if !slices.Contains(rest, "── turn cancelled") {
			t.Errorf("got %q, want ── turn cancelled", rest)
		}
		if turn := d.waitTurn(t, sid, pid); turn.State != "cancelled" {
			t.Errorf("stored: got turn %s, want cancelled", turn.State)
		}
	})

	t.Run("kill -9 mid-reply", func(t *testing.T) {
		p.t = t
		const n = 400
		p.line(fmt.Sprintf("/stream %d 20 150", n))
		marker := fmt.Sprintf("› /stream %d 20 150", n)
		rest := p.waitAfter(marker, "the first chunks", func(l []string) bool { return slices.ContainsFunc(trimmed(l), isChunk) })
		if slices.ContainsFunc(trimmed(rest), isEnd) {
			t.Fatalf("the turn ended before tetherd was killed; nothing was tested:\n%s", strings.Join(rest, "\n"))
		}
		d.kill9(t)
		d.start(t)
		rest = trimmed(p.waitAfter(marker, "the turn's end", func(l []string) bool { return slices.ContainsFunc(trimmed(l), isEnd) }))

		all := p.lines()
		if c := strings.Count(strings.Join(all, "\n")+"\n", marker+"\n"); c != 1 {
			t.Errorf("got the prompt %d times on screen, want once", c)
		}
		var ends []string
		for _, l := range rest {
			if isEnd(l) {
				ends = append(ends, l)
			}
		}
		if !slices.Equal(ends, []string{"── turn completed (end_turn)"}) || slices.ContainsFunc(rest[slices.IndexFunc(rest, isEnd):], isChunk) {
			t.Errorf("got end lines %q, want ── turn completed (end_turn) once, after every chunk", ends)
		}
		// The break is noted amid the reply: chunks came before it and
		// after it.
		lost := slices.IndexFunc(rest, func(l string) bool { return strings.HasPrefix(l, "· connection lost") })
		if lost < 0 || !slices.Contains(rest, "· resumed") || !slices.ContainsFunc(rest[:lost], isChunk) || !slices.ContainsFunc(rest[lost:], isChunk) {
			t.Errorf("got %q, want the break and the resumption noted between chunks", rest)
		}
		var screen []string
		for _, l := range rest {
			if isChunk(l) {
				screen = append(screen, l)
			}
		}
		want := make([]string, n)
		for i := range want {
			want[i] = "chunk " + strconv.Itoa(i+1)
		}
		if !slices.Equal(screen, want) {
			t.Errorf("got %d chunk lines on screen, want chunk 1..%d each once in order: %s", len(screen), n, diffLines(screen, want))
		}
		tr := d.transcript(t, sid)
		pid := userTurn(tr, fmt.Sprintf("/stream %d 20 150", n))
		stored := strings.Split(strings.TrimSuffix(agentText(tr, pid), "\n"), "\n")
		if !slices.Equal(screen, stored) {
			t.Errorf("the screen's chunk lines are not the stored reply's lines: %s", diffLines(screen, stored))
		}
		if turn := d.turn(t, sid, pid); turn.State != "completed" {
			t.Errorf("stored: got turn %s, want completed", turn.State)
		}
	})
}

// isChunk reports whether a trimmed line is a /stream chunk.
func isChunk(l string) bool { return strings.HasPrefix(l, "chunk ") }

// isEnd reports whether a trimmed line is a turn's end line.
func isEnd(l string) bool { return strings.HasPrefix(l, "── turn ") }

// diffLines says where got and want first differ.
func diffLines(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("line %d: got %q, want %q (got %d lines, want %d)", i+1, got[i], want[i], len(got), len(want))
		}
	}
	return fmt.Sprintf("got %d lines, want %d", len(got), len(want))
}

// sgrColor matches an SGR escape sequence that sets a colour (30–37,
// 38;…, 40–47, 48;…, 90–97, 100–107; 39 and 49, the defaults, are none).
var sgrColor = regexp.MustCompile(`\x1b\[(?:[0-9]*;)*(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])(?:;[0-9]*)*m`)

// TestAttachNoColor checks that attach adds no colour when NO_COLOR is set
// (no-color.org; docs/cli.md), its own lines included: the prompt echo,
// the turn's end line.
func TestAttachNoColor(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	p := startPane(t, d.attachArgv(t, sid, []string{"NO_COLOR=1"})...)
	p.line("/echo plain")
	p.waitAfter("› /echo plain", "the turn's end", has("── turn completed (end_turn)"))
	screen := p.tmux("capture-pane", "-p", "-e", "-S", "-", "-E", "-", "-t", "main")
	for _, l := range strings.Split(screen, "\n") {
		if sgrColor.MatchString(l) {
			t.Errorf("got a coloured line with NO_COLOR=1: %q", l)
		}
	}
}

// TestAttachLast checks that attach shows only the latest --last turns of
// a longer session, and says how many came before and how to see them: it
// reads one page of the transcript, not the whole of it.
func TestAttachLast(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	for _, p := range []string{"/echo first turn", "/echo second turn", "/echo third turn", "/echo fourth turn"} {
		d.waitTurn(t, sid, d.prompt(t, sid, p))
	}
	p := startPane(t, d.attachArgv(t, sid, []string{"NO_COLOR=1"}, "--style", "notty", "--last", "2")...)
	p.waitAfter("· 2 earlier turns (tether export "+sid+")", "the latest two turns", has("fourth turn"))
	for _, l := range p.lines() {
		if strings.Contains(l, "first turn") || strings.Contains(l, "second turn") {
			t.Errorf("got %q on the screen, want only the latest 2 turns", l)
		}
	}
	if !slices.ContainsFunc(p.lines(), func(l string) bool { return strings.Contains(l, "third turn") }) {
		t.Errorf("got %q, want the third turn shown", p.lines())
	}
}
