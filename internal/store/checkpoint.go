package store

import (
	"context"
	"database/sql"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// WAL checkpoints. SQLite's default auto-checkpoint runs inside the commit
// that takes the WAL past 1,000 pages, on the committing goroutine — the
// event writer — and there fsyncs the WAL (megabytes of it), copies the
// pages and fsyncs the database: measured at 5,000 events/s, one commit in
// a hundred waited 10–50 ms for it and the publish p99 was 26 ms. So the
// store copies the WAL into the database beside the writer: a goroutine
// with a connection of its own runs a PASSIVE checkpoint every
// checkpointEvery. PASSIVE takes no lock a writer needs, so commits go on
// while it syncs and copies; the writer's only share is the moment it
// starts the WAL again from the top after a complete checkpoint (SQLite
// syncs the WAL header then), and that WAL was synced moments before.
//
// Durability is unchanged: a commit is in the WAL when it returns
// (synchronous=NORMAL, as before), and Open replays whatever WAL a crash
// left, however long.
//
// Readers can hold a checkpoint back (a frame a reader's snapshot still
// needs is not copied), and so can a stopped checkpointer. The write pool
// therefore keeps SQLite's auto-checkpoint as a backstop at a higher mark
// (walBackstopPages), which a running checkpointer never lets the WAL
// reach, and journal_size_limit gives the file back once the WAL restarts.
const (
	// checkpointEvery is how often the checkpointer runs. At 100 ms a
	// round copies a few hundred pages at most at full ingest, so its
	// fsyncs stay short.
	checkpointEvery = 100 * time.Millisecond
	// walBackstopPages is the write pool's auto-checkpoint mark (SQLite's
	// default is 1,000): 32 MiB of WAL at 4 KiB pages.
	walBackstopPages = 8192
	// walSizeLimit is journal_size_limit: a WAL file larger than this is
	// truncated to it when the WAL restarts.
	walSizeLimit = 64 << 20
)

// writerDriver is go-sqlite3 with the backstop auto-checkpoint on every
// connection of the write pool. The read pool never commits, so it never
// checkpoints and keeps the default driver.
const writerDriver = "sqlite3-tether-writer"

var registerWriterDriver = sync.OnceFunc(func() {
	sql.Register(writerDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("PRAGMA wal_autocheckpoint = "+strconv.Itoa(walBackstopPages)+
			"; PRAGMA journal_size_limit = "+strconv.Itoa(walSizeLimit), nil)
		return err
	}})
})

// CheckpointStats counts the checkpointer's work since Open.
type CheckpointStats struct {
	// Rounds is how many checkpoints ran; Failed how many of them failed.
	Rounds, Failed int64
	// Frames is how many WAL frames the rounds copied into the database.
	Frames int64
	// WALFrames is the WAL's length, in frames, at the last round.
	WALFrames int64
}

// checkpointer is the goroutine that checkpoints the WAL. The Store that
// starts it in Open stops it in Close, before closing the pools.
type checkpointer struct {
	db   *sql.DB // its own connection: never one the writer waits for
	log  *slog.Logger
	stop chan struct{}
	done chan struct{}
	once sync.Once

	// mu serialises rounds (the goroutine's and Store.Checkpoint's).
	mu                             sync.Mutex
	rounds, failed, frames, walLen atomic.Int64
	// copied is the WAL frames already in the database at the previous
	// round, complete whether that was all of them: a round that finds
	// the same WAL counts nothing twice.
	copied   int64
	complete bool
}

// newCheckpointer opens the checkpointer's connection to the database at
// abs and starts its goroutine.
func newCheckpointer(abs string) (*checkpointer, error) {
	db, err := sql.Open("sqlite3", dsn(abs))
	if err != nil {
		return nil, internal(err, "open checkpoint connection")
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	c := &checkpointer{db: db, log: slog.Default(), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if err := c.round(context.Background()); err != nil {
			c.log.Warn("store: WAL checkpoint failed; the next round tries again", "err", err)
		}
	}
}

// round runs one PASSIVE checkpoint.
func (c *checkpointer) round(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var busy, log, copied int64
	err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied)
	c.rounds.Add(1)
	if err != nil {
		c.failed.Add(1)
		return internal(err, "wal checkpoint")
	}
	// A complete round lets the next commit start the WAL again from the
	// top, so after one, a WAL of another length is a new WAL and all of
	// what this round copied is new.
	if c.complete && log != c.walLen.Load() {
		c.copied = 0
	}
	c.frames.Add(max(copied-c.copied, 0))
	c.copied = copied
	c.complete = copied == log
	c.walLen.Store(log)
	return nil
}

// close stops the goroutine, waits for it and closes its connection;
// safe to call twice.
func (c *checkpointer) close() {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		_ = c.db.Close()
	})
}

// Checkpoint runs one round of the checkpointer now (tests, and callers
// that want the WAL copied before they look at the database file).
func (s *Store) Checkpoint(ctx context.Context) error {
	if s.ckpt == nil {
		return nil
	}
	return s.ckpt.round(ctx)
}

// CheckpointStats reports the checkpointer's work since Open.
func (s *Store) CheckpointStats() CheckpointStats {
	if s.ckpt == nil {
		return CheckpointStats{}
	}
	c := s.ckpt
	return CheckpointStats{Rounds: c.rounds.Load(), Failed: c.failed.Load(), Frames: c.frames.Load(), WALFrames: c.walLen.Load()}
}
