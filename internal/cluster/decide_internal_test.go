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

func TestFeedAdvance(t *testing.T) {
	ids := func(xs ...int64) []store.Event {
		out := make([]store.Event, len(xs))
		for i, x := range xs {
			out[i] = store.Event{ID: x}
		}
		return out
	}
	t0 := time.Unix(1_800_000_000, 0)
	const wait = 10 * time.Second
	cases := []struct {
		name        string
		last        int64
		evs         []store.Event
		gapSince    time.Time
		now         time.Time
		wantN       int
		wantSkipped int64
		wantLast    int64
		wantGap     bool
	}{
		{"an unbroken run", 10, ids(11, 12, 13), time.Time{}, t0, 3, 0, 13, false},
		{"up to a gap", 10, ids(11, 13), time.Time{}, t0, 1, 0, 11, false},
		{"a gap first: wait for the late commit", 10, ids(12, 13), time.Time{}, t0, 0, 0, 10, true},
		{"the late commit arrived", 10, ids(11, 12, 13), t0, t0.Add(time.Second), 3, 0, 13, false},
		{"still missing, not for long", 10, ids(12, 13), t0, t0.Add(wait - time.Millisecond), 0, 0, 10, true},
		{"missing past the wait: go on after it", 10, ids(12, 13), t0, t0.Add(wait), 2, 1, 13, false},
		{"nothing new", 10, nil, time.Time{}, t0, 0, 0, 10, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &Feed{gapWait: wait, last: tc.last, gapSince: tc.gapSince}
			n, skipped := f.advance(tc.last, tc.evs, tc.now)
			if n != tc.wantN || skipped != tc.wantSkipped || f.last != tc.wantLast || f.gapSince.IsZero() == tc.wantGap {
				t.Errorf("got n %d skipped %d last %d gap %v, want %d %d %d %v", n, skipped, f.last, !f.gapSince.IsZero(), tc.wantN, tc.wantSkipped, tc.wantLast, tc.wantGap)
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
