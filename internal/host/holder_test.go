package host_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/testbin"
)

// TestRunningNamesTheHost: the lock file of a host's data directory
// names the `tetherd host` process running there while it lives, and
// nothing else: no host yet, a copy of the directory, a host that
// ended, a pid that ended, and a pid that runs another process are none.
func TestRunningNamesTheHost(t *testing.T) {
	dir := t.TempDir()
	if got := host.Running(dir); got != 0 {
		t.Fatalf("before any host: got %d, want 0", got)
	}
	cmd := exec.Command(testbin.Tetherd(t), "host", "--data-dir", dir, "--socket", testbin.SocketPath(t))
	logs := &testbin.LogBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	for end := time.Now().Add(30 * time.Second); host.Running(dir) != cmd.Process.Pid; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("host.Running: got %d, want the host %d\n%s", host.Running(dir), cmd.Process.Pid, logs.String())
		}
	}

	holder, err := os.ReadFile(filepath.Join(dir, "host.lock"))
	if err != nil {
		t.Fatal(err)
	}
	copied := t.TempDir()
	if err := os.WriteFile(filepath.Join(copied, "host.lock"), holder, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := host.Running(copied); got != 0 {
		t.Fatalf("a copy of the running host's directory: got %d, want 0", got)
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	if got := host.Running(dir); got != 0 {
		t.Fatalf("host ended: got %d, want 0", got)
	}

	// The lock file as the host wrote it, with another pid.
	start, file := startAndFile(t, holder)
	for _, tc := range []struct {
		name, content string
	}{
		{"a live pid started at another time", strconv.Itoa(os.Getpid()) + " " + start + " " + file},
		{"a pid alone", strconv.Itoa(os.Getpid())},
		{"garbage", "host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Rewritten in place: the same file, as a host writes it.
			if err := os.WriteFile(filepath.Join(dir, "host.lock"), []byte(tc.content+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := host.Running(dir); got != 0 {
				t.Fatalf("lock file %q: got %d, want 0", tc.content, got)
			}
		})
	}
}

// startAndFile reads the start time and the file of a lock file a host
// wrote ("<pid> <start> <file>").
func startAndFile(t *testing.T, holder []byte) (start, file string) {
	t.Helper()
	f := strings.Fields(string(holder))
	if len(f) != 3 {
		t.Fatalf("lock file of a running host: got %q, want pid, start and file", holder)
	}
	return f[1], f[2]
}
