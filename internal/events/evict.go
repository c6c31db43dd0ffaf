package events

import (
	"iter"
	"maps"
	"time"
)

// A subscriber at a full limit is one of three kinds, cheap to tell apart
// under the hub's lock:
//
//   - stalled: a write to its client has been in flight for StallAfter (the
//     socket buffers are full: the client stopped reading), or its queue is
//     above the high-water mark (its writer is not keeping up);
//   - quiet: nothing in flight, nothing queued, connected for MinAge. Over
//     TCP a client that never reads looks exactly like this while its
//     stream carries less than its socket buffers hold (its kernel
//     acknowledges what its program never reads), so no test can prove it
//     healthy;
//   - busy: everything else (taking events, or newly connected).
//
// A new subscriber displaces the oldest stalled one, else the oldest quiet
// one, and is refused only when every subscriber is busy. The displaced
// subscriber gets stream_lagged with its cursor and is closed: a real
// client reconnects from there and loses nothing.

// highWater is the queue fill (as a fraction of Buffer, 1/highWater) past
// which a subscriber counts as stalled.
const highWater = 2

// evictOne evicts the best candidate of subs and reports whether there was
// one. h.mu must be held.
func (h *Hub) evictOne(subs iter.Seq[*Subscription], now time.Time) bool {
	var stalled, quiet *Subscription
	for s := range subs {
		switch {
		case h.stalled(s, now):
			if stalled == nil || s.seq < stalled.seq {
				stalled = s
			}
		case h.quiet(s, now):
			if quiet == nil || s.seq < quiet.seq {
				quiet = s
			}
		}
	}
	victim := stalled
	if victim == nil {
		victim = quiet
	}
	if victim == nil {
		return false
	}
	victim.lagged, victim.evicted = true, true
	h.remove(victim)
	return true
}

func (h *Hub) stalled(s *Subscription, now time.Time) bool {
	if w := s.writing.Load(); w != 0 && now.Sub(time.Unix(0, w)) >= h.cfg.StallAfter {
		return true
	}
	return s.queued > h.cfg.Buffer/highWater
}

func (h *Hub) quiet(s *Subscription, now time.Time) bool {
	return s.writing.Load() == 0 && s.queued == 0 && now.Sub(s.since) >= h.cfg.MinAge
}

// all yields every live subscriber. h.mu must be held.
func (h *Hub) all() iter.Seq[*Subscription] {
	return func(yield func(*Subscription) bool) {
		for s := range h.global {
			if !yield(s) {
				return
			}
		}
		for _, set := range h.sessions {
			for s := range maps.Keys(set) {
				if !yield(s) {
					return
				}
			}
		}
	}
}
