package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/outbox"
)

// An outbox record is the record's kind, a newline and its payload's JSON:
// the writer turns it into a hostproto.Record without decoding the payload.

// encodeRecord encodes it's record, unless it comes encoded.
func encodeRecord(it item) ([]byte, error) {
	if it.encoded != nil {
		return it.encoded, nil
	}
	body, err := json.Marshal(it.payload)
	if err != nil {
		return nil, fmt.Errorf("host: encode %s record: %w", it.kind, err)
	}
	return appendRecord(nil, it.kind, body), nil
}

// appendRecord appends the outbox record of kind and its payload's JSON.
func appendRecord(buf []byte, kind hostproto.RecordKind, body []byte) []byte {
	buf = slices.Grow(buf, len(kind)+1+len(body))
	buf = append(buf, kind...)
	buf = append(buf, '\n')
	return append(buf, body...)
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

// item is one entry of a session's append queue: a record to append.
type item struct {
	kind    hostproto.RecordKind
	payload any
	// encoded, when set, is the record as the outbox keeps it already
	// (an agent's line behind its kind).
	encoded []byte
	// done releases the update's credit of the ACP window, once the record
	// is in the outbox (or given up on).
	done func()
	// appended learns the record's offset.
	appended func(off uint64)
}

// queue is a session's append FIFO. Whoever queues a record appends the
// queue (session.flush) on its own goroutine, except the agent's reader,
// which queues a burst of updates and flushes once it has read all the
// agent wrote (acp.LineHandler.Flush): a record goes from the agent's
// pipe into the outbox without a hand-off to another goroutine, and a
// burst still takes one write.
type queue struct {
	mu    sync.Mutex
	items []item
	// arena is the chunk pushLine copies lines into.
	arena []byte
	// sealed: the exit record is queued; later records are dropped, so the
	// exit stays the session's last.
	sealed bool
	// closed: the session closed; records are dropped.
	closed bool
	// last is the offset of the last record appended.
	last atomic.Uint64
}

// push queues it; a record arriving after the exit or after the session
// closed is dropped (its credit released).
func (q *queue) push(it item) {
	q.mu.Lock()
	if q.closed || q.sealed {
		q.mu.Unlock()
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
}

// arenaChunk is the size of the chunks pushLine copies lines into: one
// allocation for a few dozen lines instead of one a line.
const arenaChunk = 16 << 10

// pushLine queues an agent's line as a record of kind, copied into the
// queue's arena. The arena's memory is never reused: the outbox keeps the
// records it is given, and the link reads them from there; a chunk is
// collected once no record in it is referred to.
func (q *queue) pushLine(kind hostproto.RecordKind, line []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.sealed {
		return
	}
	n := len(kind) + 1 + len(line)
	if cap(q.arena)-len(q.arena) < n {
		q.arena = make([]byte, 0, max(arenaChunk, n))
	}
	start := len(q.arena)
	q.arena = appendRecord(q.arena, kind, line)
	q.items = append(q.items, item{kind: kind, encoded: q.arena[start:len(q.arena):len(q.arena)]})
}

// maxAppendBatch bounds the records one outbox commit takes from a
// session's queue (the ACP update window bounds them already).
const maxAppendBatch = 1024

// take moves the oldest items, at most maxAppendBatch, into buf.
func (q *queue) take(buf []item) []item {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.items), maxAppendBatch)
	buf = append(buf[:0], q.items[:n]...)
	clear(q.items[:n])
	if n == len(q.items) {
		q.items = q.items[:0] // the next burst reuses the array from its start
	} else {
		q.items = q.items[n:]
	}
	return buf
}

// pushExit queues an exit record even after an exit (but not once the
// session closed): the first is among records a damaged outbox lost.
func (q *queue) pushExit(it item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.sealed = true
		q.items = append(q.items, it)
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

// record queues it and appends the queue.
func (s *session) record(it item) {
	s.q.push(it)
	s.flush()
}

// mark returns the offset of the last record queued before the call once
// it is in the outbox (or given up on).
func (s *session) mark() uint64 {
	s.flush()
	return s.q.last.Load()
}

// flush appends what is queued, in order: one outbox commit per batch.
// Callers take turns (appendMu), so the queue's order is the outbox's.
// It waits while the outbox is full, which holds back whoever queued:
// the agent's reader (so the agent), a permission request, a command's
// result. Once the session closes it makes one attempt per record.
func (s *session) flush() {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	for {
		s.appendBuf = s.q.take(s.appendBuf)
		if len(s.appendBuf) == 0 {
			return
		}
		run, data := s.runBuf[:0], s.dataBuf[:0]
		for _, it := range s.appendBuf {
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
		clear(s.appendBuf)
		s.appendRun(run, data)
		clear(run) // kept for the next flush, without what they refer to
		clear(data)
		s.runBuf, s.dataBuf = run[:0], data[:0]
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
			s.wakeLink()
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
		case <-s.closingCh:
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
		case <-s.closingCh:
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
// replacement with two fsyncs (and an fsync of the records it covers),
// and the daemon acknowledges many times a second while a turn streams:
// paced at 50 ms the acks were still 8 % of the host's CPU on a streaming
// session. A full outbox is acknowledged at once.
const ackInterval = time.Second

// runAcker acknowledges in the outbox what the daemon committed, at most
// once per ackInterval while the agent runs (at once for an append held
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
			// The exit is appended, and sent, before its appended callback
			// runs: the record itself tells.
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
		s.wakeLink()
		if !s.q.isSealed() && !s.paceAcks() {
			return
		}
	}
}

// paceAcks waits ackInterval, or until an append finds the outbox
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
