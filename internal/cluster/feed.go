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
	// EventHorizon is the highest id up to which the log is settled
	// (every id at or below it committed or never will be).
	EventHorizon(ctx context.Context) (int64, error)
	// ListEventsBetween lists every event (session and global) with an
	// id above after and at most upTo, in id order, at most limit.
	ListEventsBetween(ctx context.Context, after, upTo int64, limit int) ([]store.Event, error)
}

// Feed hands every committed event of every node to this node's live
// streams, once and in global id order. Global ids come from a sequence
// the nodes' writers take from side by side, so they commit out of
// order: the feed reads the log only up to its horizon, behind every
// writer that may still commit a lower id (store.EventHorizon), so it
// never delivers an id and then sees a lower one commit: it misses
// nothing that commits late, and delivers nothing twice. An id below the
// horizon that is not in the log was rolled back; it is passed over at
// once. It reads when woken (this node's writer committed; a NOTIFY from
// another node's) and every Poll besides, so a node that missed
// notifications (its LISTEN connection broke) catches up from the table.
type Feed struct {
	st      FeedStore
	publish func([]store.Event)
	log     *slog.Logger
	poll    time.Duration
	wake    chan struct{}

	mu   sync.Mutex
	last int64
	// horizon is the settled end of the log last read (Run's goroutine
	// only): the ids up to it are read before a new one is asked for.
	horizon int64

	delivered, gapsSkipped atomic.Int64
	lag                    lagWindow
}

// FeedConfig tunes a Feed.
type FeedConfig struct {
	// Poll is how often the log is read without a wake-up (default 1 s).
	Poll   time.Duration
	Logger *slog.Logger
}

// pageSize is how many events one read takes.
const pageSize = 512

// NewFeed returns a feed that publishes what commits after the log's
// current (settled) end.
func NewFeed(ctx context.Context, st FeedStore, publish func([]store.Event), cfg FeedConfig) (*Feed, error) {
	last, err := st.EventHorizon(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Feed{st: st, publish: publish, log: cfg.Logger, poll: cfg.Poll, wake: make(chan struct{}, 1), last: last, horizon: last}, nil
}

// Wake makes the feed read the log now.
func (f *Feed) Wake() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Last is the id of the last event delivered (or passed over): every id
// up to it is settled.
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

// step reads one page of the settled log after the last id delivered,
// asking for a new horizon when the last one is reached, and publishes
// it; it reports whether there is more to read up to the horizon.
func (f *Feed) step(ctx context.Context) bool {
	last := f.Last()
	if f.horizon <= last {
		h, err := f.st.EventHorizon(ctx)
		if err != nil {
			f.warn(ctx, last, err)
			return false
		}
		f.horizon = h
		if h <= last {
			return false
		}
	}
	evs, err := f.st.ListEventsBetween(ctx, last, f.horizon, pageSize)
	if err != nil {
		f.warn(ctx, last, err)
		return false
	}
	next, skipped := settle(last, f.horizon, evs, pageSize)
	f.mu.Lock()
	f.last = next
	f.mu.Unlock()
	f.gapsSkipped.Add(skipped)
	if len(evs) > 0 {
		now := time.Now()
		f.publish(evs)
		f.delivered.Add(int64(len(evs)))
		for i := range evs {
			f.lag.add(now.Sub(evs[i].Time))
		}
	}
	// Read on while the horizon is ahead; a new one waits for a wake-up
	// (a commit, or the poll): asked for in a loop it would cost the
	// database a look at its backends between every two commits.
	return next < f.horizon
}

// settle is where the feed stands after reading evs, the events after
// last up to horizon (a page of at most limit): at the horizon when the
// page was short (the rest of the ids were rolled back), else at the
// page's last id; skipped counts the ids passed over without an event.
func settle(last, horizon int64, evs []store.Event, limit int) (next, skipped int64) {
	next = horizon
	if len(evs) == limit {
		next = evs[len(evs)-1].ID
	}
	return next, next - last - int64(len(evs))
}

func (f *Feed) warn(ctx context.Context, last int64, err error) {
	if ctx.Err() == nil {
		f.log.Warn("cluster: reading the event log failed; retrying", "after", last, "err", err)
	}
}

// FeedStats are the feed's counters for /metrics.
type FeedStats struct {
	// GapsSkipped counts the ids taken by transactions that rolled
	// back: settled, never in the log.
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
