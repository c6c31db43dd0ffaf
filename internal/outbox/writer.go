package outbox

import (
	"context"
	"github.com/tether/tether/internal/rawio"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// Bounds of one group commit: what a leader (see lead) takes from waiting
// Appends before it writes and syncs. They bound the write buffer, not
// throughput: the next batch starts as soon as this one is synced.
const (
	maxBatchRecords = 4096
	maxBatchBytes   = 8 << 20
)

// appendReq is one record waiting for its commit.
type appendReq struct {
	data  []byte
	off   uint64
	err   error
	group *appendGroup
}

// appendGroup is what one Append or AppendBatch queues: its
// records go into one commit, in order, and once one of them fails the
// rest fail too, so that what is appended is always a prefix.
type appendGroup struct {
	reqs   []appendReq
	failed error
	done   chan struct{}
}

// Append writes rec to the outbox and returns its offset once the record is
// durable (fsynced; written only, with Config.SyncDelay). Offsets start at
// 1 and have no gaps: a failed Append takes none. Appends that wait
// together share one write and one fsync.
//
// ctx is checked once, before the record is queued. Once queued, Append
// waits for the outcome whatever ctx does: a record that may still become
// durable must not be reported as failed, or a retry would append it
// twice. It fails with errcode.OutboxFull past Config.MaxBytes (unless
// nothing is pending: a record larger than the limit is taken alone),
// errcode.PayloadTooLarge for a record larger than a segment can hold,
// errcode.StoreWriteFailed when the disk refuses it (nothing is recorded
// then), and ErrClosed after Close. The outbox keeps rec for a while (its
// last records are read from memory): do not change it after the call.
func (o *Outbox) Append(ctx context.Context, rec []byte) (uint64, error) {
	n, off, err := o.AppendBatch(ctx, [][]byte{rec})
	if n == 0 {
		return 0, err
	}
	return off, nil
}

// AppendBatch appends recs in order within one commit: one write and one
// fsync, unless a segment fills up on the way. It returns how many were
// appended, at consecutive offsets from first, and, if not all of them,
// why recs[n] was not; none after it is appended either, so what is
// appended is always a prefix of recs. The errors and ctx are Append's.
func (o *Outbox) AppendBatch(ctx context.Context, recs [][]byte) (n int, first uint64, err error) {
	take, tooLarge := len(recs), error(nil)
	for i, rec := range recs {
		if len(rec) > o.cfg.maxRecord() {
			take = i
			tooLarge = errcode.New(errcode.PayloadTooLarge, "record of %d bytes is larger than a %d-byte segment holds", len(rec), o.cfg.SegmentBytes)
			break
		}
	}
	if take == 0 {
		return 0, 0, tooLarge
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	g := &appendGroup{reqs: make([]appendReq, take), done: make(chan struct{})}
	for i := range g.reqs {
		g.reqs[i] = appendReq{data: recs[i], group: g}
	}
	o.qmu.Lock()
	if o.stopped {
		o.qmu.Unlock()
		return 0, 0, ErrClosed
	}
	o.queued = append(o.queued, g)
	lead := !o.leading
	if lead {
		o.leading = true
		o.leaders.Add(1)
	}
	o.qmu.Unlock()
	if lead {
		o.lead()
	}
	<-g.done
	for n < take && g.reqs[n].err == nil {
		n++
	}
	switch {
	case n < take:
		err = g.reqs[n].err
	case take < len(recs):
		err = tooLarge
	}
	return n, g.reqs[0].off, err
}

// lead commits the queued groups, and those queued meanwhile, until none
// is left: the Append that found no commit under way does it on its own
// goroutine (no hand-off to a writer and back), and the Appends that
// queue while it writes share its next commit (group commit). One leader
// at a time owns the active segment and the write buffer.
func (o *Outbox) lead() {
	defer o.leaders.Done()
	batch := make([]*appendReq, 0, 64)
	var groups []*appendGroup
	for {
		o.qmu.Lock()
		if len(o.queued) == 0 {
			o.leading = false
			o.qmu.Unlock()
			return
		}
		// Take groups up to the bounds of one commit (at least one).
		batch, groups = batch[:0], groups[:0]
		size, i := 0, 0
		for ; i < len(o.queued) && (i == 0 || len(batch) < maxBatchRecords && size < maxBatchBytes); i++ {
			g := o.queued[i]
			groups = append(groups, g)
			for j := range g.reqs {
				batch = append(batch, &g.reqs[j])
				size += len(g.reqs[j].data)
			}
		}
		rest := copy(o.queued, o.queued[i:])
		clear(o.queued[rest:])
		o.queued = o.queued[:rest]
		o.qmu.Unlock()
		o.commit(batch)
		for _, g := range groups {
			close(g.done)
		}
		clear(batch)
		clear(groups)
		if o.cfg.SyncDelay > 0 {
			select {
			case o.dirty <- struct{}{}:
			default:
			}
		}
	}
}

// syncer fsyncs what the leaders wrote within Config.SyncDelay of the
// first unsynced commit, on a goroutine of its own so that no Append
// waits for the disk. It makes everything durable once more as the
// outbox closes.
func (o *Outbox) syncer() {
	defer o.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-o.quit:
			o.syncActive()
			return
		case <-o.dirty:
		}
		t.Reset(o.cfg.SyncDelay)
		select {
		case <-o.quit:
			o.syncActive()
			return
		case <-t.C:
		}
		o.syncActive()
	}
}

// syncActive makes every committed record durable: the active segment is
// the only one that can hold unsynced records (a full one is synced
// before the next is started). The syncer calls it after its delay, Ack
// before it acknowledges records not yet durable; the segment stays open
// meanwhile (segments are closed only by Ack, under ackMu, and by Close
// after the syncer ended).
func (o *Outbox) syncActive() {
	o.mu.RLock()
	seg, last := o.active, o.next-1
	o.mu.RUnlock()
	if last <= o.durable.Load() || seg == nil {
		return
	}
	if err := o.sync(seg.f); err != nil {
		o.log.Error("outbox: fsync of written records failed; they survive a crash of this process, not of the machine", "segment", seg.path, "err", err)
		return
	}
	o.syncs.Add(1)
	o.markDurable(last)
}

// markDurable raises the durable offset to off.
func (o *Outbox) markDurable(off uint64) {
	for {
		cur := o.durable.Load()
		if off <= cur || o.durable.CompareAndSwap(cur, off) {
			return
		}
	}
}

// staged is what a commit wrote to one segment, published once synced.
type staged struct {
	seg   *segment
	isNew bool
	pos   []uint32
	size  int64
}

// commit writes a batch, syncs it and publishes it, setting each request's
// offset or error. A segment that would overflow is synced and followed by
// a new one; records synced before a later failure stay committed, and the
// failed ones take no offsets.
func (o *Outbox) commit(batch []*appendReq) {
	if o.broken != nil {
		failFrom(batch, errcode.Wrap(errcode.StoreWriteFailed, o.broken, "the outbox could not undo a failed write; it needs reopening"))
		return
	}
	o.mu.RLock()
	pending := o.pending // Acks only lower it, so a stale value errs on the safe side
	o.mu.RUnlock()
	next := o.active.first + o.active.count() // the leader alone moves it

	var done []*staged
	cur := &staged{seg: o.active, size: o.active.size}
	first := 0 // the first request written to cur
	for i, r := range batch {
		if r.group.failed != nil {
			r.err = r.group.failed // an earlier record of its group was refused
			continue
		}
		fl := int64(frameHeaderSize + len(r.data))
		// An outbox with nothing pending takes a record past the limit:
		// refused, it could never be appended.
		if pending > 0 && pending+fl > o.cfg.MaxBytes {
			r.err = errcode.New(errcode.OutboxFull, "outbox holds %d unacknowledged bytes; a %d-byte record would pass its limit of %d", pending, fl, o.cfg.MaxBytes)
			r.group.failed = r.err
			continue
		}
		overflow := cur.size+int64(len(o.buf))+fl > o.cfg.SegmentBytes
		if (overflow || o.rollFailed) && cur.seg.count()+uint64(len(cur.pos)) > 0 {
			// A full segment is synced whatever the SyncDelay: only the
			// last one may hold unsynced records.
			if err := o.flush(cur, true); err != nil {
				failFrom(batch[first:], err)
				break
			}
			// Everything before this segment's end is durable now.
			o.markDurable(next - 1)
			seg, err := createSegment(o.dir, next, o.sync)
			if err != nil {
				o.log.Error("outbox: could not start a new segment", "first", next, "err", err)
				failFrom(batch[i:], errcode.Wrap(errcode.StoreWriteFailed, err, "could not start a new outbox segment"))
				o.rollFailed = true
				break
			}
			o.rollFailed = false
			done = append(done, cur)
			cur, first = &staged{seg: seg, isNew: true, size: seg.size}, i
		}
		cur.pos = append(cur.pos, uint32(cur.size+int64(len(o.buf))))
		o.buf = appendFrame(o.buf, next, r.data)
		r.off = next
		next++
		pending += fl
	}
	// After a break the buffer is empty and this is a no-op.
	if err := o.flush(cur, o.cfg.SyncDelay == 0); err != nil {
		failFrom(batch[first:], err)
	} else if o.cfg.SyncDelay == 0 {
		o.markDurable(next - 1)
	}
	// cur is published even when its write failed: a new segment's file
	// exists, so it must become the active one (it is merely empty).
	o.publish(append(done, cur), batch)
}

// flush writes the buffered frames at the end of cur's segment and, if
// sync, syncs them. On failure it cuts the file back to its committed size, so nothing
// of the failed write is recorded; if even that fails the outbox is broken
// until reopened (Open then cuts whatever is torn).
func (o *Outbox) flush(cur *staged, sync bool) error {
	defer func() { o.buf = o.buf[:0] }()
	if len(o.buf) == 0 {
		return nil
	}
	_, err := rawio.WriteAt(cur.seg.f, o.buf, cur.size)
	if err == nil && sync {
		err = o.sync(cur.seg.f)
	}
	if err == nil {
		cur.size += int64(len(o.buf))
		if sync {
			o.syncs.Add(1)
		}
		return nil
	}
	o.log.Error("outbox: write failed; the records of this commit are refused", "segment", cur.seg.path, "err", err)
	if terr := cur.seg.f.Truncate(cur.size); terr != nil {
		o.broken = terr
	} else if serr := o.sync(cur.seg.f); serr != nil {
		o.broken = serr
	}
	cur.pos = cur.pos[:0]
	return errcode.Wrap(errcode.StoreWriteFailed, err, "the outbox could not write its segment")
}

// publish makes synced frames visible to Read, Ack and Stats and wakes
// waiters.
func (o *Outbox) publish(done []*staged, batch []*appendReq) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range batch {
		if r.err == nil {
			o.remember(r.off, r.data)
		}
	}
	for _, st := range done {
		if st.isNew {
			o.segs = append(o.segs, st.seg)
			o.active = st.seg
		}
		o.pending += st.size - st.seg.size
		o.next += uint64(len(st.pos))
		st.seg.pos = append(st.seg.pos, st.pos...)
		st.seg.size = st.size
	}
	if !o.closed {
		close(o.changed)
		o.changed = make(chan struct{})
	}
}

// tailBytes bounds the copies of recent records the outbox keeps for
// Read (see Outbox.tail).
const tailBytes = 256 << 10

// remember keeps the committed record off in the tail, dropping the
// oldest past tailBytes. Caller holds mu.
func (o *Outbox) remember(off uint64, data []byte) {
	o.tail = append(o.tail, Record{Offset: off, Data: data})
	o.tailSize += len(data)
	drop, size := 0, o.tailSize
	for size > tailBytes && o.tailHead+drop < len(o.tail)-1 {
		size -= len(o.tail[o.tailHead+drop].Data)
		drop++
	}
	o.dropTail(drop)
}

// dropTail forgets the tail's first n records. The slice is compacted
// only once most of it is dropped, so a full tail costs no copy per
// record. Caller holds mu.
func (o *Outbox) dropTail(n int) {
	if n == 0 {
		return
	}
	for i := o.tailHead; i < o.tailHead+n; i++ {
		o.tailSize -= len(o.tail[i].Data)
		o.tail[i] = Record{}
	}
	o.tailHead += n
	if o.tailHead == len(o.tail) {
		o.tail, o.tailHead, o.tailSize = o.tail[:0], 0, 0
	} else if o.tailHead > len(o.tail)/2 {
		rest := copy(o.tail, o.tail[o.tailHead:])
		clear(o.tail[rest:])
		o.tail, o.tailHead = o.tail[:rest], 0
	}
}

// live is the tail's records still held. Caller holds mu.
func (o *Outbox) live() []Record { return o.tail[o.tailHead:] }

// failFrom sets err on every request that has no outcome yet.
func failFrom(reqs []*appendReq, err error) {
	for _, r := range reqs {
		if r.err == nil {
			r.off, r.err = 0, err
		}
	}
}
