package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tether/tether/internal/buildinfo"
	"github.com/tether/tether/internal/executor"
	"github.com/tether/tether/internal/hosted"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/runtimes"
)

// executorOptions are the daemon's executor settings: where sessions run
// by default, the remote hosts, and the local detached host's lifetime.
type executorOptions struct {
	// defaultExecutor is --executor: standalone, detached or a remote
	// host's name.
	defaultExecutor string
	// hostsFile is --hosts, the remote hosts' config.
	hostsFile string
	lostAfter time.Duration
	linger    time.Duration
	// pingInterval and pingTimeout say how soon a silent host connection
	// (a cut network link) counts as broken.
	pingInterval, pingTimeout time.Duration
	// versions is the hidden --host-protocol-versions (upgrade tests).
	versions string
	// hostDir is --host-dir, the detached host's directory.
	hostDir string
}

func (x *executorOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&x.defaultExecutor, "executor", env("TETHER_EXECUTOR", runtimes.ExecutorDetached),
		"where sessions run unless their profile or request says otherwise: standalone (a child of tetherd; a restart interrupts its turns), detached (a local executor host that outlives tetherd) or a remote host's name from --hosts [TETHER_EXECUTOR]")
	fs.StringVar(&x.hostsFile, "hosts", env("TETHER_HOSTS", ""), "remote executor hosts config (default <data-dir>/hosts.yaml when it exists) [TETHER_HOSTS]")
	fs.DurationVar(&x.lostAfter, "host-lost-after", 2*time.Minute, "how long an executor host may stay unreachable before its sessions' turns are interrupted (executor_lost); until then the daemon reconnects and the turns go on on the host")
	fs.DurationVar(&x.pingInterval, "host-ping-interval", 10*time.Second, "how often the daemon pings each executor host")
	fs.DurationVar(&x.pingTimeout, "host-ping-timeout", 10*time.Second, "a host connection on which nothing arrived for --host-ping-interval plus this long is taken for broken (a cut network link), and the host shows reconnecting")
	fs.DurationVar(&x.linger, "host-linger", 10*time.Minute, "the local detached host exits once no daemon has been connected and its agents have been idle for this long (0: never)")
	fs.StringVar(&x.hostDir, "host-dir", env("TETHER_HOST_DIR", ""), "the local detached executor host's directory (default <data-dir>/host); the nodes of a cluster on one machine share one, so that a node takes over another's sessions without interrupting their turns [TETHER_HOST_DIR]")
	fs.StringVar(&x.versions, "host-protocol-versions", "", "host protocol versions the daemon speaks, MIN..MAX (default: all this build speaks; for upgrade tests)")
}

// hostsFileEntry is one remote host in hosts.yaml.
type hostsFileEntry struct {
	Name       string `yaml:"name"`
	URL        string `yaml:"url"`
	TokenFile  string `yaml:"tokenFile"`
	CAFile     string `yaml:"caFile"`
	PinSHA256  string `yaml:"pinSha256"`
	ServerName string `yaml:"serverName"`
}

// loadRemoteHosts reads the remote hosts' config: explicit (it must
// exist), else <data-dir>/hosts.yaml if present. Relative file names in it
// are relative to the file.
func loadRemoteHosts(dataDir, explicit string) ([]executor.RemoteConfig, string, error) {
	path := explicit
	if path == "" {
		path = filepath.Join(dataDir, "hosts.yaml")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, "", nil
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, path, fmt.Errorf("executor hosts config: %w", err)
	}
	var doc struct {
		Hosts []hostsFileEntry `yaml:"hosts"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) { // an empty file: no hosts
		return nil, path, fmt.Errorf("executor hosts config %s: %w", path, err)
	}
	base := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	var out []executor.RemoteConfig
	for i, h := range doc.Hosts {
		switch {
		case h.Name == runtimes.ExecutorStandalone || h.Name == runtimes.ExecutorDetached || h.Name == executor.LocalName:
			return nil, path, fmt.Errorf("executor hosts config %s: host %d: the name %q is reserved", path, i+1, h.Name)
		case h.TokenFile == "":
			return nil, path, fmt.Errorf("executor hosts config %s: host %q: tokenFile is required", path, h.Name)
		case h.CAFile == "" && h.PinSHA256 == "":
			return nil, path, fmt.Errorf("executor hosts config %s: host %q: set caFile or pinSha256 to verify its certificate", path, h.Name)
		}
		out = append(out, executor.RemoteConfig{Name: h.Name, URL: h.URL, TokenFile: rel(h.TokenFile), CAFile: rel(h.CAFile),
			PinSHA256: h.PinSHA256, ServerName: h.ServerName})
	}
	return out, path, nil
}

// daemonExecutors builds the executor pool and the sessions' Executors:
// standalone, the local detached host (started on first use, with this
// daemon's agent and fs settings) and the configured remote hosts.
//
// generation, in a cluster, is each session's fencing token, which every
// host command carries (nil: a daemon alone); durable holds each
// acknowledgement to a host until its commit is on disk
// (executor.HostConfig.Durable).
func daemonExecutors(o options, self string, generation func(sessionID string) uint64, durable func(func()), logger *slog.Logger) (*hosted.Executors, *executor.Pool, error) {
	x := o.exec
	remotes, _, err := loadRemoteHosts(o.dataDir, x.hostsFile)
	if err != nil {
		return nil, nil, err
	}
	var versions hostproto.Versions
	if x.versions != "" {
		if versions, err = parseVersions(x.versions); err != nil {
			return nil, nil, fmt.Errorf("--host-protocol-versions: %w", err)
		}
	}
	args := []string{"--linger", x.linger.String(), "--log-level", o.logLevel}
	if o.agentEnv != "" {
		args = append(args, "--agent-env-passthrough", o.agentEnv)
	}
	args = append(args, o.fileArgs...)
	local := &executor.Detached{DataDir: o.dataDir, Dir: x.hostDir, Exe: self, Args: args, Logger: logger}
	if err := executor.CheckSocketPath(local.SocketPath()); err != nil {
		// The detached host could never be reached: refuse to start when
		// it is the default, say so when only a profile or a request may
		// ask for it.
		if x.defaultExecutor == runtimes.ExecutorDetached || x.defaultExecutor == executor.LocalName {
			return nil, nil, fmt.Errorf("the detached executor host's socket: %w: choose a shorter --data-dir or --host-dir", err)
		}
		logger.Warn("the detached executor host cannot run: its socket path is too long; choose a shorter --data-dir or --host-dir", "err", err)
	}
	hostname, _ := os.Hostname()
	pool, err := executor.NewPool(executor.PoolConfig{Local: local, Remotes: remotes,
		Host: executor.HostConfig{DaemonID: hostname + ":" + o.dataDir, DaemonVersion: buildinfo.Get().Version,
			Versions: versions, LostAfter: x.lostAfter, PingInterval: x.pingInterval, PingTimeout: x.pingTimeout,
			UpdateWindow: o.updateWindow, Generation: generation, Durable: durable, Logger: logger}})
	if err != nil {
		return nil, nil, err
	}
	names := map[string]string{}
	for _, r := range remotes {
		names[r.Name] = r.URL
	}
	xs := &hosted.Executors{Pool: pool, Standalone: runtimes.Standalone{}, Default: x.defaultExecutor,
		Remotes: names, LocalAddress: local.SocketPath()}
	if _, _, err := xs.Choose(x.defaultExecutor, ""); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("--executor: %w", err)
	}
	return xs, pool, nil
}
