package sandbox_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// needBwrap fails under CI (which installs bubblewrap) and skips loudly
// elsewhere when bubblewrap does not work here.
func needBwrap(t *testing.T) {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap must work under CI: %v", err)
		}
		t.Skipf("SKIPPING: bubblewrap does not work here: %v", err)
	}
}

func TestPolicyCheck(t *testing.T) {
	cases := []struct {
		name   string
		policy sandbox.Policy
		bad    string // "" for valid, else a word of the error
	}{
		{name: "zero", policy: sandbox.Policy{}},
		{name: "full", policy: sandbox.Policy{Mode: "required", Network: "loopback", Writable: []string{"~/.x", "/abs"}, Readable: []string{"/r"}, Ports: []int{8080}}},
		{name: "bad mode", policy: sandbox.Policy{Mode: "on"}, bad: "mode"},
		{name: "bad network", policy: sandbox.Policy{Network: "lan"}, bad: "network"},
		{name: "relative writable", policy: sandbox.Policy{Writable: []string{"rel/dir"}}, bad: "writable[0]"},
		{name: "relative readable", policy: sandbox.Policy{Readable: []string{"/ok", "~x"}}, bad: "readable[1]"},
		{name: "port out of range", policy: sandbox.Policy{Network: "loopback", Ports: []int{0}}, bad: "ports[0]"},
		{name: "ports without loopback", policy: sandbox.Policy{Network: "all", Ports: []int{80}}, bad: "loopback only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.policy.Check()
			switch {
			case c.bad == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
				t.Fatalf("got %v, want an error naming %q", err, c.bad)
			}
		})
	}
}

func TestMergeKeepsNilApartFromEmpty(t *testing.T) {
	profile := sandbox.Policy{Mode: "required", Network: "none", Writable: []string{"~/.claude"}}
	got := sandbox.Policy{Writable: []string{}}.Merge(profile)
	if got.Mode != "required" || got.Network != "none" || got.Writable == nil || len(got.Writable) != 0 {
		t.Fatalf("got %+v, want the profile's mode and network and no writable dirs", got)
	}
	round, err := sandbox.Decode(got.Encode())
	if err != nil || round.Writable == nil || round.Readable != nil {
		t.Fatalf("round trip: got %+v (%v), want writable [] and readable nil", round, err)
	}
	if d := (sandbox.Policy{}).Defaults(); d.Mode != sandbox.ModeAuto || d.Network != sandbox.NetworkAll {
		t.Fatalf("defaults: got %+v, want auto and all", d)
	}
}

func TestWithoutBubblewrap(t *testing.T) {
	t.Setenv(sandbox.BwrapEnv, filepath.Join(t.TempDir(), "no-bwrap"))
	l, err := sandbox.Prepare(sandbox.Spec{}, "/bin/true", nil, t.TempDir(), nil, false)
	if err != nil || l.Sandboxed || l.Path != "/bin/true" || !strings.Contains(l.Reason, "not found") {
		t.Fatalf("auto: got %+v, %v; want the command unsandboxed, with why", l, err)
	}
	_, err = sandbox.Prepare(sandbox.Spec{Policy: sandbox.Policy{Mode: sandbox.ModeRequired}}, "/bin/true", nil, t.TempDir(), nil, false)
	if !errcode.Is(err, errcode.SandboxUnavailable) {
		t.Fatalf("required: got %v, want %s", err, errcode.SandboxUnavailable)
	}
	l, err = sandbox.Prepare(sandbox.Spec{Policy: sandbox.Policy{Mode: sandbox.ModeOff}}, "/bin/true", nil, t.TempDir(), nil, false)
	if err != nil || l.Sandboxed || l.Reason != "sandbox mode off" {
		t.Fatalf("off: got %+v, %v", l, err)
	}
}

// world is the file system a sandboxed shell is tried in: a session's
// directory, a data dir with a token (hidden), another session's
// directory, the agent's state, and a loopback listener.
type world struct {
	cwd, data, other, state, inner string
	port                           int
}

func newWorld(t *testing.T) world {
	t.Helper()
	root := t.TempDir()
	w := world{cwd: filepath.Join(root, "cwd"), data: filepath.Join(root, "data"), other: filepath.Join(root, "other"),
		state: filepath.Join(root, "state")}
	// A data dir inside the session's directory: hidden there too.
	w.inner = filepath.Join(w.cwd, "tetherd-data")
	for _, d := range []string{w.cwd, w.data, w.other, w.state, w.inner} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "token"), []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	w.port = ln.Addr().(*net.TCPAddr).Port
	return w
}

// run runs script with bash in the sandbox of policy and returns its
// output and exit code.
func (w world) run(t *testing.T, policy sandbox.Policy, script string) (string, int) {
	t.Helper()
	return w.runIn(t, policy, w.cwd, script)
}

// runIn is run with dir as the session's directory.
func (w world) runIn(t *testing.T, policy sandbox.Policy, dir, script string) (string, int) {
	t.Helper()
	spec := sandbox.Spec{Policy: policy, Hidden: []string{w.data, w.inner}, Self: testbin.Tetherd(t)}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(w.cwd, "..", "home"), "CWD=" + w.cwd, "DATA=" + w.data,
		"OTHER=" + w.other, "STATE=" + w.state, "INNER=" + w.inner, "PORT=" + strconv.Itoa(w.port), "OUTER_PID=" + strconv.Itoa(os.Getpid())}
	l, err := sandbox.Prepare(spec, "/usr/bin/bash", []string{"-c", script}, dir, env, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.Sandboxed {
		t.Fatalf("not sandboxed: %s", l.Reason)
	}
	cmd := exec.Command(l.Path, l.Args...)
	cmd.Env, cmd.Dir = env, dir
	if err := l.Configure(cmd); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A tree that outlived the agent would hold the output open: the
	// wait gives up on it after a while, and the test below sees it.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Start()
	l.Started()
	if err == nil {
		err = cmd.Wait()
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

func TestSandboxedShell(t *testing.T) {
	needBwrap(t)
	w := newWorld(t)
	writable := sandbox.Policy{Writable: []string{w.state}}
	cases := []struct {
		name   string
		policy sandbox.Policy
		script string
		// ok: the script must succeed (exit 0), else fail.
		ok bool
	}{
		{name: "the session's directory is writable", policy: writable, script: `echo hi > "$CWD/f" && cat "$CWD/f"`, ok: true},
		{name: "the agent's state is writable", policy: writable, script: `echo kept > "$STATE/x"`, ok: true},
		{name: "the data dir is invisible", policy: writable, script: `cat "$DATA/token"`},
		{name: "a data dir inside the session's directory is hidden", policy: writable, script: `cat "$INNER/token"`},
		{name: "another session's directory is invisible", policy: writable, script: `ls "$OTHER"`},
		{name: "the system is read-only", policy: writable, script: `touch /usr/tether-sandbox-probe`},
		{name: "HOME is a throwaway directory", policy: writable, script: `echo x > "$HOME/.profile-probe" && test ! -e /root/.bashrc-never`, ok: true},
		{name: "no process outside is visible", policy: writable, script: `test ! -e /proc/$OUTER_PID && test $(ls /proc | grep -c '^[0-9]') -lt 10`, ok: true},
		{name: "network all reaches loopback", policy: writable, script: `exec 3<>/dev/tcp/127.0.0.1/$PORT && head -1 <&3`, ok: true},
		{name: "network none reaches nothing", policy: sandbox.Policy{Network: "none"}, script: `exec 3<>/dev/tcp/127.0.0.1/$PORT`},
		{name: "network loopback reaches a listed port", policy: sandbox.Policy{Network: "loopback", Ports: []int{w.port}},
			script: `exec 3<>/dev/tcp/127.0.0.1/$PORT && head -1 <&3 | grep -q hello`, ok: true},
		{name: "network loopback reaches no other port", policy: sandbox.Policy{Network: "loopback", Ports: []int{w.port + 1}},
			script: `exec 3<>/dev/tcp/127.0.0.1/$PORT && head -1 <&3 | grep -q hello`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := w.run(t, c.policy, c.script)
			if got := code == 0; got != c.ok {
				t.Fatalf("got exit %d, want success %v; output:\n%s", code, c.ok, out)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(w.state, "x")); err != nil || string(b) != "kept\n" {
		t.Fatalf("state written inside: got %q, %v; want it kept outside", b, err)
	}
	if _, err := os.Stat("/usr/tether-sandbox-probe"); err == nil {
		t.Fatal("a sandboxed shell wrote under /usr")
	}
}

// TestTheTreeEndsWithTheAgent: a tool the agent leaves running in the
// background, in a session and process group of its own, ends with it.
func TestTheTreeEndsWithTheAgent(t *testing.T) {
	needBwrap(t)
	w := newWorld(t)
	marker := fmt.Sprintf("tether-orphan-%d", time.Now().UnixNano())
	out, code := w.run(t, sandbox.Policy{}, `setsid bash -c 'sleep 600; : `+marker+`' >/dev/null 2>&1 & sleep 0.2; exit 0`)
	if code != 0 {
		t.Fatalf("got exit %d: %s", code, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := processesWith(t, marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after the agent ended: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesWith lists the pids whose command line holds marker.
func processesWith(t *testing.T, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestTheAgentHasNoTerminal: run from a terminal, a sandboxed agent
// cannot open it (/dev/tty), so it cannot push input into the user's
// shell; unsandboxed (mode off) it can, which shows the check can fail.
func TestTheAgentHasNoTerminal(t *testing.T) {
	needBwrap(t)
	w := newWorld(t)
	script := `if (: > /dev/tty) 2>/dev/null; then echo HAS-TTY; else echo NO-TTY; fi`
	cases := []struct {
		name   string
		policy sandbox.Policy
		want   string
	}{
		{name: "sandboxed", want: "NO-TTY"},
		{name: "mode off", policy: sandbox.Policy{Mode: sandbox.ModeOff}, want: "HAS-TTY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := []string{"PATH=/usr/bin:/bin", "HOME=" + w.cwd}
			l, err := sandbox.Prepare(sandbox.Spec{Policy: c.policy, Self: testbin.Tetherd(t)}, "/usr/bin/bash", []string{"-c", script}, w.cwd, env, false)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			cmd := exec.Command(l.Path, l.Args...)
			cmd.Env, cmd.Dir = env, w.cwd
			if err := l.Configure(cmd); err != nil {
				t.Fatal(err)
			}
			// The terminal is the launching process's controlling one, as
			// tetherd's is when it runs in a terminal.
			f, err := pty.Start(cmd)
			l.Started()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			out, _ := io.ReadAll(f) // until EIO: everything on the terminal has closed it
			_ = cmd.Wait()
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("got %q, want %s", out, c.want)
			}
		})
	}
}

// TestAWorktreeSeesItsRepository: in a git worktree the agent sees (and
// writes) its repository's git directory, where the worktree's index,
// HEAD and objects live, and so works with git; the repository's own
// checkout stays unseen.
func TestAWorktreeSeesItsRepository(t *testing.T) {
	needBwrap(t)
	w := newWorld(t)
	repo, wt := filepath.Join(w.other, "repo"), filepath.Join(w.other, "wt")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	git(repo, "add", "a.txt")
	git(repo, "commit", "-qm", "one")
	git(repo, "worktree", "add", "-q", "--detach", wt)
	script := `set -e
export GIT_CONFIG_GLOBAL=/dev/null
git status --porcelain
echo b > b.txt && git add b.txt && git -c user.name=a -c user.email=a@a commit -qm two
git worktree list | grep -q "` + repo + `"
test ! -e "` + filepath.Join(repo, "a.txt") + `"`
	if out, code := w.runIn(t, sandbox.Policy{}, wt, script); code != 0 {
		t.Fatalf("git in a worktree: exit %d\n%s", code, out)
	}
	cmd := exec.Command("git", "log", "--format=%s", "-1")
	cmd.Dir = wt
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "two" {
		t.Fatalf("the commit made inside: got %q, %v", out, err)
	}
}
