package outbox

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/tether/tether/internal/atomicfile"
	"github.com/tether/tether/internal/errcode"
)

// readBudget caps the bytes one Read returns (it always returns at least
// one record when there is one), so a sender's batch stays bounded however
// large the records are.
const readBudget = 4 << 20

// Record is one entry of the outbox.
type Record struct {
	Offset uint64
	// Data may be shared with the outbox and other Reads: read it, do not
	// change it.
	Data []byte
}

// Read returns up to limit committed records with offsets ≥ from and above
// the acknowledged offset, in order, stopping early past a few megabytes.
// Asking beyond the last record returns what there is (possibly nothing).
// Only committed records are returned: written and, unless
// Config.SyncDelay is set, fsynced, so an offset the daemon sees never
// goes to another record after a crash of the host (with a SyncDelay:
// after a crash of the host's process; after the machine's, the log may
// end before an offset the daemon saw, which its user must check). Every
// frame's checksum is checked again: a Read returns the intact records
// before a damaged one, and one that starts at it fails with a
// *CorruptError. Records Skip hides are passed over.
func (o *Outbox) Read(from uint64, limit int) ([]Record, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return nil, ErrClosed
	}
	from = max(from, o.acked+1)
	if o.skipTo != 0 && from >= o.skipFrom && from <= o.skipTo {
		from = o.skipTo + 1
	}
	if limit <= 0 || from >= o.next {
		return nil, nil
	}
	if o.skipTo != 0 && from < o.skipFrom {
		limit = int(min(uint64(limit), o.skipFrom-from))
	}
	if live := o.live(); len(live) > 0 && from >= live[0].Offset {
		recs := live[from-live[0].Offset:]
		budget, n := readBudget, 0
		for n < len(recs) && n < limit && (n == 0 || budget > 0) {
			budget -= len(recs[n].Data)
			n++
		}
		return append([]Record(nil), recs[:n]...), nil
	}
	i := sort.Search(len(o.segs), func(i int) bool { return o.segs[i].last() >= from })
	var out []Record
	budget := readBudget
	for ; i < len(o.segs) && len(out) < limit && budget > 0; i++ {
		s := o.segs[i]
		a := int(max(from, s.first) - s.first)
		if a >= len(s.pos) {
			continue
		}
		b := a
		for used := 0; b < len(s.pos) && len(out)+(b-a) < limit && (b == a || used < budget); b++ {
			used += int(s.frameEnd(b) - int64(s.pos[b]))
		}
		start, end := int64(s.pos[a]), s.frameEnd(b-1)
		buf := make([]byte, end-start)
		if n, err := s.f.ReadAt(buf, start); err != nil {
			// Cut short (a file truncated under the outbox, a disk
			// error): what was read is checked, the rest is damage.
			buf = buf[:n]
		}
		budget -= len(buf)
		for j := a; j < b; j++ {
			off := s.first + uint64(j)
			p, e := int64(s.pos[j])-start, s.frameEnd(j)-start
			if e > int64(len(buf)) {
				return damaged(out, &CorruptError{Path: s.path, Pos: int64(s.pos[j]), Offset: off, Reason: "record cannot be read from the file any more"})
			}
			data, _, st := parseFrame(buf[p:e], off)
			if st != frameOK {
				return damaged(out, &CorruptError{Path: s.path, Pos: int64(s.pos[j]), Offset: off, Reason: "record changed on disk since it was written (checksum)"})
			}
			out = append(out, Record{Offset: off, Data: data})
		}
	}
	return out, nil
}

// damaged ends a Read at a damaged record: the intact records before it
// are returned, and a Read that starts at it gets the error.
func damaged(out []Record, err *CorruptError) ([]Record, error) {
	if len(out) > 0 {
		return out, nil
	}
	return nil, err
}

// Wait blocks until a record with an offset above after is committed, ctx
// ends (its error) or the outbox closes (ErrClosed). A sender loops on
// Wait(ctx, lastSent) then Read(lastSent+1, n).
func (o *Outbox) Wait(ctx context.Context, after uint64) error {
	for {
		o.mu.RLock()
		ready, closed, ch := o.next-1 > after, o.closed, o.changed
		o.mu.RUnlock()
		switch {
		case closed:
			return ErrClosed
		case ready:
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Ack records that the daemon committed every record up to upTo. It is
// idempotent (an older or equal ack does nothing) and durable before it
// returns (the acked file is replaced atomically); segments whose records
// are all acknowledged are then deleted. Acking beyond the last committed
// record fails with errcode.InvalidRequest: the daemon cannot have it.
func (o *Outbox) Ack(upTo uint64) error {
	o.ackMu.Lock()
	defer o.ackMu.Unlock()
	o.mu.RLock()
	acked, next, closed := o.acked, o.next, o.closed
	o.mu.RUnlock()
	switch {
	case closed:
		return ErrClosed
	case upTo <= acked:
		return nil
	case upTo >= next:
		return errcode.New(errcode.InvalidRequest, "ack of offset %d, but the outbox's last record is %d", upTo, next-1)
	}
	// The acked file must never name a record the disk may still lose
	// (Config.SyncDelay): Open would find the log ending before it.
	if upTo > o.durable.Load() {
		o.syncActive()
		if d := o.durable.Load(); upTo > d {
			return errcode.New(errcode.StoreWriteFailed, "ack of offset %d: the outbox could not make its records durable (durable up to %d)", upTo, d)
		}
	}
	if err := writeAcked(o.dir, upTo); err != nil {
		return err
	}
	o.mu.Lock()
	o.pending -= o.bytesIn(acked+1, upTo)
	o.acked = upTo
	if live := o.live(); len(live) > 0 && live[0].Offset <= upTo {
		o.dropTail(int(min(upTo-live[0].Offset+1, uint64(len(live)))))
	}
	var drop []*segment
	for len(o.segs) > 1 && o.segs[1].first <= upTo+1 {
		drop = append(drop, o.segs[0])
		o.segs = o.segs[1:]
	}
	o.mu.Unlock()
	// The ack is durable, so a crash before these removals only leaves
	// files that Open removes again.
	for _, s := range drop {
		if err := s.f.Close(); err != nil {
			return err
		}
		if err := os.Remove(s.path); err != nil {
			return err
		}
	}
	if len(drop) > 0 {
		return atomicfile.SyncDir(o.dir, nil)
	}
	return nil
}

// writeAcked replaces dir's acked file atomically (atomicfile.Write:
// a temporary file, synced, renamed over it, the directory synced).
func writeAcked(dir string, acked uint64) error {
	return atomicfile.Write(filepath.Join(dir, ackedFile), []byte(strconv.FormatUint(acked, 10)+"\n"))
}
