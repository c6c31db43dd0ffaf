package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/internal/store"
)

func TestFenceCheck(t *testing.T) {
	const me = "node-a"
	held := map[string]int64{"s1": 3, "s2": 1, "s3": 7}
	cases := []struct {
		name     string
		sessions []string
		rows     []store.Lease
		want     []string
	}{
		{"held live at the same generation", []string{"s1"}, []store.Lease{{SessionID: "s1", NodeID: me, Generation: 3, Live: true}}, nil},
		{"taken by another node", []string{"s1"}, []store.Lease{{SessionID: "s1", NodeID: "node-b", Generation: 4, Live: true}}, []string{"s1"}},
		{"taken back by this node since (a newer generation)", []string{"s1"}, []store.Lease{{SessionID: "s1", NodeID: me, Generation: 5, Live: true}}, []string{"s1"}},
		{"expired, not taken yet", []string{"s2"}, []store.Lease{{SessionID: "s2", NodeID: me, Generation: 1, Live: false}}, []string{"s2"}},
		{"no lease row", []string{"s3"}, nil, []string{"s3"}},
		{"not held here", []string{"s9"}, []store.Lease{{SessionID: "s9", NodeID: me, Generation: 1, Live: true}}, []string{"s9"}},
		{"one of several lost", []string{"s3", "s1", "s2"}, []store.Lease{
			{SessionID: "s1", NodeID: me, Generation: 3, Live: true},
			{SessionID: "s2", NodeID: "node-c", Generation: 2, Live: true},
			{SessionID: "s3", NodeID: me, Generation: 7, Live: true},
		}, []string{"s2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fenceCheck(me, held, tc.sessions, tc.rows); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRenewalDecisions(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	ttl := 10 * time.Second
	expiry := []struct {
		name string
		now  time.Time
		want bool
	}{
		{"just renewed", t0, false},
		{"within the TTL", t0.Add(ttl - time.Millisecond), false},
		{"a TTL without renewal", t0.Add(ttl), true},
	}
	for _, tc := range expiry {
		t.Run(tc.name, func(t *testing.T) {
			if got := selfExpired(t0, tc.now, ttl); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	held := map[string]int64{"a": 1, "b": 2, "c": 3}
	lost := []struct {
		name    string
		renewed []string
		want    []string
	}{
		{"all renewed", []string{"c", "a", "b"}, nil},
		{"one taken", []string{"a", "c"}, []string{"b"}},
		{"none renewed", nil, []string{"a", "b", "c"}},
	}
	for _, tc := range lost {
		t.Run(tc.name, func(t *testing.T) {
			if got := notRenewed(held, tc.renewed); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFeedSettle(t *testing.T) {
	ids := func(xs ...int64) []store.Event {
		out := make([]store.Event, len(xs))
		for i, x := range xs {
			out[i] = store.Event{ID: x}
		}
		return out
	}
	cases := []struct {
		name        string
		last        int64
		horizon     int64
		evs         []store.Event
		limit       int
		wantNext    int64
		wantSkipped int64
	}{
		{"every id up to the horizon", 10, 13, ids(11, 12, 13), 512, 13, 0},
		{"an id rolled back", 10, 13, ids(11, 13), 512, 13, 1},
		{"the last ids rolled back", 10, 15, ids(11, 12), 512, 15, 3},
		{"nothing committed up to the horizon", 10, 12, nil, 512, 12, 2},
		{"a full page stops at its last id", 10, 20, ids(11, 13), 2, 13, 1},
		{"a full page of every id", 10, 20, ids(11, 12), 2, 12, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, skipped := settle(tc.last, tc.horizon, tc.evs, tc.limit)
			if next != tc.wantNext || skipped != tc.wantSkipped {
				t.Errorf("got next %d skipped %d, want %d %d", next, skipped, tc.wantNext, tc.wantSkipped)
			}
		})
	}
}

// TestLeaseExpiry: a lease counts as lost once neither the node's last
// renewal nor its own taking is within the TTL. A lease taken again after
// an outage, before the node's next renewal, is good from its taking.
func TestLeaseExpiry(t *testing.T) {
	const ttl = 10 * time.Second
	t0 := time.Unix(1_800_000_000, 0)
	cases := []struct {
		name      string
		renewedAt time.Time
		takenAt   time.Time // zero: taken before the last renewal
		now       time.Time
		want      bool
	}{
		{"renewed within the TTL", t0, time.Time{}, t0.Add(ttl - time.Millisecond), false},
		{"no renewal for a TTL", t0, time.Time{}, t0.Add(ttl), true},
		{"no renewal for a TTL, taken just now", t0, t0.Add(50 * time.Second), t0.Add(51 * time.Second), false},
		{"no renewal, and taken a TTL ago", t0, t0.Add(50 * time.Second), t0.Add(60 * time.Second), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &Leases{cfg: Config{TTL: ttl}, renewedAt: tc.renewedAt, held: map[string]int64{"s": 1}, takenAt: map[string]time.Time{}}
			if !tc.takenAt.IsZero() {
				l.takenAt["s"] = tc.takenAt
			}
			if got := l.expiredLocked("s", tc.now); got != tc.want {
				t.Errorf("got expired %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	cases := []struct {
		name    string
		in      Config
		wantErr bool
	}{
		{"defaults", Config{NodeID: "n1", URL: "http://127.0.0.1:7777"}, false},
		{"no node id", Config{URL: "http://127.0.0.1:7777"}, true},
		{"no URL", Config{NodeID: "n1"}, true},
		{"not http", Config{NodeID: "n1", URL: "ftp://x"}, true},
		{"TTL too short", Config{NodeID: "n1", URL: "http://x:1", TTL: 500 * time.Millisecond}, true},
		{"renewal too slow for the TTL", Config{NodeID: "n1", URL: "http://x:1", TTL: 10 * time.Second, RenewEvery: 6 * time.Second}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.WithDefaults()
			if (err != nil) != tc.wantErr {
				t.Fatalf("got err %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (got.TTL != DefaultTTL || got.RenewEvery != DefaultTTL/4 || got.ScanEvery != 500*time.Millisecond || got.NodeID == "") {
				t.Errorf("got %+v, want TTL %s, renewals every TTL/4, a scan every 500ms and a node id", got, DefaultTTL)
			}
		})
	}
}
