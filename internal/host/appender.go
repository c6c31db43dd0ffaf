package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/outbox"
)

// An outbox record is the record's kind, a newline and its payload's JSON:
// the writer turns it into a hostproto.Record without decoding the payload.

// encodeRecord encodes it's record: raw as it is when set (an agent's
// line), else payload as JSON.
func encodeRecord(it item) ([]byte, error) {
	kind, body := it.kind, it.raw
	if body == nil {
		var err error
		if body, err = json.Marshal(it.payload); err != nil {
			return nil, fmt.Errorf("host: encode %s record: %w", kind, err)
		}
	}
	out := make([]byte, 0, len(kind)+1+len(body))
	out = append(out, kind...)
	out = append(out, '\n')
	return append(out, body...), nil
}

func decodeRecord(data []byte) (hostproto.RecordKind, json.RawMessage, error) {
	kind, payload, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || !hostproto.RecordKind(kind).Known() {
		return "", nil, fmt.Errorf("host: outbox record is not a kind and a payload: %.40q", data)
	}
	return hostproto.RecordKind(kind), payload, nil
}

// Backoff of an append the outbox refused: an acknowledgement wakes it at
// once; without one it retries at these intervals, doubling.
const (
	appendRetryMin = 10 * time.Millisecond
	appendRetryMax = time.Second
)

// item is one entry of a session's appender queue: a record to append, or
// a marker (marker set) that reports the offset of the last record
// appended before it.
type item struct {
	kind    hostproto.RecordKind
	payload any
	// raw, when set, is the payload's JSON already (an agent's line).
	raw []byte
	// done releases the update's credit of the ACP window, once the record
	// is durable (or given up on).
	done func()
	// appended learns the record's offset.
	appended func(off uint64)
	marker   chan uint64
}

// queue is a session's appender FIFO. push never blocks: the ACP update
// window bounds the updates in it, and the rest (requests, exits, markers)
// are few.
type queue struct {
	mu    sync.Mutex
	items []item
	// sealed: the exit record is queued; later records are dropped, so the
	// exit stays the session's last.
	sealed bool
	// closed: the appender is gone; markers are answered at once and
	// records dropped.
	closed bool
	sig    chan struct{}
	// last is the offset of the last record appended.
	last atomic.Uint64
}

// push queues it; a record arriving after the exit or after the appender
// ended is dropped (its credit released), and such a marker answered.
func (q *queue) push(it item) {
	q.mu.Lock()
	if q.closed || (q.sealed && it.marker == nil) {
		q.mu.Unlock()
		if it.marker != nil {
			it.marker <- q.last.Load()
		}
		if it.done != nil {
			it.done()
		}
		return
	}
	if it.kind == hostproto.RecordExit {
		q.sealed = true
	}
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.sig <- struct{}{}:
	default:
	}
}

// maxAppendBatch bounds the records one outbox commit takes from a
// session's queue (the ACP update window bounds them already).
const maxAppendBatch = 1024

// nextBatch moves the oldest items, at most maxAppendBatch, into buf and
// returns it; once quit is closed and the queue is empty it marks the
// queue closed and returns false.
func (q *queue) nextBatch(quit <-chan struct{}, buf []item) ([]item, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			n := min(len(q.items), maxAppendBatch)
			buf = append(buf[:0], q.items[:n]...)
			clear(q.items[:n])
			q.items = q.items[n:]
			q.mu.Unlock()
			return buf, true
		}
		select {
		case <-quit:
			q.closed = true
			q.mu.Unlock()
			return buf[:0], false
		default:
		}
		q.mu.Unlock()
		select {
		case <-q.sig:
		case <-quit:
		}
	}
}

func (q *queue) isSealed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.sealed
}

// isExit reports whether the record at off is the exit record.
func (s *session) isExit(off uint64) bool {
	recs, err := s.ob.Read(off, 1)
	if err != nil || len(recs) == 0 || recs[0].Offset != off {
		return false
	}
	kind, _, err := decodeRecord(recs[0].Data)
	return err == nil && kind == hostproto.RecordExit
}

// mark returns the offset of the last record queued before the call once
// it is durable (or given up on).
func (s *session) mark() uint64 {
	ch := make(chan uint64, 1)
	s.q.push(item{marker: ch})
	return <-ch
}

// runAppender appends the queue's records in order until the session
// closes; then it drains what is left, one attempt each. The records
// queued together up to a marker go into the outbox as one batch: one
// write and one fsync for a burst of updates instead of one per update.
func (s *session) runAppender() {
	var items, run []item
	var data [][]byte
	for {
		var ok bool
		if items, ok = s.q.nextBatch(s.quit, items); !ok {
			return
		}
		run, data = run[:0], data[:0]
		for _, it := range items {
			if it.marker != nil {
				s.appendRun(run, data)
				run, data = run[:0], data[:0]
				it.marker <- s.q.last.Load()
				continue
			}
			b, err := encodeRecord(it)
			if err != nil {
				s.log.Error("host: record dropped", "kind", it.kind, "err", err)
				if it.done != nil {
					it.done()
				}
				continue
			}
			run, data = append(run, it), append(data, b)
		}
		s.appendRun(run, data)
		clear(items)
	}
}

// appendRun appends run's records (data, encoded) in order. Each
// appended record learns its offset and then releases its credit; a
// record the outbox can never take is dropped (logged), and the rest
// follow it.
func (s *session) appendRun(run []item, data [][]byte) {
	for len(run) > 0 {
		n, first, err := s.appendDurable(data)
		for i := range n {
			s.q.last.Store(first + uint64(i))
			if run[i].appended != nil {
				run[i].appended(first + uint64(i))
			}
		}
		if n > 0 {
			s.h.wakeLink()
		}
		if err != nil {
			s.log.Error("host: record dropped", "kind", run[n].kind, "err", err)
			n++
		}
		for _, it := range run[:n] {
			if it.done != nil {
				it.done()
			}
		}
		run, data = run[n:], data[n:]
	}
}

// appendDurable appends a prefix of data, retrying while the outbox
// refuses its first record (full, or a failed write it undid) until an
// acknowledgement makes room. It returns the records appended and the
// first one's offset; err says why data[n] cannot be appended: the
// session closed, or a record larger than an outbox segment holds (an
// agent's line is bounded well below that).
func (s *session) appendDurable(data [][]byte) (n int, first uint64, err error) {
	wait := appendRetryMin
	for logged := false; ; {
		n, first, err := s.ob.AppendBatch(context.Background(), data)
		if n > 0 || err == nil {
			return n, first, nil // the rest, if any, is the caller's next call
		}
		if errors.Is(err, outbox.ErrClosed) || errcode.Is(err, errcode.PayloadTooLarge) {
			return 0, 0, err // never appendable
		}
		select {
		case <-s.quit:
			return 0, 0, err
		default:
		}
		if errcode.Is(err, errcode.OutboxFull) {
			s.blocked.Add(1)
			select { // the acker's next ack makes room: no pacing
			case s.starved <- struct{}{}:
			default:
			}
		}
		if !logged {
			s.log.Warn("host: outbox refused a record; holding the agent back until it takes it", "err", err)
			logged = true
		}
		t := time.NewTimer(wait)
		select {
		case <-s.room:
		case <-t.C:
		case <-s.quit:
		}
		t.Stop()
		wait = min(2*wait, appendRetryMax)
	}
}

// noteAck records that the daemon committed the session up to off; the
// acker makes it durable in the outbox, coalescing acks that come fast.
func (s *session) noteAck(off uint64) {
	s.mu.Lock()
	if off > s.ackWant {
		s.ackWant = off
	}
	s.mu.Unlock()
	select {
	case s.ackSig <- struct{}{}:
	default:
	}
}

// ackInterval paces a session's durable acks. An ack lets the outbox drop
// records and nothing more: every attach says where the daemon stands, so
// a record acknowledged late is never sent again. Yet each costs a file
// replacement with two fsyncs, and the daemon acknowledges every few
// milliseconds while a turn streams: unpaced, the acks cost the host more
// than the records' own fsyncs, and delay them on the same disk.
const ackInterval = 50 * time.Millisecond

// runAcker acknowledges in the outbox what the daemon committed, at most
// once per ackInterval while the agent runs (at once for an appender held
// back by a full outbox). An ack that reaches the exit record ends the
// session: it is retired (its directory removed) instead, so an exit
// record is never acknowledged in an outbox and a host restart can tell a
// session that ended from one whose agent it lost.
func (s *session) runAcker() {
	for {
		select {
		case <-s.ackSig:
		case <-s.quit:
			return
		}
		s.mu.Lock()
		want, exitOff := s.ackWant, s.exitOff
		s.mu.Unlock()
		if exitOff == 0 && s.q.isSealed() && s.isExit(want) {
			// The exit is durable, and sent, before the appender learns
			// its offset: the record itself tells.
			exitOff = want
		}
		if exitOff > 0 && want >= exitOff {
			s.h.retire(s)
			return
		}
		if err := s.ob.Ack(want); err != nil {
			if errors.Is(err, outbox.ErrClosed) {
				return
			}
			s.log.Warn("host: ack", "offset", want, "err", err)
			continue
		}
		select {
		case s.room <- struct{}{}:
		default:
		}
		s.h.wakeLink()
		if !s.q.isSealed() && !s.paceAcks() {
			return
		}
	}
}

// paceAcks waits ackInterval, or until the appender finds the outbox
// full; false if the session closes meanwhile.
func (s *session) paceAcks() bool {
	t := time.NewTimer(ackInterval)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.starved:
	case <-s.quit:
		return false
	}
	return true
}
