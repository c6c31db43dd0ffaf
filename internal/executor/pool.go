package executor

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"sync"

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
	p := &Pool{cfg: cfg, hosts: make(map[string]*Host)}
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
// errcode.ExecutorNotFound if the daemon has no such host.
func (p *Pool) Get(name string) (*Host, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errcode.New(errcode.ServiceShuttingDown, "the executor hosts are closed")
	}
	if h := p.hosts[name]; h != nil {
		return h, nil
	}
	if name != LocalName || p.cfg.Local == nil {
		return nil, errcode.New(errcode.ExecutorNotFound, "no executor host named %q is configured", name)
	}
	tok, err := p.cfg.Local.Token()
	if err != nil {
		return nil, errcode.Wrap(errcode.ExecutorUnavailable, err, "the local executor host's token")
	}
	hc := p.cfg.Host
	hc.Name, hc.Dial, hc.Token, hc.Local = LocalName, p.cfg.Local.Dial, tok, true
	h := NewHost(hc)
	p.hosts[name] = h
	return h, nil
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
