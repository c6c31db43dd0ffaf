package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The variables in which the daemon tells the detached host its paths
// (`tetherd host` reads each as the default of the flag of the same
// name). Not flags: an agent, unsandboxed, reads its host's command line
// as its parent's (/proc/<ppid>/cmdline, readable by any process), which
// would point it at the host's token file and socket. The environment of
// a host (non-dumpable, internal/nodump) is not readable by its agents,
// and TETHER_* never reaches an agent's (acp.Environ).
const (
	EnvHostDataDir   = "TETHER_HOST_DATA_DIR"
	EnvHostSocket    = "TETHER_HOST_SOCKET"
	EnvHostTokenFile = "TETHER_HOST_TOKEN_FILE"
	EnvHostAgentsDir = "TETHER_HOST_AGENTS_DIR"
)

// Detached finds, and when needed starts, the daemon's own local executor
// host: `tetherd host` in <DataDir>/host, serving <DataDir>/host/host.sock.
// The host runs in a session and process group of its own, so that it
// outlives the daemon (a daemon restart, crash or upgrade leaves it and
// its agents running); the next daemon finds it again by its socket.
type Detached struct {
	// DataDir is the daemon's data directory.
	DataDir string
	// Dir, if set, is the host's directory instead of <DataDir>/host:
	// the nodes of a cluster on one machine share one host this way, so
	// that a node takes over another's sessions without interrupting
	// them (docs/scale-out.md).
	Dir string
	// Exe is the tetherd binary to run (default: this executable).
	Exe string
	// Args are extra `tetherd host` flags; no paths (see EnvHostDataDir).
	Args   []string
	Logger *slog.Logger
	// StartTimeout bounds the wait for a started host's socket (default
	// 15s).
	StartTimeout time.Duration

	initOnce sync.Once
	// startMu (a channel, so that waiting honours ctx) admits one start at
	// a time; a second caller finds the host the first one started.
	startMu chan struct{}
	tokenMu sync.Mutex

	mu sync.Mutex
	// exited is the running child's (closed when it is reaped), nil when
	// this daemon runs none.
	exited chan struct{}
	pid    int
	starts int
}

// HostDir is the host's data directory.
func (d *Detached) HostDir() string {
	if d.Dir != "" {
		return d.Dir
	}
	return filepath.Join(d.DataDir, "host")
}

// SocketPath is the unix socket the host serves.
func (d *Detached) SocketPath() string { return filepath.Join(d.HostDir(), "host.sock") }

// TokenPath is the file holding the token both the daemon and the host
// read.
func (d *Detached) TokenPath() string { return filepath.Join(d.HostDir(), "token") }

// LogPath is where the host's stdout and stderr are appended.
func (d *Detached) LogPath() string { return filepath.Join(d.HostDir(), "host.log") }

func (d *Detached) init() {
	d.initOnce.Do(func() {
		d.startMu = make(chan struct{}, 1)
		if d.Logger == nil {
			d.Logger = slog.Default()
		}
		if d.StartTimeout <= 0 {
			d.StartTimeout = 15 * time.Second
		}
	})
}

// Token returns the host's token, creating the token file (mode 0600, 32
// random bytes in hex) if there is none yet. A token file others can read
// is refused: the token is the host's only credential.
func (d *Detached) Token() (string, error) {
	d.tokenMu.Lock()
	defer d.tokenMu.Unlock()
	path := d.TokenPath()
	for {
		tok, err := readToken(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return tok, err
		}
		if err := os.MkdirAll(d.HostDir(), 0o700); err != nil {
			return "", fmt.Errorf("executor host directory: %w", err)
		}
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return "", err
		}
		tok = hex.EncodeToString(raw)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // another process wrote it first: read theirs
		}
		if err != nil {
			return "", fmt.Errorf("create executor host token: %w", err)
		}
		_, werr := f.WriteString(tok + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = os.Remove(path)
			return "", fmt.Errorf("write executor host token: %w", werr)
		}
		return tok, nil
	}
}

// readToken reads a token file (a remote host's, or the detached one's),
// refusing one that others may read or that is empty.
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s is accessible to others (mode %04o): chmod 600 it", path, st.Mode().Perm())
	}
	b := make([]byte, 4096)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return "", fmt.Errorf("read token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(b[:n]))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

// Dial connects to the host's socket. If nothing answers there (no
// socket, or a stale one) it starts the host — one start at a time — and
// waits, bounded by ctx and StartTimeout, for the socket. It is the Dial
// of the local Host.
func (d *Detached) Dial(ctx context.Context) (net.Conn, error) {
	d.init()
	c, err := d.dialSocket(ctx)
	if err == nil || !absent(err) {
		return c, err
	}
	select {
	case d.startMu <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-d.startMu }()
	if c, err := d.dialSocket(ctx); err == nil || !absent(err) {
		return c, err // started meanwhile
	}
	exited, err := d.start()
	if err != nil {
		return nil, err
	}
	return d.awaitSocket(ctx, exited)
}

// ErrNotRunning says that no host answers at the detached host's socket
// (DialRunning).
var ErrNotRunning = errors.New("the local executor host is not running")

// DialRunning connects to the host's socket like Dial, but never starts
// the host: ErrNotRunning when nothing answers there. Start-up
// housekeeping reaches a host that runs already this way, and leaves
// starting one to a session that asks for it.
func (d *Detached) DialRunning(ctx context.Context) (net.Conn, error) {
	c, err := d.dialSocket(ctx)
	if err != nil && absent(err) {
		return nil, ErrNotRunning
	}
	return c, err
}

func (d *Detached) dialSocket(ctx context.Context) (net.Conn, error) {
	if err := CheckSocketPath(d.SocketPath()); err != nil {
		return nil, fmt.Errorf("%w: choose a shorter --data-dir or --host-dir", err)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "unix", d.SocketPath())
}

// absent reports whether a dial failed because no host serves the socket.
func absent(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// start runs `tetherd host` unless the host this daemon started still
// runs (and is only slow to open its socket); it returns the channel
// closed when that child is reaped.
func (d *Detached) start() (<-chan struct{}, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.exited != nil {
		return d.exited, nil
	}
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	// Nothing listens there: a socket file left by a host that died.
	if err := os.Remove(d.SocketPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove stale executor host socket: %w", err)
	}
	exe := d.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the tetherd executable: %w", err)
		}
	}
	logf, err := os.OpenFile(d.LogPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open executor host log: %w", err)
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(exe, append([]string{"host"}, d.Args...)...)
	cmd.Env = d.hostEnv(os.Environ())
	cmd.Dir = d.HostDir()
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: no signal aimed at the daemon's group or terminal
	// reaches it, and it survives the daemon.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start executor host %s: %w", exe, err)
	}
	exited := make(chan struct{})
	pid := cmd.Process.Pid
	d.exited, d.pid = exited, pid
	d.starts++
	d.Logger.Info("started executor host", "pid", pid, "socket", d.SocketPath(), "log", d.LogPath())
	// The reaper: while this daemon lives its child is waited for, so that
	// a host that exits leaves no zombie.
	go func() {
		err := cmd.Wait()
		d.Logger.Info("executor host exited", "pid", pid, "status", err)
		d.mu.Lock()
		if d.exited == exited {
			d.exited = nil
		}
		d.mu.Unlock()
		close(exited)
	}()
	return exited, nil
}

// hostEnv is the started host's environment: the daemon's (its agents'
// API keys), less the daemon's own TETHER_* settings, which are not the
// host's and may hold secrets (TETHER_TOKEN, TETHER_DATABASE_URL), plus
// the host's paths (EnvHostDataDir and the others).
func (d *Detached) hostEnv(environ []string) []string {
	env := make([]string, 0, len(environ)+4)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "TETHER_") {
			env = append(env, kv)
		}
	}
	return append(env, EnvHostDataDir+"="+d.HostDir(), EnvHostSocket+"="+d.SocketPath(),
		EnvHostTokenFile+"="+d.TokenPath(), EnvHostAgentsDir+"="+d.DataDir)
}

// awaitSocket waits for a starting host to open its socket.
func (d *Detached) awaitSocket(ctx context.Context, exited <-chan struct{}) (net.Conn, error) {
	deadline := time.NewTimer(d.StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := d.dialSocket(ctx)
		if err == nil || !absent(err) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-exited:
			return nil, fmt.Errorf("executor host exited during start-up (see %s)", d.LogPath())
		case <-deadline.C:
			return nil, fmt.Errorf("executor host did not open %s within %s (see %s)", d.SocketPath(), d.StartTimeout, d.LogPath())
		case <-tick.C:
		}
	}
}
