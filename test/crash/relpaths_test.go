package crash_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/executor"
	"github.com/tether/tether/internal/testbin"
)

// TestRelativePathFlags: path flags given relative to the directory
// tetherd starts in name the same files for the daemon's whole life,
// whichever directory its children run in. With a relative --data-dir
// (serve on each local runtime, and a remote `tetherd host` whose every
// path flag is relative) a turn that changes a file of a git repository
// gets its checkpoint, and the diff against the turn shows the change.
func TestRelativePathFlags(t *testing.T) {
	cases := []struct {
		name string
		// executor is the session's; remote runs a `tetherd host` named so.
		executor string
		remote   bool
	}{
		{name: "serve, standalone", executor: "standalone"},
		{name: "serve, detached", executor: "detached"},
		{name: "host --listen", executor: "far", remote: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			w.relative = true
			if tc.remote {
				far := w.newRemoteHost(tc.executor, testbin.FreeAddr(t), nil)
				far.relative = true
				far.start()
				w.setHosts(far.pinned())
				w.start()
				w.waitHost(tc.executor, "connected", hostState("connected"))
			} else {
				w.start("--executor", tc.executor)
			}
			repo := newRepo(t)
			code, s := w.do(http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": repo, "executor": tc.executor})
			if code != http.StatusCreated {
				t.Fatalf("create session: got %d %v, want 201", code, s)
			}
			sid := s["id"].(string)

			w.prompt(sid, "/tool write README.md changed by the turn", "p1")
			if got := w.waitTurn(sid, "p1")["state"]; got != "completed" {
				t.Fatalf("turn p1: got state %v, want completed", got)
			}
			if b, _ := os.ReadFile(filepath.Join(repo, "README.md")); string(b) != "changed by the turn" {
				t.Fatalf("README.md after the turn: got %q, want the agent's write", b)
			}
			code, d := w.do(http.MethodGet, "/session/"+sid+"/workspace/git/diff?turn=p1", nil)
			if code != http.StatusOK {
				t.Fatalf("diff against turn p1's checkpoint: got %d %v, want 200", code, d)
			}
			if got := diffPaths(d); !slices.Equal(got, []string{"README.md"}) {
				t.Errorf("diff against turn p1: got files %v, want README.md", got)
			}
		})
	}
}

// TestTildePathFlags: a path flag that starts with "~/" names the home
// directory, as the shell would have it, also where no shell expands it:
// in an environment variable (a systemd unit's Environment=) and after
// "=" (--data-dir=~/…). Before, it was taken as relative and the daemon
// made a directory named "~" in the directory it started in. tetherd
// backup's --data-dir and OUTPUT follow the same rule.
func TestTildePathFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  []string
	}{
		{name: "--data-dir=~/…", args: []string{"--data-dir=~/tether"}},
		{name: "TETHER_DATA_DIR=~/…", env: []string{"TETHER_DATA_DIR=~/tether"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home, start := t.TempDir(), t.TempDir()
			env := append(append(os.Environ(), "HOME="+home), tc.env...)
			addr := testbin.FreeAddr(t)
			serve := exec.Command(testbin.Tetherd(t), append([]string{"serve", "--addr", addr, "--token", token, "--executor", "standalone"}, tc.args...)...)
			serve.Dir, serve.Env = start, env
			logs := &testbin.LogBuffer{}
			serve.Stdout, serve.Stderr = logs, logs
			if err := serve.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = serve.Wait(); close(done) }()
			t.Cleanup(func() { _ = serve.Process.Kill(); <-done })
			healthy := time.Now().Add(deadline)
			for {
				if resp, err := http.Get("http://" + addr + "/health"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						break
					}
				}
				select {
				case <-done:
					t.Fatalf("tetherd exited during start-up:\n%s", logs.String())
				default:
				}
				if time.Now().After(healthy) {
					t.Fatalf("tetherd not healthy within %s:\n%s", deadline, logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			_ = serve.Process.Signal(syscall.SIGTERM)
			<-done

			if _, err := os.Stat(filepath.Join(home, "tether", "tether.db")); err != nil {
				t.Errorf("database under the home directory: %v\n%s", err, logs.String())
			}
			if _, err := os.Stat(filepath.Join(start, "~")); err == nil {
				t.Errorf("got a directory named ~ in the start-up directory %s, want none", start)
			}

			backup := exec.Command(testbin.Tetherd(t), append([]string{"backup"}, append(tc.args, "~/tether.backup")...)...)
			backup.Dir, backup.Env = start, env
			if out, err := backup.CombinedOutput(); err != nil {
				t.Fatalf("tetherd backup: %v\n%s", err, out)
			}
			if _, err := os.Stat(filepath.Join(home, "tether.backup")); err != nil {
				t.Errorf("backup under the home directory: %v", err)
			}
		})
	}
}

// TestSocketPathTooLong: a data directory so deep that the unix socket
// under it cannot exist (the system limits its path to 107 bytes) is
// refused at start-up with a message that names the length and the way
// out, by serve when its default runtime is the detached host and by
// tetherd host. Before, serve started and every detached session stayed
// STARTING for a minute, then failed with "connect: invalid argument";
// the host failed with "bind: invalid argument".
func TestSocketPathTooLong(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", executor.MaxSocketPath))
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{name: "serve", args: []string{"serve", "--data-dir", deep, "--addr", testbin.FreeAddr(t), "--token", token},
			want: []string{"detached executor host's socket", "longer than", "--host-dir"}},
		{name: "host", args: []string{"host", "--data-dir", deep},
			want: []string{"--socket", "longer than", "--data-dir"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			out, err := exec.CommandContext(ctx, testbin.Tetherd(t), tc.args...).CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("tetherd %s ran for %s, want it to refuse to start:\n%s", tc.name, deadline, out)
			}
			if err == nil {
				t.Fatalf("tetherd %s: got exit 0, want a refusal:\n%s", tc.name, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("tetherd %s's output: got %q, want it to say %q", tc.name, out, w)
				}
			}
		})
	}
}
