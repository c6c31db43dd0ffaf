package executor

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, time.Second
	cases := []struct {
		name     string
		failures int
		want     time.Duration
	}{
		{"first failure", 1, lo},
		{"second doubles", 2, 2 * lo},
		{"fourth", 4, 8 * lo},
		{"capped", 5, hi},
		{"stays capped", 60, hi},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := backoffDelay(tc.failures, lo, hi); got != tc.want {
				t.Fatalf("backoffDelay(%d): got %s, want %s", tc.failures, got, tc.want)
			}
		})
	}
}

func TestCommitTracker(t *testing.T) {
	cases := []struct {
		name     string
		from     uint64
		open     []uint64 // handed over, in order
		settle   []uint64
		want     uint64
		wantOpen int
	}{
		{"nothing", 5, nil, nil, 5, 0},
		{"in order", 0, []uint64{1, 2, 3}, []uint64{1, 2, 3}, 3, 0},
		{"a prefix", 0, []uint64{1, 2, 3}, []uint64{1, 2}, 2, 1},
		{"out of order waits for the gap", 0, []uint64{1, 2, 3}, []uint64{2, 3}, 0, 3},
		{"the gap filled", 0, []uint64{1, 2, 3}, []uint64{3, 2, 1}, 3, 0},
		{"after an attach's From", 10, []uint64{11, 12}, []uint64{11}, 11, 1},
		{"twice is once", 0, []uint64{1, 2}, []uint64{1, 1}, 1, 1},
		{"unknown offsets are ignored", 0, []uint64{1}, []uint64{7}, 0, 1},
		{"offsets the host skipped", 0, []uint64{1, 4}, []uint64{1, 4}, 4, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := commitTracker{frontier: tc.from}
			for _, off := range tc.open {
				tr.open = append(tr.open, openRecord{off: off})
			}
			for _, off := range tc.settle {
				tr.settle(off)
			}
			if tr.frontier != tc.want || len(tr.open) != tc.wantOpen {
				t.Fatalf("got frontier %d with %d open, want %d with %d", tr.frontier, len(tr.open), tc.want, tc.wantOpen)
			}
		})
	}
}
