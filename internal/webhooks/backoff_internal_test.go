package webhooks

import (
	"testing"
	"time"
)

// TestBackoff: the wait after the nth failed attempt is base doubled n-1
// times, capped at most, less a random share of at most half.
func TestBackoff(t *testing.T) {
	base, most := time.Second, 5*time.Minute
	cases := []struct {
		n      int
		lo, hi time.Duration
	}{
		{1, base / 2, base},
		{2, base, 2 * base},
		{4, 4 * base, 8 * base},
		{9, 128 * base, 256 * base},
		{10, most / 2, most},
		{1000, most / 2, most},
	}
	for _, tc := range cases {
		for range 50 {
			if got := backoff(base, most, tc.n); got < tc.lo || got > tc.hi {
				t.Fatalf("backoff after %d failures: got %s, want within [%s, %s]", tc.n, got, tc.lo, tc.hi)
			}
		}
	}
}
