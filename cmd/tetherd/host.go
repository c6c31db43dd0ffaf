package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/labstack/gommon/bytes"

	"github.com/tether/tether/internal/atomicfile"
	"github.com/tether/tether/internal/buildinfo"
	"github.com/tether/tether/internal/executor"
	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/outbox"
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/terminal"
)

const hostUsage = `usage: tetherd host [flags]
       tetherd host ls [--addr ADDR] [--data-dir DIR] [--json]

Run an executor host: it owns agent processes and their ACP connections,
keeps what they produce in a durable outbox per session, and serves one
daemon at a time over the host protocol. Agents keep running while no
daemon is connected; with no daemon and idle agents the host exits after
--linger.

It listens on a unix socket (--socket, the detached runtime) and/or on TCP
with TLS (--listen with --tls-cert and --tls-key, the remote runtime). A
daemon authenticates with the token in --token-file, generated on first
start. The host runs only the agent profiles of its own agents.yaml.

Flags:
`

// hostOptions are the settings of `tetherd host`.
type hostOptions struct {
	cfg       host.Config
	socket    string
	listen    string
	tlsCert   string
	tlsKey    string
	tokenFile string
	logLevel  string
	maxProcs  int
	// termSandbox is the terminals' sandbox (--terminal-sandbox), nil
	// for none; its hidden paths are filled in at start.
	termSandbox *sandbox.Spec
}

// hiddenHostFlags are left out of the usage: test knobs.
var hiddenHostFlags = map[string]bool{"protocol-versions": true}

func parseHostOptions(args []string) (hostOptions, error) {
	var o hostOptions
	fs := flag.NewFlagSet("tetherd host", flag.ContinueOnError)
	fs.Usage = flagUsage(fs, hostUsage, hiddenHostFlags, nil)
	def := ""
	if d := defaultDataDir(); d != "" {
		def = filepath.Join(d, "host")
	}
	fs.StringVar(&o.cfg.DataDir, "data-dir", env(executor.EnvHostDataDir, def), "the host's data directory: sessions, token, socket [TETHER_HOST_DATA_DIR]")
	fs.StringVar(&o.socket, "socket", env(executor.EnvHostSocket, ""), "unix socket to listen on, mode 0600 (default <data-dir>/host.sock unless --listen is set) [TETHER_HOST_SOCKET]")
	fs.StringVar(&o.listen, "listen", "", "TCP address to listen on with TLS, e.g. 0.0.0.0:7778 (needs --tls-cert and --tls-key)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate (PEM) for --listen")
	fs.StringVar(&o.tlsKey, "tls-key", "", "TLS private key (PEM) for --listen")
	fs.StringVar(&o.tokenFile, "token-file", env(executor.EnvHostTokenFile, ""), "file holding the token a daemon must present (default <data-dir>/token; generated, mode 0600, if missing) [TETHER_HOST_TOKEN_FILE]")
	fs.StringVar(&o.cfg.AgentsDir, "agents-dir", env(executor.EnvHostAgentsDir, ""), "directory of the host's agents.yaml (default the data dir) [TETHER_HOST_AGENTS_DIR]")
	agentEnv := fs.String("agent-env-passthrough", env("TETHER_AGENT_ENV_PASSTHROUGH", ""), "comma-separated variables of the host's environment every agent also gets (TETHER_* never) [TETHER_AGENT_ENV_PASSTHROUGH]")
	fs.DurationVar(&o.cfg.Linger, "linger", host.DefaultLinger, "with no daemon connected and no prompt or permission request pending for this long, stop the agents and exit (0: never)")
	fs.IntVar(&o.cfg.SendWindow, "send-window", host.DefaultSendWindow, "records of one session sent to the daemon and not yet acknowledged, at most")
	maxOutbox := fs.String("outbox-max-bytes", "1G", "unacknowledged bytes one session's outbox holds; past it the agent is slowed down until the daemon catches up")
	syncDelay := fs.Duration("outbox-sync-delay", host.DefaultOutboxSyncDelay, "fsync a session's outbox within this long of a write instead of before each record is sent (0: before); records survive a crash of the host either way, the last of them not a crash of its machine")
	fs.DurationVar(&o.cfg.PingInterval, "ping-interval", host.DefaultPingInterval, "how often the host pings its daemon")
	fs.DurationVar(&o.cfg.PingTimeout, "ping-timeout", host.DefaultPingTimeout, "close a daemon connection silent for this long")
	fs.DurationVar(&o.cfg.InitTimeout, "init-timeout", host.DefaultInitTimeout, "timeout of an agent's initialize handshake, unless the daemon sets one")
	fs.DurationVar(&o.cfg.StopGrace, "stop-grace", host.DefaultStopGrace, "how long a stopping agent gets before it is killed, unless the daemon sets it")
	files := addFileFlags(fs)
	fs.StringVar(&o.logLevel, "log-level", env("TETHER_LOG_LEVEL", "info"), "debug, info, warn or error [TETHER_LOG_LEVEL]")
	fs.IntVar(&o.maxProcs, "max-procs", 1, "CPU cores the host's Go runtime runs on at once (0: all). One by default: the host mostly waits for pipes, sockets and its disk, and one core spares it the cross-core wake-ups that otherwise cost more CPU than its work (docs/benchmarks.md)")
	termSandbox := fs.Bool("terminal-sandbox", false, "run terminals and commands in a sandbox like the agents' (the session's directory writable, the host's files and tokens invisible; HOME empty) instead of as the host's user; docs/security.md")
	terminals := fs.String("terminal", "auto", "serve interactive terminals (a shell on a PTY in a session's directory, as the host's user): on, off, or auto (on for a local host, off with --listen); see docs/security.md")
	versions := fs.String("protocol-versions", "", "MIN..MAX host protocol versions to speak (tests of upgrades)")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err := absPaths(&o.cfg.DataDir, &o.socket, &o.tlsCert, &o.tlsKey, &o.tokenFile, &o.cfg.AgentsDir); err != nil {
		return o, err
	}
	if o.maxProcs < 0 {
		return o, errors.New("--max-procs must not be negative")
	}
	if o.cfg.DataDir == "" {
		return o, errors.New("no data directory: set --data-dir, TETHER_HOST_DATA_DIR or HOME")
	}
	if o.listen != "" && (o.tlsCert == "" || o.tlsKey == "") {
		return o, errors.New("--listen needs --tls-cert and --tls-key: a remote host speaks TLS only")
	}
	if o.listen == "" && (o.tlsCert != "" || o.tlsKey != "") {
		return o, errors.New("--tls-cert and --tls-key apply to --listen only")
	}
	if o.socket == "" && o.listen == "" {
		o.socket = filepath.Join(o.cfg.DataDir, "host.sock")
	}
	if o.socket != "" {
		if err := executor.CheckSocketPath(o.socket); err != nil {
			return o, fmt.Errorf("--socket: %w: choose a shorter --socket or --data-dir", err)
		}
	}
	if *terminals != "on" && *terminals != "off" && *terminals != "auto" {
		return o, fmt.Errorf("--terminal must be on, off or auto, got %q", *terminals)
	}
	if *terminals == "on" || (*terminals == "auto" && o.listen == "") {
		o.termSandbox = terminalSandbox(*termSandbox, nil, "")
		o.cfg.Workspace.Terminals = terminal.New(terminal.Options{Sandbox: o.termSandbox})
	}
	if o.tokenFile == "" {
		o.tokenFile = filepath.Join(o.cfg.DataDir, "token")
	}
	var err error
	if o.cfg.Files, err = files.parse(); err != nil {
		return o, err
	}
	n, err := bytes.Parse(*maxOutbox)
	if err != nil || n <= 0 {
		return o, fmt.Errorf("--outbox-max-bytes: want a positive size such as 1G, got %q", *maxOutbox)
	}
	if *syncDelay < 0 {
		return o, errors.New("--outbox-sync-delay must not be negative")
	}
	o.cfg.Outbox = outbox.Config{MaxBytes: n, SyncDelay: *syncDelay}
	switch {
	case o.cfg.Linger < 0:
		return o, errors.New("--linger must not be negative")
	case o.cfg.Linger == 0:
		o.cfg.Linger = -1 // Config: negative never lingers out
	}
	if o.cfg.SendWindow <= 0 || o.cfg.PingInterval <= 0 || o.cfg.PingTimeout <= 0 || o.cfg.InitTimeout <= 0 || o.cfg.StopGrace <= 0 {
		return o, errors.New("--send-window, --ping-interval, --ping-timeout, --init-timeout and --stop-grace must be positive")
	}
	if *versions != "" {
		if o.cfg.Versions, err = parseVersions(*versions); err != nil {
			return o, fmt.Errorf("--protocol-versions: %w", err)
		}
	}
	o.cfg.EnvPassthrough = splitList(*agentEnv)
	return o, nil
}

// parseVersions reads MIN..MAX.
func parseVersions(s string) (hostproto.Versions, error) {
	lo, hi, ok := strings.Cut(s, "..")
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || a < 1 || a > b {
		return hostproto.Versions{}, fmt.Errorf("want MIN..MAX such as 1..2, got %q", s)
	}
	return hostproto.Versions{Min: a, Max: b}, nil
}

// runHost is `tetherd host`.
func runHost(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "ls" {
		return hostLs(ctx, args[1:], os.Stdout)
	}
	o, err := parseHostOptions(args)
	if err != nil {
		return asUsage(err)
	}
	// Once read, the paths (executor.EnvHostDataDir) leave the environment
	// the host's children (agents, shells, git) inherit. The copy the
	// kernel shows in /proc/<pid>/environ stays: internal/nodump guards it.
	for _, k := range []string{executor.EnvHostDataDir, executor.EnvHostSocket, executor.EnvHostTokenFile, executor.EnvHostAgentsDir} {
		_ = os.Unsetenv(k)
	}
	if o.maxProcs > 0 {
		runtime.GOMAXPROCS(o.maxProcs)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return asUsage(fmt.Errorf("--log-level: %w", err))
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("component", "host")
	slog.SetDefault(logger)
	if err := os.MkdirAll(o.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	warnLooseDataDir(logger, o.cfg.DataDir)
	if o.cfg.Token, err = hostToken(o.tokenFile, logger); err != nil {
		return err
	}
	if o.cfg.Self, err = os.Executable(); err != nil {
		return fmt.Errorf("locate tetherd executable: %w", err)
	}
	o.cfg.HostVersion = buildinfo.Get().Version
	o.cfg.Logger = logger
	// What no sandboxed agent may see: the host's own files and secrets,
	// and the remote hosts' tokens of the daemon whose data dir is its
	// agents dir (a detached host's).
	o.cfg.Hidden = append([]string{o.cfg.DataDir, o.cfg.AgentsDir, o.tokenFile, o.socket, o.tlsKey},
		remoteTokenFiles(cmp.Or(o.cfg.AgentsDir, o.cfg.DataDir), "")...)
	if o.termSandbox != nil {
		o.termSandbox.Hidden, o.termSandbox.Self = o.cfg.Hidden, o.cfg.Self
	}
	warnSandbox(logger)
	h, err := host.New(o.cfg)
	if err != nil {
		return err
	}
	// The data dir's lock is held from here, so a socket file left by a
	// host that died is stale and can go.
	lns, err := hostListeners(o)
	if err != nil {
		_ = h.Close()
		return err
	}
	logger.Info("tetherd host ready", "version", o.cfg.HostVersion, "id", h.ID(), "dataDir", o.cfg.DataDir,
		"socket", o.socket, "listen", o.listen, "tokenFile", o.tokenFile)
	serveErr := h.Serve(ctx, lns...)
	if o.socket != "" {
		_ = os.Remove(o.socket)
	}
	return errors.Join(serveErr, h.Close())
}

// hostListeners opens the unix socket and the TLS listener asked for.
func hostListeners(o hostOptions) ([]net.Listener, error) {
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}
	if o.socket != "" {
		if err := os.Remove(o.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
		ln, err := net.Listen("unix", o.socket)
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		if err := os.Chmod(o.socket, 0o600); err != nil {
			closeAll()
			return nil, err
		}
	}
	if o.listen != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		ln, err := tls.Listen("tcp", o.listen, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		if err != nil {
			closeAll()
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// hostToken reads the token file, generating it (32 random bytes in hex,
// mode 0600, written atomically so a daemon never reads half of it) when
// it does not exist.
func hostToken(path string, logger *slog.Logger) (string, error) {
	t, err := readTokenFile(path, logger)
	switch {
	case err == nil && t != "":
		return t, nil
	case err == nil:
		return "", fmt.Errorf("token file %s is empty", path)
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	t = hex.EncodeToString(buf)
	if err := atomicfile.Write(path, []byte(t+"\n")); err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	logger.Info("generated the host's token", "file", path)
	return t, nil
}
