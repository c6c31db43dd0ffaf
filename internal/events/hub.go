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
	// C delivers this stream's events of each commit as one batch, in
	// commit order: one send per subscriber per commit, not per event.
	// Pointers avoid copying each event per subscriber; receivers must
	// modify neither the batch nor its events.
	C chan []*store.Event
	// sizes are the lengths of the batches sent that may still be in C,
	// oldest first, and queued their sum: the queue's length in events,
	// which Buffer bounds (guarded by hub.mu; see take).
	sizes  []int
	queued int
	// done closes when the subscription ends (lagged or closed).
	done chan struct{}
	// lagged (cut off: queue full, or evicted) and evicted (displaced by
	// a new subscriber at a full limit) are guarded by hub.mu.
	lagged, evicted bool
	once            sync.Once
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
	s := &Subscription{hub: h, sessionID: sessionID, C: make(chan []*store.Event, batchSlots(h.cfg.Buffer)), done: make(chan struct{}), since: now, seq: h.seq}
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
	})
}

// batchSlots is the capacity of a subscriber's channel for a queue of
// buffer events: a batch holds one event or more, so buffer/8 slots
// (at least 16) rarely fill before the event bound does, and keep an
// idle subscriber small.
func batchSlots(buffer int) int { return max(16, buffer/8) }

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
// Buffer events (or its channel is full). h.mu must be held.
func (h *Hub) deliver(s *Subscription, b []*store.Event) {
	if s.lagged {
		return
	}
	s.take()
	if s.queued+len(b) > h.cfg.Buffer {
		s.lagged = true
		h.remove(s)
		return
	}
	select {
	case s.C <- b:
		s.sizes = append(s.sizes, len(b))
		s.queued += len(b)
	default:
		s.lagged = true
		h.remove(s)
	}
}

// take forgets the batches the receiver has taken out of C since the
// last look (C holds the newest len(C) of those sent), so queued counts
// only what waits. h.mu must be held.
func (s *Subscription) take() {
	for taken := len(s.sizes) - len(s.C); taken > 0; taken-- {
		s.queued -= s.sizes[0]
		s.sizes = s.sizes[1:]
	}
	if len(s.sizes) == 0 {
		s.sizes = s.sizes[:0:0] // let a long queue's array go
	}
}

// Count returns the number of live subscribers (for metrics and tests).
func (h *Hub) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}
