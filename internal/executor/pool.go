package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// LocalName is the name of the daemon's own detached host.
const LocalName = "local"

// RemoteConfig is a remote host as the daemon's config registers it.
type RemoteConfig struct {
	Name string
	// URL is tls://host:port.
	URL string
	// TokenFile holds the host's token (mode 0600).
	TokenFile string
	// CAFile or PinSHA256 verify the host's certificate (see TLSConfig).
	CAFile     string
	PinSHA256  string
	ServerName string
}

// PoolConfig configures a Pool.
type PoolConfig struct {
	// Local, if set, is the detached host, created on first use.
	Local *Detached
	// Remotes are the configured remote hosts, connected from the start.
	Remotes []RemoteConfig
	// Host is the template of every host's config: DaemonID,
	// DaemonVersion, timings, Logger. Name, Dial, Token and Local are set
	// per host.
	Host HostConfig
}

// Pool holds the daemon's executor hosts by name.
type Pool struct {
	cfg    PoolConfig
	mu     sync.Mutex
	closed bool
	hosts  map[string]*Host
	// changed is closed (and replaced) when a host is added or the pool
	// closes.
	changed chan struct{}
}

// NewPool checks the remote hosts' config (URL, token file, TLS
// material) and starts connecting to each.
func NewPool(cfg PoolConfig) (*Pool, error) {
	type remote struct {
		name string
		hc   HostConfig
	}
	var remotes []remote
	seen := map[string]bool{LocalName: true}
	for _, r := range cfg.Remotes {
		if seen[r.Name] || r.Name == "" {
			return nil, fmt.Errorf("executor host name %q is empty, reserved or used twice", r.Name)
		}
		seen[r.Name] = true
		hc, err := remoteHostConfig(cfg.Host, r)
		if err != nil {
			return nil, err
		}
		remotes = append(remotes, remote{r.Name, hc})
	}
	p := &Pool{cfg: cfg, hosts: make(map[string]*Host), changed: make(chan struct{})}
	for _, r := range remotes {
		p.hosts[r.name] = NewHost(r.hc)
	}
	return p, nil
}

func remoteHostConfig(tmpl HostConfig, r RemoteConfig) (HostConfig, error) {
	u, err := url.Parse(r.URL)
	if err != nil || u.Scheme != "tls" || u.Host == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return HostConfig{}, fmt.Errorf("executor host %q: url must be tls://host:port, got %q", r.Name, r.URL)
	}
	dial, err := DialTLS(u.Host, TLSConfig{CAFile: r.CAFile, PinSHA256: r.PinSHA256, ServerName: r.ServerName})
	if err != nil {
		return HostConfig{}, fmt.Errorf("executor host %q: %w", r.Name, err)
	}
	tok, err := readToken(r.TokenFile)
	if err != nil {
		return HostConfig{}, fmt.Errorf("executor host %q: %w", r.Name, err)
	}
	hc := tmpl
	hc.Name, hc.Dial, hc.Token, hc.Local = r.Name, dial, tok, false
	return hc, nil
}

// Get returns the host named name, creating the local one on first use;
// errcode.ExecutorNotFound if the daemon has no such host. The local
// host's Host starts the host process when nothing answers at its socket:
// Get is for a session that asks for the host (start-up housekeeping
// asks GetRunning or Await, which never start it).
func (p *Pool) Get(name string) (*Host, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, err := p.existingLocked(name); h != nil || err != nil {
		return h, err
	}
	return p.addLocalLocked(nil)
}

// runningDialTimeout bounds GetRunning's dial of the local host's socket.
const runningDialTimeout = 2 * time.Second

// GetRunning returns the host named name if the daemon has it already, or
// if it is the local host and that runs already: its socket answers (a
// host an earlier daemon started). It never starts the local host:
// ErrNotRunning when nothing answers there.
func (p *Pool) GetRunning(ctx context.Context, name string) (*Host, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, err := p.existingLocked(name); h != nil || err != nil {
		return h, err
	}
	// Dialled under the lock (a unix socket answers at once; the bound is
	// for a host too hung to accept), so that no Get makes another Host
	// meanwhile and the connection is never wasted: the new Host runs its
	// handshake on it.
	dctx, cancel := context.WithTimeout(ctx, runningDialTimeout)
	defer cancel()
	c, err := p.cfg.Local.DialRunning(dctx)
	if err != nil {
		return nil, err
	}
	h, err := p.addLocalLocked(c)
	if err != nil {
		_ = c.Close()
	}
	return h, err
}

// Await returns the host named name once the daemon has it: at once if it
// has it or the local host runs already (GetRunning), else once a Get
// makes it (the local host started for a session). It never starts the
// host; ctx.Err() if ctx ends first.
func (p *Pool) Await(ctx context.Context, name string) (*Host, error) {
	h, err := p.GetRunning(ctx, name)
	if !errors.Is(err, ErrNotRunning) {
		return h, err
	}
	for {
		p.mu.Lock()
		changed := p.changed
		h, err := p.existingLocked(name)
		p.mu.Unlock()
		if h != nil || err != nil {
			return h, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Changed returns a channel closed at the next host added (the local one
// made on first use) or at Close; call it again after.
func (p *Pool) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// existingLocked returns the host named name if the daemon has it; for
// the local host not made yet, neither a host nor an error.
func (p *Pool) existingLocked(name string) (*Host, error) {
	if p.closed {
		return nil, errcode.New(errcode.ServiceShuttingDown, "the executor hosts are closed")
	}
	if h := p.hosts[name]; h != nil {
		return h, nil
	}
	if name != LocalName || p.cfg.Local == nil {
		return nil, errcode.New(errcode.ExecutorNotFound, "no executor host named %q is configured", name)
	}
	return nil, nil
}

// addLocalLocked makes the local host's Host. Its first connection is
// first when set (GetRunning's), then it dials the detached host, which
// starts it when nothing answers.
func (p *Pool) addLocalLocked(first net.Conn) (*Host, error) {
	tok, err := p.cfg.Local.Token()
	if err != nil {
		return nil, errcode.Wrap(errcode.ExecutorUnavailable, err, "the local executor host's token")
	}
	hc := p.cfg.Host
	hc.Name, hc.Dial, hc.Token, hc.Local = LocalName, p.cfg.Local.Dial, tok, true
	if first != nil {
		hc.Dial = firstConn(first, hc.Dial)
	}
	h := NewHost(hc)
	p.hosts[LocalName] = h
	p.notifyLocked()
	return h, nil
}

// firstConn is a Dialer that returns c at its first call, then dials.
func firstConn(c net.Conn, dial Dialer) Dialer {
	var mu sync.Mutex
	return func(ctx context.Context) (net.Conn, error) {
		mu.Lock()
		first := c
		c = nil
		mu.Unlock()
		if first != nil {
			return first, nil
		}
		return dial(ctx)
	}
}

func (p *Pool) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// List reports every host created so far (the remote ones from the start,
// the local one once used), by name.
func (p *Pool) List() []HostInfo {
	p.mu.Lock()
	hosts := make([]*Host, 0, len(p.hosts))
	for _, h := range p.hosts {
		hosts = append(hosts, h)
	}
	p.mu.Unlock()
	out := make([]HostInfo, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, h.Info())
	}
	slices.SortFunc(out, func(a, b HostInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Close closes every host (their agents run on, on the hosts).
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	hosts := p.hosts
	p.hosts = map[string]*Host{}
	p.notifyLocked()
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.Close()
		}()
	}
	wg.Wait()
}
