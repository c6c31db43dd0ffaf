package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/atomicfile"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/outbox"
	"github.com/tether/tether/internal/workspace"
)

// Defaults of Config.
const (
	DefaultLinger = 10 * time.Minute
	// DefaultSendWindow is 4,096 records: the daemon acknowledges a
	// commit only once it is on its disk (events.Writer.Durable), a sync
	// round after it, and a stream at full speed (23,000 records a second)
	// kept 1,024 ahead of that only while the disk answered in a few
	// milliseconds. The records are on the host's disk either way.
	DefaultSendWindow   = 4096
	DefaultPingInterval = 10 * time.Second
	DefaultPingTimeout  = 30 * time.Second
	DefaultInitTimeout  = 30 * time.Second
	DefaultStopGrace    = 3 * time.Second
	// DefaultOutboxSyncDelay is `tetherd host --outbox-sync-delay`: a
	// record is written to its outbox before it is sent, and fsynced
	// within this long (outbox.Config.SyncDelay), so that no fsync waits
	// on a chunk's way to the daemon. The daemon's own SQLite makes the
	// same trade (WAL, synchronous=NORMAL). Config.Outbox's zero value
	// fsyncs before sending.
	DefaultOutboxSyncDelay = 200 * time.Millisecond
	// DefaultDedup is how many finished command ids the host remembers:
	// far more than a daemon sends between a broken connection and its
	// retries.
	DefaultDedup = 4096
	// handshakeTimeout bounds a connection's hello.
	handshakeTimeout = 10 * time.Second
)

// Config configures a Host. DataDir and Token are required; zero values
// of the rest take the defaults.
type Config struct {
	// DataDir holds the sessions (sessions/<id>/), the host's id and its
	// lock; created mode 0700.
	DataDir string
	// AgentsDir is where agents.Load finds agents.yaml (default DataDir).
	AgentsDir string
	// Self is the tetherd executable, which runs the demo agent.
	Self string
	// Hidden are paths no sandboxed agent may see (agents.Config.Hidden).
	Hidden []string
	// EnvPassthrough names variables of the host's environment every agent
	// also gets (agents.Config.EnvPassthrough).
	EnvPassthrough []string
	// Token is the secret a daemon must present.
	Token string
	// HostVersion is the build version the Welcome announces.
	HostVersion string
	// Versions overrides the protocol versions spoken (upgrade tests).
	Versions hostproto.Versions
	// Files bounds the agents' fs requests.
	Files workspace.FileLimits
	// Workspace bounds the daemon's workspace requests (CommandWorkspace);
	// its turn checkpoints are kept in DataDir/checkpoints and sessions'
	// worktrees in DataDir/worktrees unless it says.
	Workspace workspace.Config
	// InitTimeout and StopGrace apply when a start does not set them.
	InitTimeout time.Duration
	StopGrace   time.Duration
	// Linger is how long the host waits with no daemon and idle agents
	// before Serve returns (DefaultLinger); negative never.
	Linger time.Duration
	// SendWindow bounds a session's records sent and not acknowledged.
	SendWindow int
	// PingInterval is how often the host pings its daemon; PingTimeout
	// how long a connection may stay silent before it is closed.
	PingInterval time.Duration
	PingTimeout  time.Duration
	// Outbox configures every session's outbox (its Logger is the host's).
	Outbox outbox.Config
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" || c.Token == "" {
		return c, errors.New("host: DataDir and Token are required")
	}
	if c.AgentsDir == "" {
		c.AgentsDir = c.DataDir
	}
	if c.Workspace.Checkpoints == "" {
		c.Workspace.Checkpoints = filepath.Join(c.DataDir, "checkpoints")
	}
	if c.Workspace.Worktrees == "" {
		c.Workspace.Worktrees = filepath.Join(c.DataDir, "worktrees")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	defaults := []struct {
		d   *time.Duration
		def time.Duration
	}{{&c.InitTimeout, DefaultInitTimeout}, {&c.StopGrace, DefaultStopGrace}, {&c.Linger, DefaultLinger},
		{&c.PingInterval, DefaultPingInterval}, {&c.PingTimeout, DefaultPingTimeout}}
	for _, d := range defaults {
		if *d.d == 0 {
			*d.d = d.def
		}
	}
	if c.SendWindow <= 0 {
		c.SendWindow = DefaultSendWindow
	}
	if c.PingInterval < 0 || c.PingTimeout < 0 || c.InitTimeout < 0 || c.StopGrace < 0 {
		return c, errors.New("host: negative ping interval, ping timeout, init timeout or stop grace")
	}
	return c, nil
}

// options are the protocol options of the host's connections: a send
// never hangs longer than the liveness deadline.
func (c Config) options() hostproto.Options {
	return hostproto.Options{WriteTimeout: c.PingTimeout}
}

// Host serves its sessions to the daemons connected to it, each
// session's records to the one that last attached it. Create it with
// New, run it with Serve, end it with Close.
type Host struct {
	cfg       Config
	log       *slog.Logger
	id        string
	startedAt time.Time
	lock      *os.File
	dedup     *hostproto.Dedup
	// life is the context of agents and commands: it outlives connections.
	life context.Context
	end  context.CancelFunc
	wg   sync.WaitGroup // commands and retirements
	// changes wakes the linger watch (cap 1).
	changes chan struct{}

	mu       sync.Mutex
	links    map[*link]struct{} // the daemon connections
	sessions map[string]*session
	starting map[string]chan struct{} // per-session start locks
	closed   bool
}

// New opens the host's data directory (one host per directory: a lock
// file) and takes up the sessions a previous run left there: their
// agents are gone, so each gets a lost exit record unless it already
// ended.
func New(cfg Config) (*Host, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("host: data dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.DataDir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("host: %s is in use by another host: %w", cfg.DataDir, err)
	}
	if err := recordHolder(lock); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("host: %s: %w", lockFile, err)
	}
	h := &Host{cfg: cfg, log: cfg.Logger, startedAt: time.Now().UTC(), lock: lock, dedup: hostproto.NewDedup(DefaultDedup),
		changes: make(chan struct{}, 1), links: map[*link]struct{}{}, sessions: map[string]*session{}, starting: map[string]chan struct{}{}}
	h.life, h.end = context.WithCancel(context.Background())
	if err := h.init(); err != nil {
		h.end()
		_ = lock.Close()
		return nil, err
	}
	return h, nil
}

// init reads the host id (made on first start), clears the trash and
// recovers the sessions.
func (h *Host) init() error {
	idPath := filepath.Join(h.cfg.DataDir, "host-id")
	b, err := os.ReadFile(idPath)
	switch {
	case err == nil && strings.TrimSpace(string(b)) != "":
		h.id = strings.TrimSpace(string(b))
	case err == nil || errors.Is(err, os.ErrNotExist):
		h.id = uuid.NewString()
		if err := atomicfile.Write(idPath, []byte(h.id+"\n")); err != nil {
			return err
		}
	default:
		return err
	}
	if err := os.RemoveAll(h.trashDir()); err != nil {
		return err
	}
	if err := os.MkdirAll(h.sessionsDir(), 0o700); err != nil {
		return err
	}
	ents, err := os.ReadDir(h.sessionsDir())
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() || validSessionID(e.Name()) != nil {
			continue
		}
		s, err := h.recoverSession(e.Name())
		if err != nil {
			// Left in place for a person to look at; the other sessions go on.
			h.log.Error("host: cannot take up a session directory", "session", e.Name(), "err", err)
			continue
		}
		h.sessions[s.id] = s
	}
	if len(h.sessions) > 0 {
		h.log.Info("host: sessions taken up from the previous run", "sessions", len(h.sessions))
	}
	return nil
}

func (h *Host) sessionsDir() string { return filepath.Join(h.cfg.DataDir, "sessions") }
func (h *Host) trashDir() string    { return filepath.Join(h.cfg.DataDir, "trash") }

// quarantineDir keeps what sessions' outboxes found damaged, per session
// id (outbox.Config.QuarantineDir); nothing removes it.
func (h *Host) quarantineDir() string { return filepath.Join(h.cfg.DataDir, "quarantine") }

// ID is the host's identity, kept in its data directory across restarts.
func (h *Host) ID() string { return h.id }

// changed wakes the linger watch: the connection, a prompt or a request
// came or went.
func (h *Host) changed() {
	select {
	case h.changes <- struct{}{}:
	default:
	}
}

// spawn runs fn in a goroutine Close waits for, unless the host is
// closed.
func (h *Host) spawn(fn func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.wg.Go(fn)
	return true
}

// all is the sessions held now.
func (h *Host) all() []*session {
	h.mu.Lock()
	defer h.mu.Unlock()
	ss := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		ss = append(ss, s)
	}
	return ss
}

func (h *Host) sessionIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]string, 0, len(h.sessions))
	for id := range h.sessions {
		ids = append(ids, id)
	}
	return ids
}

func (h *Host) lookup(id string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

// register adds a started session, unless the host is closing.
func (h *Host) register(s *session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.sessions[s.id] = s
	return true
}

// discard removes a session and its directory, stopping its agent.
func (h *Host) discard(s *session) {
	h.forget(s)
	s.close()
	if err := h.trash(s.dir); err != nil {
		s.log.Warn("host: remove session directory", "err", err)
	}
}

// forget removes s from the sessions held, if it is still there.
func (h *Host) forget(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
}

// retire removes a session whose exit the daemon committed. The acker
// calls it, so the closing happens in a goroutine of its own.
func (h *Host) retire(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return // Close closes it; the next run sends the exit again
	}
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	h.wg.Go(func() {
		s.close()
		// A new start of the same session (a continuation) may have come
		// meanwhile: its directory is the same path, and it is the new
		// incarnation's now (its start removed what this one left).
		unlock := h.lockSession(s.id)
		defer unlock()
		if cur := h.lookup(s.id); cur != nil && cur != s {
			s.log.Info("host: session ended; its exit is committed by the daemon, and a new agent runs in its place")
			return
		}
		if err := h.trash(s.dir); err != nil {
			s.log.Warn("host: remove session directory", "err", err)
		}
		s.log.Info("host: session ended; its exit is committed by the daemon")
	})
}

// trash removes a session directory: renamed first, so that a crash
// midway never leaves a half-removed session to take up again. A
// directory that does not exist is no error.
func (h *Host) trash(dir string) error {
	if err := os.MkdirAll(h.trashDir(), 0o700); err != nil {
		return err
	}
	t := filepath.Join(h.trashDir(), filepath.Base(dir)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(dir, t); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(t)
}

// lockSession serialises starts of one session id.
func (h *Host) lockSession(id string) (unlock func()) {
	for {
		h.mu.Lock()
		busy, ok := h.starting[id]
		if !ok {
			mine := make(chan struct{})
			h.starting[id] = mine
			h.mu.Unlock()
			return func() {
				h.mu.Lock()
				delete(h.starting, id)
				h.mu.Unlock()
				close(mine)
			}
		}
		h.mu.Unlock()
		<-busy
	}
}

// Close stops every agent gracefully (their exit records are appended),
// waits for the commands still running and closes the outboxes. Call it
// after Serve returned.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.closeLinks()
	var wg sync.WaitGroup
	for _, s := range h.all() {
		wg.Go(s.close)
	}
	wg.Wait()
	h.end()
	h.wg.Wait()
	return h.lock.Close()
}
