package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/client"
	"github.com/tether/tether/internal/testbin"
)

// TestNoDaemon runs the commands that need no daemon, with TETHER_ADDR
// at a closed port: each would fail if it tried to reach one.
func TestNoDaemon(t *testing.T) {
	t.Parallel()
	env := append(cleanEnv(), "TETHER_ADDR="+testbin.FreeAddr(t), "XDG_DATA_HOME="+t.TempDir())
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, out string)
	}{
		{"version", []string{"version"}, func(t *testing.T, out string) {
			if !regexp.MustCompile(`^tether \S+ \(api \S+\)\ncommit: \S+\nbuilt: +\S+\n$`).MatchString(out) {
				t.Errorf("got %q, want tether VERSION (api V), commit and build date", out)
			}
		}},
		{"version flag", []string{"--version"}, func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "tether version tether ") {
				t.Errorf("got %q, want tether's version", out)
			}
		}},
		{"help", []string{"--help"}, func(t *testing.T, out string) {
			for _, cmd := range []string{"attach", "cancel", "close", "completion", "continue", "export", "logs", "ls", "new", "permissions", "prompt", "status", "version"} {
				if !regexp.MustCompile(`(?m)^  ` + cmd + ` +\S`).MatchString(out) {
					t.Errorf("--help does not list %s:\n%s", cmd, out)
				}
			}
		}},
		{"completion bash", []string{"completion", "bash"}, func(t *testing.T, out string) {
			wantScript(t, out, "# bash completion", "bash")
		}},
		{"completion zsh", []string{"completion", "zsh"}, func(t *testing.T, out string) {
			wantScript(t, out, "#compdef tether", "zsh")
		}},
		{"completion fish", []string{"completion", "fish"}, func(t *testing.T, out string) {
			wantScript(t, out, "complete -c tether", "fish")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run{env: env}.tether(t, tc.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("got %s, want exit 0 and no stderr", r)
			}
			tc.check(t, r.stdout)
		})
	}
}

// wantScript checks a completion script: it has marker, and the shell
// (when installed) parses it.
func wantScript(t *testing.T, script, marker, shell string) {
	t.Helper()
	if !strings.Contains(script, marker) {
		t.Fatalf("got a script without %q:\n%.300s", marker, script)
	}
	path, err := exec.LookPath(shell)
	if err != nil {
		return // not installed: the marker has to do
	}
	f := filepath.Join(t.TempDir(), "completion")
	if err := os.WriteFile(f, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(path, "-n", f).CombinedOutput(); err != nil {
		t.Errorf("%s -n: %v\n%s", shell, err, out)
	}
}

// TestUsageErrors checks that a mistake in the command line is exit 2
// with the complaint on stderr, before any daemon is asked: TETHER_ADDR is
// a closed port, where a command that tried would exit 3.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	xdg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(xdg, "tether"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "tether", "token"), []byte("some-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "TETHER_ADDR="+testbin.FreeAddr(t), "XDG_DATA_HOME="+xdg)
	cases := []struct {
		name string
		args []string
	}{
		{"unknown command", []string{"lst"}},
		{"unknown flag", []string{"ls", "--bogus"}},
		{"unknown global flag", []string{"--bogus", "ls"}},
		{"bad flag value", []string{"ls", "--limit", "many"}},
		{"limit zero", []string{"ls", "--limit", "0"}},
		{"ls with an argument", []string{"ls", "extra"}},
		{"prompt without arguments", []string{"prompt"}},
		{"prompt without text", []string{"prompt", "some-session"}},
		{"empty prompt", []string{"prompt", "some-session", " "}},
		{"cancel without session", []string{"cancel"}},
		{"continue without session", []string{"continue"}},
		{"logs without session", []string{"logs"}},
		{"attach without session", []string{"attach"}},
		{"export without session", []string{"export"}},
		{"bad format", []string{"export", "--format", "pdf", "some-session"}},
		{"status with two sessions", []string{"status", "a", "b"}},
		{"close without session", []string{"close"}},
		{"answer without option", []string{"permissions", "answer", "some-session", "some-request"}},
		{"answer with option and cancel", []string{"permissions", "answer", "--cancel", "some-session", "some-request", "allow_once"}},
		{"new with a bad bool", []string{"new", "--wait=maybe"}},
		{"version with an argument", []string{"version", "extra"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run{env: env}.tether(t, tc.args...)
			if r.code != 2 {
				t.Fatalf("got %s, want exit 2", r)
			}
			if r.stdout != "" || !strings.HasPrefix(r.stderr, "tether: ") || !strings.Contains(r.stderr, "--help") {
				t.Errorf("got %s, want the mistake and where help is on stderr, nothing on stdout", r)
			}
		})
	}
}

// TestUnreachable checks that every command that needs the daemon exits 3
// when TETHER_ADDR is a closed port, or when no token is found.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	d := startDaemon(t) // only its token file and a real session id
	sid, _ := d.createSession(t)
	closed := append(d.env(), "TETHER_ADDR="+testbin.FreeAddr(t))
	noToken := append(d.env(), "XDG_DATA_HOME="+t.TempDir())
	cases := []struct {
		name string
		env  []string
		args []string
		want string // on stderr
	}{
		{"ls", closed, []string{"ls"}, "connection refused"},
		{"status", closed, []string{"status"}, "connection refused"},
		{"session status", closed, []string{"status", sid}, "connection refused"},
		{"new", closed, []string{"new", "--agent", "demo", "--cwd", d.root}, "connection refused"},
		{"new without agent", closed, []string{"new", "--cwd", d.root}, "connection refused"},
		{"prompt", closed, []string{"prompt", sid, "hello"}, "connection refused"},
		{"prompt wait", closed, []string{"prompt", "--wait", sid, "hello"}, "connection refused"},
		{"continue", closed, []string{"continue", sid}, "connection refused"},
		{"cancel", closed, []string{"cancel", sid}, "connection refused"},
		{"permissions", closed, []string{"permissions"}, "connection refused"},
		{"answer", closed, []string{"permissions", "answer", sid, "r", "allow_once"}, "connection refused"},
		{"export", closed, []string{"export", sid}, "connection refused"},
		{"close", closed, []string{"close", sid}, "connection refused"},
		{"attach", closed, []string{"attach", sid}, "connection refused"},
		{"no token", noToken, []string{"ls"}, "no token"},
		{"no token logs", noToken, []string{"logs", sid}, "no token"},
	}
	t.Run("commands", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := run{env: tc.env, timeout: 20 * time.Second}.tether(t, tc.args...)
				if r.code != 3 || r.stdout != "" || !strings.Contains(r.stderr, tc.want) {
					t.Errorf("got %s, want exit 3 and %q on stderr", r, tc.want)
				}
			})
		}
	})
	if n := len(d.transcript(t, sid).Turns); n != 0 {
		t.Errorf("got %d turns, want none: no command reached the daemon", n)
	}
}

// TestWrongToken checks that a token that is not the daemon's is exit 3,
// said plainly, and changes nothing.
func TestWrongToken(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	wrongFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(wrongFile, []byte("wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := d.env("TETHER_TOKEN=wrong")
	cases := []struct {
		name string
		env  []string
		args []string
	}{
		{"ls", wrong, []string{"ls"}},
		{"status", wrong, []string{"status"}},
		{"session status", wrong, []string{"status", sid}},
		{"new", wrong, []string{"new", "--agent", "demo", "--cwd", d.root}},
		{"prompt", wrong, []string{"prompt", sid, "/echo", "not sent"}},
		{"prompt wait", wrong, []string{"prompt", "--wait", sid, "/echo", "not sent"}},
		{"cancel", wrong, []string{"cancel", sid}},
		{"permissions", wrong, []string{"permissions"}},
		{"export", wrong, []string{"export", sid}},
		{"attach", wrong, []string{"attach", sid}},
		{"close", wrong, []string{"close", sid}},
		{"token file", d.env(), []string{"--token-file", wrongFile, "ls"}},
		{"token file variable", d.env("TETHER_TOKEN_FILE=" + wrongFile), []string{"ls"}},
	}
	t.Run("commands", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := run{env: tc.env}.tether(t, tc.args...)
				if r.code != 3 || r.stdout != "" || !strings.Contains(r.stderr, "unauthorized") {
					t.Errorf("got %s, want exit 3 and unauthorized on stderr", r)
				}
			})
		}
	})
	if n := len(d.apiSessions(t, "limit=50")); n != 1 {
		t.Errorf("got %d sessions, want 1: a refused command created one", n)
	}
	if s := d.session(t, sid); len(d.transcript(t, sid).Turns) != 0 || s.State == "COMPLETED" {
		t.Errorf("got session %s with %d turns, want it untouched", s.State, len(d.transcript(t, sid).Turns))
	}
	t.Run("right token in the variable", func(t *testing.T) {
		r := run{env: d.env("TETHER_TOKEN="+d.tokenNow(), "XDG_DATA_HOME="+t.TempDir())}.tether(t, "ls", "--json")
		var got []client.Session
		if r.code != 0 {
			t.Fatalf("got %s, want exit 0", r)
		}
		decode(t, r.stdout, &got)
		if len(got) != 1 || got[0].Id != sid {
			t.Errorf("got %v, want [%s]", sessionIDs(got), sid)
		}
	})
}

// TestRefused checks that what the daemon refuses is exit 1 with its
// stable problem code.
func TestRefused(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"status", []string{"status", "no-such-session"}, "session_not_found"},
		{"prompt", []string{"prompt", "no-such-session", "hello"}, "session_not_found"},
		{"export", []string{"export", "no-such-session"}, "session_not_found"},
		{"logs", []string{"logs", "no-such-session"}, "session_not_found"},
		{"attach", []string{"attach", "no-such-session"}, "session_not_found"},
		{"unknown agent", []string{"new", "--agent", "no-such-agent", "--cwd", d.root}, "agent"},
		{"unknown state", []string{"ls", "--state", "sleeping"}, "validation_failed"},
	}
	t.Run("commands", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := d.tether(t, tc.args...)
				if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, "tether: ") || !strings.Contains(r.stderr, tc.want) {
					t.Errorf("got %s, want exit 1 and %q on stderr", r, tc.want)
				}
			})
		}
	})
	if got := d.apiSessions(t, "limit=50"); len(got) != 0 {
		t.Errorf("got sessions %v, want none", got)
	}
}

// TestCompletionUnknownShell checks that a shell tether has no completion
// for is a usage error (exit 2), where cobra's own completion command
// takes an argument it does not know for a help request (its help on
// stdout, exit 0).
func TestCompletionUnknownShell(t *testing.T) {
	t.Parallel()
	env := append(cleanEnv(), "TETHER_ADDR="+testbin.FreeAddr(t), "XDG_DATA_HOME="+t.TempDir())
	r := run{env: env}.tether(t, "completion", "tcsh")
	if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "tether: ") {
		t.Errorf("got %s, want exit 2 and the mistake on stderr", r)
	}
}

// TestFindDaemon checks how tether finds the daemon and its token
// (docs/cli.md, Finding the daemon): each way, alone, lists the session.
func TestFindDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	closed := "TETHER_ADDR=" + testbin.FreeAddr(t)
	noDataDir := "XDG_DATA_HOME=" + t.TempDir()
	tokenFile := filepath.Join(d.dir, "token")
	cases := []struct {
		name string
		env  []string
		args []string
	}{
		{"the data dir of XDG_DATA_HOME", d.env(), nil},
		{"an address as a URL", d.env("TETHER_ADDR=" + d.base), nil},
		{"--addr over TETHER_ADDR", d.env(closed), []string{"--addr", d.addr}},
		{"TETHER_DATA_DIR", d.env(noDataDir, "TETHER_DATA_DIR="+d.dir), nil},
		{"TETHER_TOKEN_FILE", d.env(noDataDir, "TETHER_TOKEN_FILE="+tokenFile), nil},
		{"--token-file", d.env(noDataDir), []string{"--token-file", tokenFile}},
		{"TETHER_TOKEN", d.env(noDataDir, "TETHER_TOKEN="+d.tokenNow()), nil},
		{"HOME", append(cleanEnv(), "TETHER_ADDR="+d.addr, "HOME="+d.root), nil},
	}
	// HOME/.local/share/tether is the data dir when XDG_DATA_HOME is unset.
	home := d.root
	if err := os.MkdirAll(filepath.Join(home, ".local", "share"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(d.dir, filepath.Join(home, ".local", "share", "tether")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run{env: tc.env}.tether(t, append(tc.args, "ls", "--json")...)
			if r.code != 0 {
				t.Fatalf("got %s, want exit 0", r)
			}
			var got []client.Session
			decode(t, r.stdout, &got)
			if !slices.Equal(sessionIDs(got), []string{sid}) {
				t.Errorf("got %v, want [%s]", sessionIDs(got), sid)
			}
		})
	}
}
