package events

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
)

// HubConfig bounds the hub's fan-out.
type HubConfig struct {
	// Buffer is each subscriber's queue length in events; overflowing it
	// means the subscriber is too slow and it is cut off (it reconnects
	// from its cursor).
	Buffer int
	// MaxPerSession and MaxTotal bound live subscribers. At a full limit a
	// new subscriber displaces a stalled one, else one that has sat quiet
	// for MinAge (see evictable); only then is it refused.
	MaxPerSession int
	MaxTotal      int
	// StallAfter is how long a write to a subscriber's client may be in
	// flight before the subscriber counts as stalled (default 5 s).
	StallAfter time.Duration
	// MinAge protects new subscribers: a healthy-looking subscriber may be
	// displaced only once it has been connected this long (default 30 s),
	// so clients at a full limit cannot keep evicting each other.
	MinAge time.Duration
}

// Hub fans committed events out to live subscribers. Publishing never
// blocks: a subscriber whose queue is full is marked lagged and dropped, so
// one stalled client cannot slow the writer or anyone else.
type Hub struct {
	cfg      HubConfig
	mu       sync.Mutex
	sessions map[string]map[*Subscription]struct{}
	global   map[*Subscription]struct{}
	total    int
	seq      uint64 // numbers subscriptions in order: lower is older
	// batches is Publish's scratch: each subscriber's share of a commit.
	batches map[*Subscription][]*store.Event
}

// NewHub returns an empty hub.
func NewHub(cfg HubConfig) *Hub {
	if cfg.Buffer <= 0 {
		cfg.Buffer = 4096
	}
	if cfg.MaxPerSession <= 0 {
		cfg.MaxPerSession = 64
	}
	if cfg.MaxTotal <= 0 {
		cfg.MaxTotal = 4096
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = 5 * time.Second
	}
	if cfg.MinAge <= 0 {
		cfg.MinAge = 30 * time.Second
	}
	return &Hub{cfg: cfg, sessions: map[string]map[*Subscription]struct{}{}, global: map[*Subscription]struct{}{},
		batches: map[*Subscription][]*store.Event{}}
}

// Subscription is one live subscriber's queue.
type Subscription struct {
	hub       *Hub
	sessionID string // "" for the global stream
	// queue holds this stream's events of each commit as one batch, in
	// commit order, until the receiver Takes them: one append per
	// subscriber per commit, not per event. Pointers avoid copying each
	// event per subscriber; receivers must modify neither the batch nor
	// its events. queued is its length in events, which Buffer bounds.
	// Both grow on demand: an idle subscriber holds no queue at all
	// (a channel of Buffer/8 batches was 12 KiB each, allocated up front).
	// Guarded by hub.mu.
	queue  [][]*store.Event
	queued int
	// ready holds a token while batches wait: the receiver's wake-up.
	ready chan struct{}
	// done closes when the subscription ends (lagged or closed).
	done chan struct{}
	// lagged (cut off: queue full, or evicted) and evicted (displaced by
	// a new subscriber at a full limit) are guarded by hub.mu.
	lagged, evicted bool
	// onCut and onReady, when set, are called (under hub.mu) as the hub
	// cuts the subscriber off (OnCut) and as it queues a batch (OnReady).
	onCut   func(evicted bool)
	onReady func()
	once    sync.Once
	// since is when it subscribed and seq its place in subscription order;
	// writing is when the write to its client in flight began (unix ns,
	// 0: none), set by its writer.
	since   time.Time
	seq     uint64
	writing atomic.Int64
}

// Subscribe registers a subscriber to a session's events, or to the global
// stream when sessionID is "". At a full limit it evicts the subscriber
// evictable picks; when there is none it fails with TooManySubscribers.
func (h *Hub) Subscribe(sessionID string) (*Subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	// The session's own limit first: an eviction there also makes room
	// in the total.
	if sessionID != "" && len(h.sessions[sessionID]) >= h.cfg.MaxPerSession && !h.evictOne(maps.Keys(h.sessions[sessionID]), now) {
		return nil, errcode.New(errcode.TooManySubscribers, "session already has %d streams, none of them stalled or quiet", len(h.sessions[sessionID])).With("retryAfter", 5)
	}
	if h.total >= h.cfg.MaxTotal && !h.evictOne(h.all(), now) {
		return nil, errcode.New(errcode.TooManySubscribers, "the daemon already serves %d streams, none of them stalled or quiet", h.total).With("retryAfter", 5)
	}
	s := &Subscription{hub: h, sessionID: sessionID, ready: make(chan struct{}, 1), done: make(chan struct{}), since: now, seq: h.seq}
	h.seq++
	if sessionID == "" {
		h.global[s] = struct{}{}
	} else {
		set := h.sessions[sessionID]
		if set == nil {
			set = map[*Subscription]struct{}{}
			h.sessions[sessionID] = set
		}
		set[s] = struct{}{}
	}
	h.total++
	return s, nil
}

// Ready has a value when batches wait: Take them.
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

// Take returns the batches waiting, oldest first, and keeps buf as the
// queue's next array, so a busy receiver that hands back what it took
// (cleared, so that it pins no events) allocates nothing. It returns nothing when none wait, also after
// the subscription ended (the batches queued before a cut are still
// valid: a receiver sends them, then says where to resume).
func (s *Subscription) Take(buf [][]*store.Event) [][]*store.Event {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	out := s.queue
	s.queue, s.queued = buf[:0], 0
	if cap(buf) > 64 {
		s.queue = nil // a burst's array goes when it is handed back
	}
	return out
}

// OnCut sets f to be called when the hub cuts the subscriber off (lagged
// or evicted), at once when it already has; nil unsets it. f runs under
// the hub's lock: it must neither block nor call the hub. Once OnCut(nil)
// returns, f runs no more. It replaces a goroutine per subscriber that
// waited on Done.
func (s *Subscription) OnCut(f func(evicted bool)) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.onCut = f
	if f != nil && s.lagged {
		f(s.evicted)
	}
}

// OnReady sets f to be called each time the hub queues a batch, at once
// when batches already wait; nil unsets it. Like OnCut's, f runs under the
// hub's lock, and runs no more once OnReady(nil) returns. A receiver that
// keeps no goroutine waiting on Ready starts one from f.
func (s *Subscription) OnReady(f func()) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.onReady = f
	if f != nil && len(s.queue) > 0 {
		f()
	}
}

// Done closes when the subscription ends; check Lagged to learn why.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Lagged reports whether the subscriber was cut off for falling behind
// (or evicted as stalled): its client should resume from its cursor.
func (s *Subscription) Lagged() bool {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.lagged
}

// Evicted reports whether the subscriber was displaced by a new one at a
// full limit; it must not subscribe again by itself.
func (s *Subscription) Evicted() bool {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.evicted
}

// WriteStarted records that a write to the subscriber's client began;
// WriteDone that it returned. A write in flight for StallAfter marks the
// subscriber stalled, however quiet its stream.
func (s *Subscription) WriteStarted() { s.writing.Store(time.Now().UnixNano()) }

// WriteDone records that the write in flight returned.
func (s *Subscription) WriteDone() { s.writing.Store(0) }

// Close unregisters the subscriber. Safe to call more than once.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	s.hub.remove(s)
	s.hub.mu.Unlock()
}

// remove must be called with h.mu held.
func (h *Hub) remove(s *Subscription) {
	s.once.Do(func() {
		if s.sessionID == "" {
			delete(h.global, s)
		} else if set := h.sessions[s.sessionID]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(h.sessions, s.sessionID)
			}
		}
		h.total--
		close(s.done)
		if s.lagged && s.onCut != nil {
			s.onCut(s.evicted)
		}
	})
}

// Publish delivers committed events, in order, without blocking: each
// subscriber gets the events of its stream as one batch.
func (h *Hub) Publish(evs []store.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	batches := h.batches
	for i := range evs {
		e := &evs[i]
		if e.SessionID != "" {
			for s := range h.sessions[e.SessionID] {
				batches[s] = append(batches[s], e)
			}
		}
		if e.Global {
			for s := range h.global {
				batches[s] = append(batches[s], e)
			}
		}
	}
	for s, b := range batches {
		h.deliver(s, b)
		delete(batches, s)
	}
}

// deliver queues one batch for s, or cuts s off when its queue would pass
// Buffer events. h.mu must be held.
func (h *Hub) deliver(s *Subscription, b []*store.Event) {
	if s.lagged {
		return
	}
	if s.queued+len(b) > h.cfg.Buffer {
		s.lagged = true
		h.remove(s)
		return
	}
	s.queue = append(s.queue, b)
	s.queued += len(b)
	select {
	case s.ready <- struct{}{}:
	default: // a wake-up already waits
	}
	if s.onReady != nil {
		s.onReady()
	}
}

// Count returns the number of live subscribers (for metrics and tests).
func (h *Hub) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}
