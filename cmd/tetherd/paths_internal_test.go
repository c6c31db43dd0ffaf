package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tether/tether/internal/executor"
)

// TestPathFlagsAreAbsolute: every path flag of serve and host is made
// absolute against the start-up directory as the flags are parsed.
func TestPathFlagsAreAbsolute(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string { return filepath.Join(wd, p) }
	serve, err := parseOptions([]string{"--data-dir", "d", "--token-file", "t", "--tls-cert", "c", "--tls-key", "k",
		"--hosts", "h.yaml", "--host-dir", "hd"})
	if err != nil {
		t.Fatal(err)
	}
	host, err := parseHostOptions([]string{"--data-dir", "hd", "--socket", "s.sock", "--listen", "127.0.0.1:0",
		"--tls-cert", "c", "--tls-key", "k", "--token-file", "t", "--agents-dir", "a"})
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := parseHostOptions([]string{"--data-dir", "hd"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, got, want string }{
		{"serve --data-dir", serve.dataDir, abs("d")},
		{"serve --token-file", serve.edge.tokenFile, abs("t")},
		{"serve --tls-cert", serve.edge.tlsCert, abs("c")},
		{"serve --tls-key", serve.edge.tlsKey, abs("k")},
		{"serve --hosts", serve.exec.hostsFile, abs("h.yaml")},
		{"serve --host-dir", serve.exec.hostDir, abs("hd")},
		{"host --data-dir", host.cfg.DataDir, abs("hd")},
		{"host --socket", host.socket, abs("s.sock")},
		{"host --tls-cert", host.tlsCert, abs("c")},
		{"host --tls-key", host.tlsKey, abs("k")},
		{"host --token-file", host.tokenFile, abs("t")},
		{"host --agents-dir", host.cfg.AgentsDir, abs("a")},
		{"host's default socket", defaults.socket, abs("hd/host.sock")},
		{"host's default token file", defaults.tokenFile, abs("hd/token")},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

// TestHostPathsFromEnvironment: the detached host's paths come in its
// environment (executor.EnvHostDataDir and the others), each the default
// of its flag, which still wins when given (a host run by hand).
func TestHostPathsFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{
		executor.EnvHostDataDir:   filepath.Join(dir, "host"),
		executor.EnvHostSocket:    filepath.Join(dir, "host", "s.sock"),
		executor.EnvHostTokenFile: filepath.Join(dir, "host", "tok"),
		executor.EnvHostAgentsDir: dir,
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	fromEnv, err := parseHostOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	byFlags, err := parseHostOptions([]string{"--data-dir", "/f/host", "--socket", "/f/f.sock", "--token-file", "/f/tok", "--agents-dir", "/f"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, got, want string }{
		{"data dir from the environment", fromEnv.cfg.DataDir, env[executor.EnvHostDataDir]},
		{"socket from the environment", fromEnv.socket, env[executor.EnvHostSocket]},
		{"token file from the environment", fromEnv.tokenFile, env[executor.EnvHostTokenFile]},
		{"agents dir from the environment", fromEnv.cfg.AgentsDir, env[executor.EnvHostAgentsDir]},
		{"--data-dir over the environment", byFlags.cfg.DataDir, "/f/host"},
		{"--socket over the environment", byFlags.socket, "/f/f.sock"},
		{"--token-file over the environment", byFlags.tokenFile, "/f/tok"},
		{"--agents-dir over the environment", byFlags.cfg.AgentsDir, "/f"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}
