package cluster

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/store"
)

// FeedStore reads the event log in global id order.
type FeedStore interface {
	MaxEventID(ctx context.Context) (int64, error)
	// ListEventsAfter lists every event (session and global) with an id
	// above after, in id order, at most limit.
	ListEventsAfter(ctx context.Context, after int64, limit int) ([]store.Event, error)
}

// Feed hands every committed event of every node to this node's live
// streams, once and in global id order. Global ids are given out in
// commit order (the event writer takes them from one counter row, whose
// lock it holds until its commit), so the log read by id never shows a
// later id before an earlier one has committed: a reader that delivers
// only an unbroken run of ids after the last one it delivered misses
// nothing that commits late, and delivers nothing twice. It reads when
// woken (this node's writer committed; a NOTIFY from another node's) and
// every Poll besides, so a node that missed notifications (its LISTEN
// connection broke) catches up from the table.
type Feed struct {
	st      FeedStore
	publish func([]store.Event)
	log     *slog.Logger
	poll    time.Duration
	gapWait time.Duration
	wake    chan struct{}

	mu   sync.Mutex
	last int64
	// gapSince is when the run of ids first broke at last+1 (zero: no
	// gap): an id that never appears (its transaction rolled back after
	// taking it, which the counter makes impossible, or the row was
	// deleted) is skipped after gapWait.
	gapSince time.Time

	delivered, gapsSkipped atomic.Int64
	lag                    lagWindow
}

// FeedConfig tunes a Feed.
type FeedConfig struct {
	// Poll is how often the log is read without a wake-up (default 1 s).
	Poll time.Duration
	// GapWait is how long a missing id is waited for (default 10 s).
	GapWait time.Duration
	Logger  *slog.Logger
}

// pageSize is how many events one read takes.
const pageSize = 512

// NewFeed returns a feed that publishes what commits after the log's
// current end.
func NewFeed(ctx context.Context, st FeedStore, publish func([]store.Event), cfg FeedConfig) (*Feed, error) {
	last, err := st.MaxEventID(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.GapWait <= 0 {
		cfg.GapWait = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Feed{st: st, publish: publish, log: cfg.Logger, poll: cfg.Poll, gapWait: cfg.GapWait, wake: make(chan struct{}, 1), last: last}, nil
}

// Wake makes the feed read the log now.
func (f *Feed) Wake() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Last is the id of the last event delivered.
func (f *Feed) Last() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// Run reads and publishes until ctx ends.
func (f *Feed) Run(ctx context.Context) {
	t := time.NewTicker(f.poll)
	defer t.Stop()
	for {
		for f.step(ctx) {
		}
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-t.C:
		}
	}
}

// step reads one page after the last id delivered and publishes its
// unbroken run; it reports whether to read again at once (a full page).
func (f *Feed) step(ctx context.Context) bool {
	f.mu.Lock()
	last := f.last
	f.mu.Unlock()
	evs, err := f.st.ListEventsAfter(ctx, last, pageSize)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("cluster: reading the event log failed; retrying", "after", last, "err", err)
		}
		return false
	}
	now := time.Now()
	f.mu.Lock()
	n, skipped := f.advance(last, evs, now)
	f.mu.Unlock()
	if skipped > 0 {
		f.log.Warn("cluster: event ids never appeared; going on after them", "missing", skipped, "from", last+1)
		f.gapsSkipped.Add(skipped)
	}
	if n == 0 {
		return false
	}
	batch := evs[:n:n]
	f.publish(batch)
	f.delivered.Add(int64(n))
	for i := range batch {
		f.lag.add(now.Sub(batch[i].Time))
	}
	return n == len(evs) && len(evs) == pageSize
}

// advance decides how many of evs (read after last) to deliver now: their
// unbroken run of ids from last+1; past a gap older than gapWait, the run
// after it (skipped says how many ids were given up). f.mu is held.
func (f *Feed) advance(last int64, evs []store.Event, now time.Time) (n int, skipped int64) {
	n = run(last, evs)
	switch {
	case n > 0 || len(evs) == 0:
		f.gapSince = time.Time{}
	case f.gapSince.IsZero():
		f.gapSince = now
	case now.Sub(f.gapSince) >= f.gapWait:
		skipped = evs[0].ID - last - 1
		f.gapSince = time.Time{}
		n = run(evs[0].ID-1, evs)
	}
	if n > 0 {
		f.last = evs[n-1].ID
	}
	return n, skipped
}

// run is how many of evs, read in id order after last, form an unbroken
// run of ids from last+1.
func run(last int64, evs []store.Event) int {
	for i, e := range evs {
		if e.ID != last+int64(i)+1 {
			return i
		}
	}
	return len(evs)
}

// FeedStats are the feed's counters for /metrics.
type FeedStats struct {
	Delivered, GapsSkipped int64
	// LagP50 and LagP99 are the time from an event's commit to its
	// delivery here, over the last lagWindowSize events.
	LagP50, LagP99 time.Duration
}

// Stats reports the feed's counters.
func (f *Feed) Stats() FeedStats {
	p50, p99 := f.lag.quantiles()
	return FeedStats{Delivered: f.delivered.Load(), GapsSkipped: f.gapsSkipped.Load(), LagP50: p50, LagP99: p99}
}

// lagWindowSize is how many recent lags the quantiles are taken over.
const lagWindowSize = 1024

// lagWindow keeps the last lagWindowSize lags.
type lagWindow struct {
	mu   sync.Mutex
	ring [lagWindowSize]time.Duration
	n    int
}

func (w *lagWindow) add(d time.Duration) {
	w.mu.Lock()
	w.ring[w.n%lagWindowSize] = max(d, 0)
	w.n++
	w.mu.Unlock()
}

func (w *lagWindow) quantiles() (p50, p99 time.Duration) {
	w.mu.Lock()
	k := min(w.n, lagWindowSize)
	xs := make([]time.Duration, k)
	copy(xs, w.ring[:k])
	w.mu.Unlock()
	if k == 0 {
		return 0, 0
	}
	slices.Sort(xs)
	return xs[(k-1)/2], xs[(k*99-1)/100]
}
