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

func encodeRecord(kind hostproto.RecordKind, payload any) ([]byte, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("host: encode %s record: %w", kind, err)
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

// next returns the oldest item; once quit is closed and the queue is
// empty it marks the queue closed and returns false.
func (q *queue) next(quit <-chan struct{}) (item, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			it := q.items[0]
			q.items[0] = item{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return it, true
		}
		select {
		case <-quit:
			q.closed = true
			q.mu.Unlock()
			return item{}, false
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
// closes; then it drains what is left, one attempt each.
func (s *session) runAppender() {
	for {
		it, ok := s.q.next(s.quit)
		if !ok {
			return
		}
		if it.marker != nil {
			it.marker <- s.q.last.Load()
			continue
		}
		data, err := encodeRecord(it.kind, it.payload)
		if err == nil {
			var off uint64
			if off, err = s.appendDurable(data); err == nil {
				s.q.last.Store(off)
				if it.appended != nil {
					it.appended(off)
				}
				s.h.wakeLink()
			}
		}
		if err != nil {
			s.log.Error("host: record dropped", "kind", it.kind, "err", err)
		}
		if it.done != nil {
			it.done()
		}
	}
}

// appendDurable appends data, retrying while the outbox refuses it (full,
// or a failed write it undid) until an acknowledgement makes room; it
// gives up only once the session closes, or on a record larger than an
// outbox segment holds (an agent's line is bounded well below that).
func (s *session) appendDurable(data []byte) (uint64, error) {
	wait := appendRetryMin
	for logged := false; ; {
		off, err := s.ob.Append(context.Background(), data)
		if err == nil {
			return off, nil
		}
		if errors.Is(err, outbox.ErrClosed) || errcode.Is(err, errcode.PayloadTooLarge) {
			return 0, err // never appendable
		}
		select {
		case <-s.quit:
			return 0, err
		default:
		}
		if errcode.Is(err, errcode.OutboxFull) {
			s.blocked.Add(1)
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

// runAcker acknowledges in the outbox what the daemon committed. An ack
// that reaches the exit record ends the session: it is retired (its
// directory removed) instead, so an exit record is never acknowledged in
// an outbox and a host restart can tell a session that ended from one
// whose agent it lost.
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
	}
}
