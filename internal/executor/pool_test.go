package executor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
)

func tokenFile(t *testing.T, tok string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(tok+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPoolConfigErrors(t *testing.T) {
	tok := tokenFile(t, testToken, 0o600)
	open := tokenFile(t, testToken, 0o644)
	empty := tokenFile(t, "", 0o600)
	pin := strings.Repeat("ab", 32)
	ok := RemoteConfig{Name: "r1", URL: "tls://h:7000", TokenFile: tok, PinSHA256: pin}
	with := func(mod func(*RemoteConfig)) RemoteConfig {
		r := ok
		mod(&r)
		return r
	}
	cases := []struct {
		name    string
		remotes []RemoteConfig
		want    string
	}{
		{"the local name", []RemoteConfig{with(func(r *RemoteConfig) { r.Name = LocalName })}, "reserved"},
		{"no name", []RemoteConfig{with(func(r *RemoteConfig) { r.Name = "" })}, "empty"},
		{"a name twice", []RemoteConfig{ok, ok}, "used twice"},
		{"another scheme", []RemoteConfig{with(func(r *RemoteConfig) { r.URL = "tcp://h:7000" })}, "tls://host:port"},
		{"no port", []RemoteConfig{with(func(r *RemoteConfig) { r.URL = "tls://h" })}, "tls://host:port"},
		{"a path", []RemoteConfig{with(func(r *RemoteConfig) { r.URL = "tls://h:7000/x" })}, "tls://host:port"},
		{"no token file", []RemoteConfig{with(func(r *RemoteConfig) { r.TokenFile = "/nonexistent/token" })}, "no such file"},
		{"a token file others read", []RemoteConfig{with(func(r *RemoteConfig) { r.TokenFile = open })}, "accessible to others"},
		{"an empty token file", []RemoteConfig{with(func(r *RemoteConfig) { r.TokenFile = empty })}, "is empty"},
		{"no CA and no pin", []RemoteConfig{with(func(r *RemoteConfig) { r.PinSHA256 = "" })}, "CA file or a certificate pin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPool(PoolConfig{Remotes: tc.remotes})
			if err == nil {
				p.Close()
				t.Fatalf("got a pool, want an error mentioning %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestPool(t *testing.T) {
	cert, pin := newTestCA(t, "ca").leaf(t)
	f := newTLSFakeHost(t, cert)
	dataDir := shortTempDir(t)
	p, err := NewPool(PoolConfig{
		Local:   newDetached(t, dataDir),
		Remotes: []RemoteConfig{{Name: "remote-1", URL: "tls://" + f.path, TokenFile: tokenFile(t, testToken, 0o600), PinSHA256: pin}},
		Host:    HostConfig{DaemonID: "daemon-1", Logger: testLogger()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.List(); len(got) != 1 || got[0].Name != "remote-1" {
		t.Fatalf("before the local host is used: got %+v, want the remote one only", got)
	}
	remote, err := p.Get("remote-1")
	if err != nil {
		t.Fatal(err)
	}
	waitInfo(t, remote, "the remote host connected", func(i HostInfo) bool { return i.State == StateConnected })
	local, err := p.Get(LocalName)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := p.Get(LocalName); again != local {
		t.Fatal("a second Get of the local host made another Host")
	}
	waitInfo(t, local, "the local host connected", func(i HostInfo) bool { return i.State == StateConnected })
	if got := p.List(); len(got) != 2 || got[0].Name != LocalName || got[1].Name != "remote-1" {
		t.Fatalf("List: got %+v, want local and remote-1", got)
	}
	if _, err := p.Get("nope"); !errcode.Is(err, errcode.ExecutorNotFound) {
		t.Fatalf("an unknown host: got %v, want %s", err, errcode.ExecutorNotFound)
	}
	p.Close()
	if _, err := p.Get(LocalName); !errcode.Is(err, errcode.ServiceShuttingDown) {
		t.Fatalf("Get after Close: got %v, want %s", err, errcode.ServiceShuttingDown)
	}
	if info := local.Info(); info.State != StateClosed {
		t.Fatalf("the local host after Close: got %s, want %s", info.State, StateClosed)
	}
}

func TestPoolWithoutLocal(t *testing.T) {
	p, err := NewPool(PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Get(LocalName); !errcode.Is(err, errcode.ExecutorNotFound) {
		t.Fatalf("got %v, want %s", err, errcode.ExecutorNotFound)
	}
}

// TestPoolReachesARunningLocalHostOnly: GetRunning and Await never start
// the local host. While none runs, GetRunning says ErrNotRunning and
// makes nothing (no Host, no host directory) and Await waits; a Get (a
// session asking) starts it and Await returns that Host. A later pool on
// the same directory (the next daemon) finds the running host with
// GetRunning, and no second host is started.
func TestPoolReachesARunningLocalHostOnly(t *testing.T) {
	dataDir := shortTempDir(t)
	newPool := func() (*Pool, *Detached) {
		d := newDetached(t, dataDir)
		p, err := NewPool(PoolConfig{Local: d, Host: HostConfig{DaemonID: "daemon-1", Logger: testLogger()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p, d
	}
	p, _ := newPool()
	if h, err := p.GetRunning(ctxT(t), LocalName); !errors.Is(err, ErrNotRunning) || h != nil {
		t.Fatalf("GetRunning with no host running: got %v, %v, want ErrNotRunning", h, err)
	}
	if got := p.List(); len(got) != 0 {
		t.Errorf("List after GetRunning: got %+v, want no host", got)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "host")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the host directory after GetRunning: got %v, want none", err)
	}
	awaited := make(chan *Host, 1)
	go func() {
		h, err := p.Await(ctxT(t), LocalName)
		if err != nil {
			t.Errorf("Await: %v", err)
		}
		awaited <- h
	}()
	local, err := p.Get(LocalName)
	if err != nil {
		t.Fatal(err)
	}
	if got := await(t, "Await to return the host Get made", awaited); got != local {
		t.Fatalf("Await: got %p, want the Host Get made, %p", got, local)
	}
	waitInfo(t, local, "the local host connected", func(i HostInfo) bool { return i.State == StateConnected })

	next, d := newPool()
	found, err := next.GetRunning(ctxT(t), LocalName)
	if err != nil {
		t.Fatalf("GetRunning with the host running: %v", err)
	}
	waitInfo(t, found, "the running host connected", func(i HostInfo) bool { return i.State == StateConnected })
	if again, err := next.Await(ctxT(t), LocalName); err != nil || again != found {
		t.Errorf("Await once found: got %p, %v, want %p", again, err, found)
	}
	d.mu.Lock()
	byNext := d.starts
	d.mu.Unlock()
	if all := starts(t, dataDir); byNext != 0 || len(all) != 1 {
		t.Errorf("hosts started: got %d by the later pool, %v in all, want 0 and 1", byNext, all)
	}
	next.Close()
	if _, err := next.Await(ctxT(t), LocalName); !errcode.Is(err, errcode.ServiceShuttingDown) {
		t.Errorf("Await after Close: got %v, want %s", err, errcode.ServiceShuttingDown)
	}
}
