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
// while it syncs and copies. Once the WAL is walRestartFrames long, the
// writer, between two transactions, copies the few frames committed since
// the round and its next commit starts the WAL from the top (SQLite syncs
// its header then): the writer's whole share (RestartWALIfDue), a
// millisecond or so every half second of full ingest.
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
	// checkpointEvery is how often the checkpointer runs: a round copies
	// a few thousand pages at most at full ingest. (100 ms measured the
	// same publish p99; fewer rounds take the WAL's locks less often.)
	checkpointEvery = 250 * time.Millisecond
	// walRestartFrames is the WAL length (16 MiB at 4 KiB pages) past
	// which the writer restarts the WAL (see RestartWALIfDue).
	walRestartFrames = 4096
	// walCatchUpPasses bounds the extra PASSIVE passes of a round that
	// hands a restart to the writer, and walHandOverFrames is how few
	// frames a pass must find new for the round to stop catching up.
	walCatchUpPasses  = 4
	walHandOverFrames = 64
	// walBackstopPages is the write pool's auto-checkpoint mark (SQLite's
	// default is 1,000): 32 MiB of WAL at 4 KiB pages, twice the length
	// at which the checkpointer restarts it.
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
	// Rounds is how many checkpoints ran, Restarts how many of them
	// restarted the WAL, and Failed how many failed.
	Rounds, Restarts, Failed int64
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
	mu                               sync.Mutex
	rounds, restarts, failed, walLen atomic.Int64
	// due is set by a round that found the WAL long, and cleared by
	// RestartWALIfDue.
	due atomic.Bool
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

// round runs one PASSIVE checkpoint and, once the WAL is long, asks the
// writer to restart it (RestartWALIfDue).
func (c *checkpointer) round(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, log, _, err := c.checkpoint(ctx, c.db, "PASSIVE")
	if err != nil || log < walRestartFrames {
		return err
	}
	// Before the writer takes over, catch up with what was committed
	// while this round ran: each pass copies only the frames of the pass
	// before (and so runs shorter), until what is left for the writer is
	// a handful of frames, whose copy and fsyncs take it a moment.
	for range walCatchUpPasses {
		prev := log
		if _, log, _, err = c.checkpoint(ctx, c.db, "PASSIVE"); err != nil {
			return err
		}
		if log-prev <= walHandOverFrames || log < prev {
			break
		}
	}
	c.due.Store(true)
	return nil
}

// RestartWALIfDue is the writer's share of checkpointing, run between its
// transactions: once the checkpointer has found the WAL long, one PASSIVE
// checkpoint on the write pool copies the few frames committed since that
// round, and the writer's next commit then starts the WAL from the top.
// A writer that never pauses otherwise keeps the WAL a step ahead of every
// round beside it, and SQLite never gets to restart it. Doing it here,
// rather than with a RESTART beside the writer, keeps the writer from
// waiting on a lock (SQLite's busy handler sleeps in steps of milliseconds).
// When nothing is due it costs one atomic load.
func (s *Store) RestartWALIfDue(ctx context.Context) error {
	c := s.ckpt
	if c == nil || !c.due.Load() {
		return nil
	}
	c.due.Store(false)
	sqlDB, err := s.db.DB()
	if err != nil {
		return internal(err, "wal checkpoint")
	}
	busy, log, copied, err := c.checkpoint(ctx, sqlDB, "PASSIVE")
	if err == nil && !busy && copied == log {
		c.restarts.Add(1)
	}
	return err
}

// checkpoint runs one checkpoint on db and reports whether it was kept
// from finishing, the WAL's length and how much of it is in the database,
// in frames.
func (c *checkpointer) checkpoint(ctx context.Context, db *sql.DB, mode string) (busy bool, log, copied int64, err error) {
	var b int64
	err = db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&b, &log, &copied)
	c.rounds.Add(1)
	if err != nil {
		c.failed.Add(1)
		return false, 0, 0, internal(err, "wal checkpoint "+mode)
	}
	c.walLen.Store(log)
	return b != 0, log, copied, nil
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
	return CheckpointStats{Rounds: c.rounds.Load(), Restarts: c.restarts.Load(), Failed: c.failed.Load(),
		WALFrames: c.walLen.Load()}
}
