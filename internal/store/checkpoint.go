package store

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// WAL checkpoints. SQLite's default auto-checkpoint runs inside the commit
// that takes the WAL past 1,000 pages, on the committing goroutine — the
// event writer — and fsyncs the WAL and the database file there: every few
// megabytes of log one commit (and every event behind it) waits tens of
// milliseconds for the disk. So the write pool's connections turn
// auto-checkpoint off (writerDriver) and the store's own checkpointer
// goroutine copies the WAL into the database beside the writer. Durability
// is unchanged: a commit is in the WAL before it returns, as before
// (synchronous=NORMAL), and a crash replays the WAL on the next Open
// whatever its length.

// Checkpoint defaults.
const (
	// DefaultCheckpointEvery is how often the checkpointer runs.
	DefaultCheckpointEvery = 250 * time.Millisecond
	// DefaultMaxWAL is the WAL size past which the checkpointer restarts
	// the WAL even though that holds writers up for a moment.
	DefaultMaxWAL = 64 << 20
)

// CheckpointConfig tunes the checkpointer.
type CheckpointConfig struct {
	// Every is how often a PASSIVE checkpoint runs: it copies the
	// committed WAL frames no reader still needs into the database
	// without taking the write lock, so the writer never waits for it.
	Every time.Duration
	// MaxWAL bounds the WAL in bytes: past it (readers kept a passive
	// checkpoint from finishing) a TRUNCATE checkpoint waits for the
	// readers, holds writers off while it completes, and empties the
	// file. The same runs once the log has been idle for a round.
	MaxWAL int64
	// Logger gets checkpoint failures (default slog.Default()).
	Logger *slog.Logger
}

// CheckpointStats counts the checkpointer's work since Open.
type CheckpointStats struct {
	// Passive and Truncate count checkpoints of each mode run.
	Passive, Truncate int64
}

// writerDriver is go-sqlite3 with auto-checkpoint off on every connection.
// Only the write pool uses it: read connections never commit, so they
// never checkpoint.
const writerDriver = "sqlite3-tether-writer"

var registerWriterDriver = sync.OnceFunc(func() {
	sql.Register(writerDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("PRAGMA wal_autocheckpoint = 0", nil)
		return err
	}})
})

// checkpointer is the goroutine that checkpoints the WAL; the Store that
// starts it in Open stops it in Close, before closing the pools.
type checkpointer struct {
	db   *sql.DB
	cfg  CheckpointConfig
	stop chan struct{}
	done chan struct{}
	// stopOnce closes stop.
	stopOnce sync.Once

	passive, truncate atomic.Int64
	// mu serialises rounds (the goroutine's and Checkpoint's) and guards
	// lastLog, the WAL length (frames) the previous round saw.
	mu      sync.Mutex
	lastLog int64
	// frameBytes is the size of one WAL frame (page plus header).
	frameBytes int64
}

func newCheckpointer(ctx context.Context, db *sql.DB, cfg CheckpointConfig) (*checkpointer, error) {
	if cfg.Every <= 0 {
		cfg.Every = DefaultCheckpointEvery
	}
	if cfg.MaxWAL <= 0 {
		cfg.MaxWAL = DefaultMaxWAL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var page int64
	if err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&page); err != nil {
		return nil, internal(err, "read page size")
	}
	return &checkpointer{db: db, cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}),
		lastLog: -1, frameBytes: page + 24}, nil
}

func (c *checkpointer) start() { go c.run() }

func (c *checkpointer) run() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if err := c.round(context.Background()); err != nil {
			c.cfg.Logger.Warn("store: WAL checkpoint failed", "err", err)
		}
	}
}

// close stops the goroutine and waits for it; safe to call twice.
func (c *checkpointer) close() {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
}

// round runs one PASSIVE checkpoint, then a TRUNCATE one when the WAL is
// past MaxWAL or was idle (no new frames since the last round, all of
// them copied): an idle daemon keeps no WAL around.
func (c *checkpointer) round(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	log, copied, err := c.checkpoint(ctx, "PASSIVE")
	if err != nil {
		return err
	}
	c.passive.Add(1)
	idle := log > 0 && log == c.lastLog && copied == log
	c.lastLog = log
	if !idle && log*c.frameBytes <= c.cfg.MaxWAL {
		return nil
	}
	if log, _, err = c.checkpoint(ctx, "TRUNCATE"); err != nil {
		return err
	}
	c.truncate.Add(1)
	c.lastLog = log
	return nil
}

// checkpoint runs one checkpoint and returns the WAL's length and how
// much of it is in the database, in frames. A busy TRUNCATE (the busy
// timeout passed with the writer or a reader in the way) is not an
// error: the next round tries again.
func (c *checkpointer) checkpoint(ctx context.Context, mode string) (log, copied int64, err error) {
	var busy int
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &log, &copied); err != nil {
		return 0, 0, internal(err, "wal checkpoint "+mode)
	}
	return log, copied, nil
}

// Checkpoint runs one round of the checkpointer now (tests, and callers
// that want the WAL small before a backup).
func (s *Store) Checkpoint(ctx context.Context) error {
	if s.ckpt == nil {
		return nil
	}
	return s.ckpt.round(ctx)
}

// CheckpointStats reports the checkpoints run since Open.
func (s *Store) CheckpointStats() CheckpointStats {
	if s.ckpt == nil {
		return CheckpointStats{}
	}
	return CheckpointStats{Passive: s.ckpt.passive.Load(), Truncate: s.ckpt.truncate.Load()}
}
