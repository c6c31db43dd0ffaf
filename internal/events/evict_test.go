package events

import (
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
)

// TestSubscribeAtAFullLimit checks which subscriber a new one displaces at
// a full limit, and when it is refused instead.
func TestSubscribeAtAFullLimit(t *testing.T) {
	const long = time.Hour // "never" within the test
	tests := []struct {
		name string
		cfg  HubConfig
		// sessions of the subscribers that fill the limit ("" global), in
		// subscription order, and of the newcomer.
		subs    []string
		newcome string
		// prepare marks some subscribers busy or stalled.
		prepare func(h *Hub, subs []*Subscription)
		// evicted is the index of the displaced subscriber; -1: refused.
		evicted int
	}{
		{name: "every subscriber young and quiet: refused", cfg: HubConfig{MaxPerSession: 3, StallAfter: long, MinAge: long},
			subs: []string{"s", "s", "s"}, newcome: "s", evicted: -1},
		{name: "a write in flight past StallAfter: that one goes, however young", cfg: HubConfig{MaxPerSession: 3, StallAfter: time.Nanosecond, MinAge: long},
			subs: []string{"s", "s", "s"}, newcome: "s", evicted: 1,
			prepare: func(_ *Hub, subs []*Subscription) { subs[1].WriteStarted() }},
		{name: "a queue above the high-water mark counts as stalled", cfg: HubConfig{Buffer: 4, MaxPerSession: 3, StallAfter: long, MinAge: long},
			subs: []string{"s", "s", "s"}, newcome: "s", evicted: 2,
			prepare: func(h *Hub, subs []*Subscription) {
				h.Publish([]store.Event{{SessionID: "s", Seq: 1}, {SessionID: "s", Seq: 2}, {SessionID: "s", Seq: 3}})
				for _, s := range subs[:2] {
					s.Take(nil)
				}
			}},
		{name: "none stalled: the oldest quiet one goes", cfg: HubConfig{MaxPerSession: 3, StallAfter: long, MinAge: time.Nanosecond},
			subs: []string{"s", "s", "s"}, newcome: "s", evicted: 0},
		{name: "a stalled one goes before an older quiet one", cfg: HubConfig{MaxPerSession: 3, StallAfter: time.Nanosecond, MinAge: time.Nanosecond},
			subs: []string{"s", "s", "s"}, newcome: "s", evicted: 2,
			prepare: func(_ *Hub, subs []*Subscription) { subs[2].WriteStarted() }},
		{name: "writes in flight under StallAfter are protected: refused", cfg: HubConfig{MaxPerSession: 2, StallAfter: long, MinAge: time.Nanosecond},
			subs: []string{"s", "s"}, newcome: "s", evicted: -1,
			prepare: func(_ *Hub, subs []*Subscription) {
				for _, s := range subs {
					s.WriteStarted()
				}
			}},
		{name: "other sessions' subscribers do not count", cfg: HubConfig{MaxPerSession: 2, StallAfter: long, MinAge: long},
			subs: []string{"a", "a", "b"}, newcome: "b", evicted: -2},
		{name: "the daemon-wide limit displaces across sessions and the global stream", cfg: HubConfig{MaxPerSession: 8, MaxTotal: 3, StallAfter: long, MinAge: time.Nanosecond},
			subs: []string{"", "a", "b"}, newcome: "c", evicted: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHub(tt.cfg)
			var subs []*Subscription
			for _, sid := range tt.subs {
				s, err := h.Subscribe(sid)
				if err != nil {
					t.Fatalf("subscribe %q: %v", sid, err)
				}
				subs = append(subs, s)
			}
			if tt.prepare != nil {
				tt.prepare(h, subs)
			}
			n, err := h.Subscribe(tt.newcome)
			if tt.evicted == -1 {
				if !errcode.Is(err, errcode.TooManySubscribers) {
					t.Fatalf("newcomer: got %v, want too_many_subscribers", err)
				}
			} else if err != nil {
				t.Fatalf("newcomer: got %v, want admitted", err)
			} else {
				n.Close()
			}
			for i, s := range subs {
				want := i == tt.evicted
				if got := s.Evicted(); got != want {
					t.Errorf("subscriber %d evicted: got %v, want %v", i, got, want)
				}
				if want && !s.Lagged() {
					t.Errorf("subscriber %d: evicted but not lagged (its client would not resume)", i)
				}
				select {
				case <-s.Done():
					if !want {
						t.Errorf("subscriber %d: closed, want open", i)
					}
				default:
					if want {
						t.Errorf("subscriber %d: open, want closed", i)
					}
				}
			}
		})
	}
}
