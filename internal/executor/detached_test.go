package executor

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// newDetached is a Detached whose host is this test binary playing the
// fake host (fakeHostMain); the host it starts is killed and reaped when
// the test ends.
func newDetached(t *testing.T, dataDir string) *Detached {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeHostEnv, "1") // inherited by the host process
	t.Setenv("TETHER_TOKEN", "the daemon's")
	d := &Detached{DataDir: dataDir, Exe: exe, Args: []string{"--marker", "m1"}, Logger: testLogger()}
	t.Cleanup(func() { d.killChild(t) })
	return d
}

// killChild kills the host this Detached started, if it runs, and waits
// for the reaper.
func (d *Detached) killChild(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	exited, pid := d.exited, d.pid
	d.mu.Unlock()
	if exited == nil {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	await(t, "the host reaped", exited)
}

func starts(t *testing.T, dataDir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "host", "starts"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "exd") // unix socket paths are bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestDetachedToken(t *testing.T) {
	d := &Detached{DataDir: shortTempDir(t)}
	tok, err := d.Token()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tok) {
		t.Fatalf("token: got %q, want 32 bytes in hex", tok)
	}
	st, err := os.Stat(d.TokenPath())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: got %v, %v; want mode 0600", st, err)
	}
	if again, err := d.Token(); err != nil || again != tok {
		t.Fatalf("second Token: got %q, %v; want the same token", again, err)
	}
	if err := os.Chmod(d.TokenPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Token(); err == nil || !strings.Contains(err.Error(), "accessible to others") {
		t.Fatalf("a world-readable token file: got %v, want a refusal", err)
	}
}

// TestDetachedStartsOnceAndIsFoundAgain: two dials at once start one host,
// in a session of its own; a new Detached (the daemon restarted) finds it
// without starting another; once it died, the next dial starts a new one.
func TestDetachedStartsOnceAndIsFoundAgain(t *testing.T) {
	dataDir := shortTempDir(t)
	d := newDetached(t, dataDir)
	var wg sync.WaitGroup
	conns := make([]net.Conn, 2)
	errs := make([]error, 2)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], errs[i] = d.Dial(ctxT(t))
		}()
	}
	wg.Wait()
	for i := range conns {
		if errs[i] != nil {
			t.Fatalf("dial %d: %v", i, errs[i])
		}
		conns[i].Close()
	}
	got := starts(t, dataDir)
	d.mu.Lock()
	pid := d.pid
	d.mu.Unlock()
	if len(got) != 1 || got[0] != strconv.Itoa(pid)+" m1 "+dataDir+" without-TETHER_TOKEN" {
		t.Fatalf("starts: got %q, want one by pid %d with the extra flag and the agents dir, without the daemon's TETHER_TOKEN", got, pid)
	}
	if sid := sessionOf(t, pid); sid != pid {
		t.Fatalf("the host's session: got %d, want its own (%d)", sid, pid)
	}
	if log, err := os.ReadFile(d.LogPath()); err != nil || !strings.Contains(string(log), "fake host starting") {
		t.Fatalf("host log: got %q, %v", log, err)
	}

	// The daemon restarts: its new Detached connects to the running host.
	d2 := &Detached{DataDir: dataDir, Exe: "/nonexistent/tetherd", Logger: testLogger()}
	tok, err := d2.Token()
	if err != nil {
		t.Fatal(err)
	}
	h := NewHost(HostConfig{Name: LocalName, Dial: d2.Dial, Token: tok, Local: true, Logger: testLogger()})
	defer h.Close()
	info := waitInfo(t, h, "connected", func(i HostInfo) bool { return i.State == StateConnected })
	if info.HostID != strconv.Itoa(pid) || len(starts(t, dataDir)) != 1 {
		t.Fatalf("got host %s after %d starts, want the running host %d", info.HostID, len(starts(t, dataDir)), pid)
	}
	h.Close()

	// The host dies: the next dial starts another.
	d.killChild(t)
	c, err := d.Dial(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got := starts(t, dataDir); len(got) != 2 {
		t.Fatalf("starts after the host died: got %q, want 2", got)
	}
}

// TestDetachedStartFailure: a host that exits during start-up fails the
// dial with a pointer to its log.
func TestDetachedStartFailure(t *testing.T) {
	d := &Detached{DataDir: shortTempDir(t), Exe: "/bin/false", Logger: testLogger()}
	_, err := d.Dial(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), d.LogPath()) {
		t.Fatalf("got %v, want an exit during start-up naming the log", err)
	}
}

// sessionOf reads a process's session id from /proc/PID/stat (the field
// after the process group).
func sessionOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	sid, err := strconv.Atoi(fields[3]) // state, ppid, pgrp, session
	if err != nil {
		t.Fatal(err)
	}
	return sid
}
