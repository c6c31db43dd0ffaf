package main_test

import (
	"context"
	"database/sql"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/tether/tether/internal/testbin"
)

// binary is the tetherd executable shared by this package's tests.
func binary(t *testing.T) string { return testbin.Tetherd(t) }

func freeAddr(t *testing.T) string { return testbin.FreeAddr(t) }

// logBuffer collects a child's output; the child writes while tests read.
type logBuffer = testbin.LogBuffer

// stopDaemon ends a daemon with SIGTERM and waits for it, killing it if it
// has not exited after 20 s. A process that already exited is only reaped.
func stopDaemon(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	t := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
	defer t.Stop()
	_ = cmd.Wait()
}

// start runs `tetherd serve` and waits for /health and for the start-up
// banner: the daemon writes the banner before it serves, but the pipe that
// carries it to logs is copied by a goroutine of exec, so /health can answer
// first.
func start(t *testing.T, bin, dataDir, addr string, extra ...string) (*exec.Cmd, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cmd := exec.Command(bin, append([]string{"serve", "--data-dir", dataDir, "--addr", addr, "--executor", "standalone"}, extra...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = append(os.Environ(), "TETHER_TOKEN=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A clean stop, so that the daemon's agents (capability probes) are
	// gone before t.TempDir removes the data dir they write in.
	t.Cleanup(func() { stopDaemon(cmd) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(logs.String(), "Web Shell:") {
				return cmd, logs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("tetherd did not become healthy: %v\n%s", err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeCreatesPrivateTokenAndStopsCleanly(t *testing.T) {
	bin, dir, addr := binary(t), t.TempDir(), freeAddr(t)
	cmd, logs := start(t, bin, dir, addr)

	fi, err := os.Stat(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("got token mode %o, want 600", mode)
	}
	token, _ := os.ReadFile(filepath.Join(dir, "token"))
	// stderr is a pipe here, not a terminal: the log shows where the token
	// is, never the token itself.
	if strings.Contains(logs.String(), strings.TrimSpace(string(token))) {
		t.Errorf("start-up output to a pipe shows the token:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), filepath.Join(dir, "token")) || !strings.Contains(logs.String(), "http://"+addr) {
		t.Errorf("start-up output does not show the URL and the token file:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "tether.db")); err != nil {
		t.Errorf("database file: %v", err)
	}
	cases := []struct {
		name  string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"stored token", strings.TrimSpace(string(token)), http.StatusOK},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest("GET", "http://"+addr+"/agents", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("got exit %v after SIGTERM, want 0\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tetherd did not stop after SIGTERM")
	}

	// A restart on the same data dir keeps the token.
	start(t, bin, dir, freeAddr(t))
	again, _ := os.ReadFile(filepath.Join(dir, "token"))
	if string(again) != string(token) {
		t.Errorf("token changed across restarts")
	}
}

func TestRefusesDatabaseNewerThanBinary(t *testing.T) {
	bin, dir, addr := binary(t), t.TempDir(), freeAddr(t)
	cmd, _ := start(t, bin, dir, addr)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()

	db, err := sql.Open("sqlite3", filepath.Join(dir, "tether.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, 1)`); err != nil {
		t.Fatalf("bump schema version: %v", err)
	}
	db.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "serve", "--data-dir", dir, "--addr", freeAddr(t), "--executor", "standalone").CombinedOutput()
	if err == nil {
		t.Fatalf("got a running daemon on a newer database, want refusal\n%s", out)
	}
	if !strings.Contains(string(out), "newer than this tetherd supports") {
		t.Errorf("got %q, want a clear message about the schema version", out)
	}
}
