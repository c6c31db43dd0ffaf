package executor

import (
	"sort"
	"sync/atomic"
)

// Commits: which of a session's records the daemon has committed, and so
// may acknowledge. A record is acknowledged only once committed, also one
// that brings the handler no update (RecordHandler): the host drops what
// is acknowledged, and the next attach starts after what is committed.

// onOffset has the RecordHandler commit the offset of a record that
// brings the handler no update, once the window has room; without a
// RecordHandler, or for an agent that ended, it counts as committed now.
func (a *Agent) onOffset(off uint64) {
	if a.records == nil || !a.delivers() {
		a.add(off)
		return
	}
	if a.credit(off) {
		a.deliverOffset(off)
	}
}

// deliverOffset hands the record's offset to the RecordHandler; the
// caller holds its credit.
func (a *Agent) deliverOffset(off uint64) {
	a.mu.Lock()
	a.commits.open = append(a.commits.open, openRecord{off: off})
	a.mu.Unlock()
	var once atomic.Bool
	a.records.Record(off, func() {
		if once.CompareAndSwap(false, true) {
			<-a.credits
			a.settleDurable(off)
		}
	})
}

// commitTracker follows which of a session's records the daemon has
// committed: every record up to frontier is. Records are handed over in
// offset order (open), and may be committed out of order; the frontier
// moves over each run of committed ones.
type commitTracker struct {
	frontier uint64
	open     []openRecord
}

type openRecord struct {
	off  uint64
	done bool
}

// settle marks off committed and reports whether the frontier moved.
func (t *commitTracker) settle(off uint64) bool {
	i := sort.Search(len(t.open), func(i int) bool { return t.open[i].off >= off })
	if i == len(t.open) || t.open[i].off != off {
		return false
	}
	t.open[i].done = true
	n := 0
	for n < len(t.open) && t.open[n].done {
		n++
	}
	if n == 0 {
		return false
	}
	t.frontier = t.open[n-1].off
	t.open = t.open[n:]
	return true
}
