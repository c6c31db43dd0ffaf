package executor

import (
	"slices"
	"testing"
)

// TestDeliveryQueue: items come out in order whatever mix of pushes,
// front pushes and pops made them, and a queue that empties and fills
// again reuses its array.
func TestDeliveryQueue(t *testing.T) {
	cases := []struct {
		name string
		ops  string // p: push the next offset, f: push it to the front, o: pop
		want []uint64
	}{
		{"fifo", "pppooo", []uint64{1, 2, 3}},
		{"front first", "ppfooo", []uint64{3, 1, 2}},
		{"front into a popped head", "pppoffoooo", []uint64{1, 5, 4, 2, 3}},
		{"front into an empty queue", "fo", []uint64{1}},
		{"interleaved", "popoppoopo", []uint64{1, 2, 3, 4, 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &Agent{}
			var next uint64
			var got []uint64
			for _, op := range c.ops {
				switch op {
				case 'p':
					next++
					a.pushLocked(item{off: next})
				case 'f':
					next++
					a.pushFrontLocked(item{off: next})
				case 'o':
					got = append(got, a.popLocked().off)
				}
			}
			if a.queuedLocked() != 0 {
				t.Fatalf("left queued: got %d, want 0", a.queuedLocked())
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	t.Run("reuse", func(t *testing.T) {
		a := &Agent{}
		for range 64 {
			a.pushLocked(item{})
		}
		c := cap(a.queue)
		for round := range 100 {
			for range 32 {
				a.popLocked()
				a.pushLocked(item{off: uint64(round)})
			}
		}
		if cap(a.queue) != c {
			t.Fatalf("capacity after 3,200 pops and pushes at 64 queued: got %d, want %d (reused)", cap(a.queue), c)
		}
		if a.queuedLocked() != 64 {
			t.Fatalf("queued: got %d, want 64", a.queuedLocked())
		}
	})
}
