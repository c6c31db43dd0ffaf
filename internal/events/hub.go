package events

import (
	"sync"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
)

// HubConfig bounds the hub's fan-out.
type HubConfig struct {
	// Buffer is each subscriber's queue length; overflowing it means the
	// subscriber is too slow and it is cut off (it reconnects from its cursor).
	Buffer int
	// MaxPerSession and MaxTotal bound live subscribers.
	MaxPerSession int
	MaxTotal      int
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
	return &Hub{cfg: cfg, sessions: map[string]map[*Subscription]struct{}{}, global: map[*Subscription]struct{}{}}
}

// Subscription is one live subscriber's queue.
type Subscription struct {
	hub       *Hub
	sessionID string // "" for the global stream
	// C delivers events in commit order. Pointers keep an idle
	// subscriber's queue small (8 bytes a slot) and avoid copying each
	// event per subscriber; receivers must not modify them.
	C chan *store.Event
	// done closes when the subscription ends (lagged or closed).
	done   chan struct{}
	lagged bool // guarded by hub.mu
	once   sync.Once
}

// Subscribe registers a subscriber to a session's events, or to the global
// stream when sessionID is "". It fails with TooManySubscribers past the
// configured limits.
func (h *Hub) Subscribe(sessionID string) (*Subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.total >= h.cfg.MaxTotal {
		return nil, errcode.New(errcode.TooManySubscribers, "the daemon already serves %d streams", h.total).With("retryAfter", 5)
	}
	s := &Subscription{hub: h, sessionID: sessionID, C: make(chan *store.Event, h.cfg.Buffer), done: make(chan struct{})}
	if sessionID == "" {
		h.global[s] = struct{}{}
	} else {
		set := h.sessions[sessionID]
		if len(set) >= h.cfg.MaxPerSession {
			return nil, errcode.New(errcode.TooManySubscribers, "session already has %d streams", len(set)).With("retryAfter", 5)
		}
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

// Lagged reports whether the subscriber was cut off for falling behind.
func (s *Subscription) Lagged() bool {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.lagged
}

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

// Publish delivers committed events, in order, without blocking.
func (h *Hub) Publish(evs []store.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range evs {
		e := &evs[i]
		if e.SessionID != "" {
			for s := range h.sessions[e.SessionID] {
				h.deliver(s, e)
			}
		}
		if e.Global {
			for s := range h.global {
				h.deliver(s, e)
			}
		}
	}
}

func (h *Hub) deliver(s *Subscription, e *store.Event) {
	select {
	case s.C <- e:
	default:
		s.lagged = true
		h.remove(s)
	}
}

// Count returns the number of live subscribers (for metrics and tests).
func (h *Hub) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}
