package main_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// subcommands are the commands `tetherd --help` must list.
var subcommands = []string{"serve", "host", "demo-agent", "backup", "version", "help", "completion"}

// cliRun is one run of the real binary: its exit status and output.
type cliRun struct {
	code           int
	stdout, stderr string
}

// isolatedEnv is the environment of a tetherd that must not touch the
// user's files: no TETHER_* variable, and HOME and the XDG directories
// (where the data dir and the demo agent's state default to) inside root,
// which does not exist yet. Anything tetherd creates shows up there.
func isolatedEnv(root string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "TETHER_") || k == "HOME" || strings.HasPrefix(k, "XDG_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+filepath.Join(root, "home"), "XDG_DATA_HOME="+filepath.Join(root, "data"),
		"XDG_CACHE_HOME="+filepath.Join(root, "cache"), "XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"XDG_STATE_HOME="+filepath.Join(root, "state"))
}

// runCLI runs bin with args in an isolated environment rooted at root,
// with nothing on stdin, and fails t if it does not end within 30 s.
func runCLI(t *testing.T, bin, root string, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = isolatedEnv(root)
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tetherd %s did not exit within 30 s (it may have started the daemon)\nstderr:\n%s", strings.Join(args, " "), stderr.String())
	}
	run := cliRun{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return run
}

// TestCommandLine drives tetherd's command line as a new user would, with
// a fresh HOME and XDG_DATA_HOME: the help lists the commands, completion
// scripts come out, and every mistake (an unknown command or flag, a bad
// value, a stray argument) exits 2 naming it. No case starts the daemon
// or creates anything: no data dir, no database, no token.
func TestCommandLine(t *testing.T) {
	bin := binary(t)
	cases := []struct {
		name string
		args []string
		code int
		// stdout and stderr must contain each of theirs.
		stdout, stderr []string
		// listsCommands: stdout lists every subcommand with its
		// description, and not the internal sandbox-init.
		listsCommands bool
	}{
		{name: "--help", args: []string{"--help"}, listsCommands: true, stdout: []string{"Exit status", "2  usage error"}},
		{name: "-h", args: []string{"-h"}, listsCommands: true},
		{name: "help", args: []string{"help"}, listsCommands: true},
		{name: "help serve", args: []string{"help", "serve"}, stdout: []string{"usage: tetherd [serve]", "--addr", "TETHER_ADDR"}},
		{name: "serve --help", args: []string{"serve", "--help"}, stdout: []string{"usage: tetherd [serve]", "--data-dir", "--executor"}},
		{name: "host --help", args: []string{"host", "--help"}, stdout: []string{"usage: tetherd host", "--socket"}},
		{name: "host ls --help", args: []string{"host", "ls", "--help"}, stdout: []string{"usage: tetherd host ls", "--json"}},
		{name: "help host ls", args: []string{"help", "host", "ls"}, stdout: []string{"usage: tetherd host ls"}},
		{name: "demo-agent --help", args: []string{"demo-agent", "--help"}, stdout: []string{"-state-dir"}},
		{name: "backup --help", args: []string{"backup", "--help"}, stdout: []string{"usage: tetherd backup"}},
		{name: "completion bash", args: []string{"completion", "bash"}, stdout: []string{"tetherd", "bash completion"}},
		{name: "completion zsh", args: []string{"completion", "zsh"}, stdout: []string{"#compdef tetherd"}},
		{name: "completion fish", args: []string{"completion", "fish"}, stdout: []string{"complete -c tetherd"}},
		{name: "version", args: []string{"version"}, stdout: []string{"tetherd ", "(api ", "commit: ", "built: "}},
		{name: "--version", args: []string{"--version"}, stdout: []string{"tetherd ", "(api ", "commit: ", "built: "}},

		{name: "unknown command", args: []string{"sevre"}, code: 2, stderr: []string{`"sevre"`, "Did you mean this?", "serve", "tetherd --help"}},
		{name: "unknown command start", args: []string{"start"}, code: 2, stderr: []string{`"start"`}},
		{name: "unknown flag at the root", args: []string{"--bogus"}, code: 2, stderr: []string{"bogus", "tetherd serve --help"}},
		{name: "unknown flag of serve", args: []string{"serve", "--bogus"}, code: 2, stderr: []string{"bogus", "tetherd serve --help"}},
		{name: "bad value of serve", args: []string{"serve", "--queue-limit", "many"}, code: 2, stderr: []string{"queue-limit", "many"}},
		{name: "bad value of serve checked after parsing", args: []string{"--resume-on-start", "soon"}, code: 2, stderr: []string{"--resume-on-start", "soon"}},
		{name: "bad log level of serve", args: []string{"serve", "--log-level", "loud"}, code: 2, stderr: []string{"--log-level", "loud"}},
		{name: "argument to serve", args: []string{"serve", "sevre"}, code: 2, stderr: []string{"sevre"}},
		{name: "unknown flag of host", args: []string{"host", "--bogus"}, code: 2, stderr: []string{"bogus", "tetherd host --help"}},
		{name: "unknown host subcommand", args: []string{"host", "lss"}, code: 2, stderr: []string{"lss"}},
		{name: "unknown flag of host ls", args: []string{"host", "ls", "--bogus"}, code: 2, stderr: []string{"bogus", "tetherd host ls --help"}},
		{name: "unknown flag of backup", args: []string{"backup", "--bogus", "out.db"}, code: 2, stderr: []string{"bogus"}},
		{name: "unknown flag of demo-agent", args: []string{"demo-agent", "--bogus"}, code: 2, stderr: []string{"bogus"}},
		{name: "unknown shell", args: []string{"completion", "tcsh"}, code: 2, stderr: []string{`"tcsh"`}},
		{name: "argument to version", args: []string{"version", "now"}, code: 2, stderr: []string{`"now"`}},
		{name: "unknown help topic", args: []string{"help", "sevre"}, code: 2, stderr: []string{`"sevre"`, "serve"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			got := runCLI(t, bin, root, tc.args...)
			if got.code != tc.code {
				t.Fatalf("tetherd %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), got.code, tc.code, got.stdout, got.stderr)
			}
			if tc.code == 0 && strings.TrimSpace(got.stdout+got.stderr) == "" {
				t.Errorf("printed nothing")
			}
			for _, want := range tc.stdout {
				if !strings.Contains(got.stdout, want) {
					t.Errorf("stdout does not contain %q:\n%s", want, got.stdout)
				}
			}
			for _, want := range tc.stderr {
				if !strings.Contains(got.stderr, want) {
					t.Errorf("stderr does not contain %q:\n%s", want, got.stderr)
				}
			}
			if tc.listsCommands {
				for _, sub := range subcommands {
					if !strings.Contains(got.stdout, "\n  "+sub+" ") {
						t.Errorf("the help does not list %s with its description:\n%s", sub, got.stdout)
					}
				}
				if strings.Contains(got.stdout, "sandbox-init") {
					t.Errorf("the help shows the internal sandbox-init:\n%s", got.stdout)
				}
			}
			if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
				var made []string
				_ = filepath.WalkDir(root, func(p string, _ os.DirEntry, _ error) error {
					made = append(made, p)
					return nil
				})
				t.Errorf("tetherd %s created files: %v", strings.Join(tc.args, " "), made)
			}
		})
	}

	t.Run("--version prints what version prints", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "root")
		a, b := runCLI(t, bin, root, "version"), runCLI(t, bin, root, "--version")
		if a.stdout != b.stdout {
			t.Errorf("tetherd version printed %q, tetherd --version %q", a.stdout, b.stdout)
		}
	})
}

// TestServeIsTheDefaultCommand: tetherd alone, or with serve's flags
// first, still runs the daemon (older scripts and units run it so).
func TestServeIsTheDefaultCommand(t *testing.T) {
	bin := binary(t)
	cases := []struct {
		name string
		// args gets the data dir and the address.
		args func(dataDir, addr string) []string
		// env gets the isolated root and the address.
		env func(root, addr string) []string
		// dataDir is where the daemon keeps its token, given the root.
		dataDir func(root string) string
	}{
		{
			name:    "no arguments",
			args:    func(string, string) []string { return nil },
			env:     func(_, addr string) []string { return []string{"TETHER_ADDR=" + addr, "TETHER_EXECUTOR=standalone"} },
			dataDir: func(root string) string { return filepath.Join(root, "data", "tether") },
		},
		{
			name: "flags first",
			args: func(dataDir, addr string) []string {
				return []string{"--data-dir", dataDir, "--addr", addr, "--executor", "standalone"}
			},
			env:     func(string, string) []string { return nil },
			dataDir: func(root string) string { return filepath.Join(root, "explicit") },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, addr := t.TempDir(), freeAddr(t)
			dataDir := tc.dataDir(root)
			logs := &logBuffer{}
			cmd := exec.Command(bin, tc.args(dataDir, addr)...)
			cmd.Env = append(isolatedEnv(root), tc.env(root, addr)...)
			cmd.Stdout, cmd.Stderr = logs, logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { stopDaemon(cmd) })
			deadline := time.Now().Add(30 * time.Second)
			for {
				resp, err := http.Get("http://" + addr + "/health")
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("tetherd %v did not become healthy: %v\n%s", cmd.Args[1:], err, logs.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if _, err := os.Stat(filepath.Join(dataDir, "token")); err != nil {
				t.Errorf("token in %s: %v", dataDir, err)
			}
		})
	}
}
