package events

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/store"
)

// An executor host keeps an agent's records until tetherd acknowledges
// them, and then drops them for good: what it let go must survive a power
// cut on tetherd's machine. A commit returns before SQLite has it on disk
// (store.Sync), so the acknowledgement waits for Durable, which a syncer
// answers in rounds: at most one fsync of the log each SyncEvery, for all
// the commits acknowledged meanwhile, beside the writer (which never waits
// for it). On PostgreSQL a commit is durable when it returns: Durable
// calls at once.

// DefaultSyncEvery is WriterConfig.SyncEvery's default: the least time
// between two sync rounds while few acknowledgements wait, as long as
// executor.HostConfig's AckDelay holds a paced stream's. Measured on the
// hosts bench (docs/benchmarks.md): at 10 ms, a paced stream's tetherd and
// host CPU per chunk rose 12–22 % (a round per few chunks); at 50 ms
// without syncBatch, a single stream at full speed ran 0.7× as fast, its
// host's window (1,024 records ahead of the acknowledgements then; 4,096
// now, host.DefaultSendWindow) full.
const DefaultSyncEvery = 100 * time.Millisecond

// syncBatch is how many acknowledgements waiting start a round at once,
// pacing or not: a stream at full speed fills its host's window in tens
// of milliseconds, so its acknowledgements must not wait for the pace.
// (AckEvery's default: an urgent acknowledgement's worth.)
const syncBatch = 256

// Durable calls done once every commit that returned before the call is
// on disk (store.Sync): at once where commits are durable when they
// return, else after the next sync round. done runs on the syncer's
// goroutine, in the order of the calls: it must not block. After Close
// the calls wait for nothing.
func (w *Writer) Durable(done func()) {
	if w.sync == nil || !w.sync.add(done) {
		done()
	}
}

// SyncStats reports the sync rounds run and those that failed (their
// acknowledgements wait for the next), for /metrics.
func (w *Writer) SyncStats() (rounds, failed int64) {
	if w.sync == nil {
		return 0, 0
	}
	return w.sync.rounds.Load(), w.sync.failed.Load()
}

// syncer runs the sync rounds of Durable (see above).
type syncer struct {
	st    *store.Store
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	waiting []func()
	closed  bool

	kick   chan struct{} // waiters arrived
	urgent chan struct{} // syncBatch of them wait: no pacing
	stop   chan struct{}
	done   chan struct{}

	rounds, failed atomic.Int64
	once           sync.Once
}

func newSyncer(st *store.Store, every time.Duration, log *slog.Logger) *syncer {
	s := &syncer{st: st, every: every, log: log, kick: make(chan struct{}, 1), urgent: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// add queues done for the next round; false after close.
func (s *syncer) add(done func()) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.waiting = append(s.waiting, done)
	many := len(s.waiting) >= syncBatch
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	if many {
		select {
		case s.urgent <- struct{}{}:
		default:
		}
	}
	return true
}

func (s *syncer) run() {
	defer close(s.done)
	pace := time.NewTimer(0)
	defer pace.Stop()
	<-pace.C
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			s.round()
			return
		}
		s.round()
		// One round each s.every at most: those that come meanwhile wait
		// for the next, together.
		pace.Reset(s.every)
		select {
		case <-pace.C:
		case <-s.urgent:
			pace.Stop() // no stale tick after Stop (Go 1.23 timers)
		case <-s.stop:
			s.round()
			return
		}
	}
}

// round syncs once for every done queued before it, and calls them. A
// failed sync keeps them for the next round.
func (s *syncer) round() {
	s.mu.Lock()
	fns := s.waiting
	s.waiting = nil
	s.mu.Unlock()
	if len(fns) == 0 {
		return
	}
	if err := s.st.Sync(); err != nil {
		s.failed.Add(1)
		s.log.Error("syncing the event log failed; acknowledgements to executor hosts wait", "err", err)
		s.mu.Lock()
		s.waiting = append(fns, s.waiting...)
		s.mu.Unlock()
		select {
		case s.kick <- struct{}{}:
		default:
		}
		return
	}
	s.rounds.Add(1)
	for _, f := range fns {
		f()
	}
}

// close runs a last round and stops; later adds are answered at once.
// Safe to call more than once.
func (s *syncer) close() {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.stop)
	})
	<-s.done
}
