package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// sseStream is one client's stream: opened (subscribed, positioned) by the
// handler, then written by the generated code's Visit call.
type sseStream struct {
	ctx       context.Context // the request's: done when the client leaves
	src       source
	sub       *events.Subscription
	logger    *slog.Logger
	heartbeat time.Duration
	follow    bool
	types     map[string]bool // nil: every type

	at        events.Cursor // where the client is (its cursor, or epoch:0)
	hasCursor bool
	pos       position

	// out is where frames go: net/http's response, or the connection
	// once the stream is parked (parkedStream); rc is the response's
	// controller, and req the request (set for the streams that may park).
	out sink
	rc  *http.ResponseController
	req *http.Request
	buf []byte
	// taken is the array of the batches last taken from the hub, handed
	// back at the next take.
	taken [][]*store.Event
	done  int64 // number of the last event delivered or filtered out
	end   bool  // the stream's final frame is written: nothing may follow

	// lagged is set (before it shortens the write deadline) by the watcher
	// that notices the hub cutting this subscriber off.
	lagged atomic.Bool
	// failed: a write failed, so net/http will not reuse the connection.
	failed bool
	// parked: the connection was taken from net/http (park), counted in
	// parkedCount until the stream ends.
	parked      bool
	parkedCount *atomic.Int64
}

// VisitStreamSessionEventsResponse writes the session stream.
func (s *sseStream) VisitStreamSessionEventsResponse(w http.ResponseWriter) error { return s.serve(w) }

// VisitStreamGlobalEventsResponse writes the global stream.
func (s *sseStream) VisitStreamGlobalEventsResponse(w http.ResponseWriter) error { return s.serve(w) }

// errClientGone marks write failures: the client left or stalled.
var errClientGone = errors.New("sse client gone")

func (s *sseStream) serve(w http.ResponseWriter) error {
	defer func() {
		if !s.parked {
			s.sub.Close() // s.sub may be replaced on the way
		}
	}()
	// Deadlines and flush errors live on net/http's writer, beneath echo's.
	under := w
	if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
		under = u.Unwrap()
	}
	s.rc = http.NewResponseController(under)
	s.out = responseSink{w: w, rc: s.rc}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx must not buffer the stream
	w.WriteHeader(http.StatusOK)

	err := s.run()
	if s.parked {
		return nil // the connection is the parked stream's now
	}
	if !s.failed {
		// The connection may serve another request: it must not inherit
		// this stream's deadline. (After a failed write it is closed, and
		// the deadline bounds net/http's last attempt to flush it.)
		_ = s.rc.SetWriteDeadline(time.Time{})
	}
	if err != nil && !errors.Is(err, errClientGone) && s.ctx.Err() == nil {
		s.logger.Warn("event stream ended by an error", "err", err)
	}
	return nil // the response is committed; nothing else can be said
}

func (s *sseStream) run() error {
	s.buf = append(s.buf, "retry: "+strconv.Itoa(retryMillis)+"\n\n"...)
	if reason := s.resyncReason(); reason != "" {
		s.resync(reason)
		return s.flush()
	}
	s.done = s.at.N
	if err := s.catchUp(); err != nil {
		return err
	}
	if s.end || !s.follow || s.pos.terminal {
		return s.flush()
	}
	if s.park() {
		return nil
	}
	return s.live()
}

// resyncReason says why the client's cursor cannot be continued, if so.
func (s *sseStream) resyncReason() string {
	if !s.hasCursor {
		return ""
	}
	switch c, p := s.at, s.pos; {
	case c.Epoch != p.epoch:
		return events.ReasonEpochMismatch
	case c.N > p.head:
		return events.ReasonCursorAhead
	case c.N < p.head && (p.first == 0 || p.first > c.N+1):
		// The events right after the cursor were pruned. (On the global
		// stream, whose ids are sparse, this also fires when the cursor's
		// own event is gone: a harmless extra resync.)
		return events.ReasonCursorExpired
	}
	return ""
}

func (s *sseStream) resync(reason string) {
	s.control(events.ResyncRequired, events.ResyncRequiredData{Reason: reason, Epoch: s.pos.epoch,
		Cursor: events.Cursor{Epoch: s.pos.epoch, N: s.pos.head}.String()})
}

// catchUp replays the log from the client's cursor to the head read when
// the stream opened, then sends replay_complete. If the replay took so
// long that the hub cut the subscription off (the log was growing faster
// than the queue could hold), it subscribes again and replays the rest
// from the log rather than sending the client away.
func (s *sseStream) catchUp() error {
	for attempt := 0; ; attempt++ {
		stop := s.watchLag(true)
		err := s.replay()
		stop()
		if err != nil {
			return err
		}
		if s.end || !s.follow || s.pos.terminal || !s.cutOff() {
			break
		}
		s.sub.Close()
		// An evicted subscriber was displaced by another client: going
		// back into the hub would displace someone in turn.
		if attempt == maxResubscribes || s.sub.Evicted() {
			s.control(events.StreamLagged, events.StreamLaggedData{Cursor: s.cursor(s.done)})
			s.end = true
			return s.flush()
		}
		sub, err := s.src.subscribe()
		if err != nil {
			s.control(events.StreamLagged, events.StreamLaggedData{Cursor: s.cursor(s.done)})
			s.end = true
			return s.flush()
		}
		s.sub = sub
		pos, err := s.src.position(s.ctx)
		if err != nil {
			return err
		}
		if pos.epoch != s.pos.epoch {
			s.pos = pos
			s.resync(events.ReasonEpochMismatch)
			s.end = true
			return s.flush()
		}
		s.pos = pos
	}
	s.control(events.ReplayComplete, events.ReplayCompleteData{Cursor: s.cursor(s.done)})
	return s.flush()
}

// cutOff reports whether the hub has dropped the subscription for lag.
func (s *sseStream) cutOff() bool {
	select {
	case <-s.sub.Done():
		return s.sub.Lagged()
	default:
		return false
	}
}

// replay sends the log's events after s.done up to s.pos.head. The log is
// read a page (replayPage events) at a time, ahead of the writing
// (pageReader): the next pages are read while this one is framed and
// written, so the database reads and the client's socket overlap. No read of the database is open while a
// write waits for the client. Frames are written replayBytes at a time;
// the last ones stay buffered and go out with replay_complete in one
// write, as a client that drops the connection as soon as it has the
// events may expect.
func (s *sseStream) replay() error {
	if s.done >= s.pos.head || s.end {
		return nil
	}
	pages := readAhead(s.ctx, s.src, s.done, s.pos.head)
	defer pages.stop()
read:
	for {
		page, err := pages.next()
		if err != nil {
			return err
		}
		for _, e := range page {
			if s.src.num(e) > s.pos.head || s.end {
				break read
			}
			s.emit(e)
			if len(s.buf) >= replayBytes {
				if err := s.flush(); err != nil {
					return err
				}
			}
		}
		// A short page is the end of the log: everything up to head was
		// committed before the stream opened.
		if len(page) < replayPage {
			break
		}
	}
	// Everything up to head has been delivered: on the global stream the
	// ids after the last global event belong to other streams' events.
	if !s.end && s.done < s.pos.head {
		s.done = s.pos.head
	}
	return nil
}

// pageReader reads a stream's log ahead of its reader, in goroutines it
// owns (stop waits for those in flight). Where a page's place follows
// from the one before — a dense stream (a session's: its seqs have no
// holes), page k+1 starting where page k's numbers end — it keeps
// readAheadPages reads in flight, which the store runs on as many
// connections; elsewhere (the global stream) the next read starts once
// a page is in. A dense page that ends elsewhere than foreseen (a hole
// after all) drops the reads started from the foresight and goes on
// from what it read.
type pageReader struct {
	ctx      context.Context
	src      source
	head     int64
	inflight []pendingPage // oldest first
	// from is where the read after the last one in flight starts, or -1
	// when that is not known until it returns.
	from int64
	end  bool // a page ended the log: nothing further to read
}

// readAheadPages is how many pages a dense stream's replay reads at once.
const readAheadPages = 2

type pendingPage struct {
	after int64
	c     chan pageRead
}

type pageRead struct {
	page []store.Event
	err  error
}

// readAhead starts reading the log after after, up to head.
func readAhead(ctx context.Context, src source, after, head int64) *pageReader {
	r := &pageReader{ctx: ctx, src: src, head: head, from: after}
	r.fill()
	return r
}

// fill starts reads until as many are in flight as the stream allows.
func (r *pageReader) fill() {
	most := 1
	if r.src.dense() {
		most = readAheadPages
	}
	for !r.end && r.from >= 0 && r.from < r.head && len(r.inflight) < most && r.ctx.Err() == nil {
		p := pendingPage{after: r.from, c: make(chan pageRead, 1)}
		go func() {
			page, err := r.src.page(r.ctx, p.after, replayPage)
			p.c <- pageRead{page, err}
		}()
		r.inflight = append(r.inflight, p)
		if r.src.dense() {
			r.from += replayPage
		} else {
			r.from = -1
		}
	}
}

// next returns the next page in order (empty after the end) and keeps
// the reads ahead of it going.
func (r *pageReader) next() ([]store.Event, error) {
	if len(r.inflight) == 0 {
		return nil, nil
	}
	p := r.inflight[0]
	r.inflight = r.inflight[1:]
	got := <-p.c
	if got.err != nil {
		return nil, got.err
	}
	if len(got.page) < replayPage {
		r.end = true // the end of the log; reads beyond it find nothing
		return got.page, nil
	}
	last := r.src.num(got.page[len(got.page)-1])
	if r.from < 0 || last != p.after+replayPage {
		r.stop() // foreseen wrongly (or not at all): read on from here
		r.from = last
	}
	r.fill()
	return got.page, nil
}

// stop waits for the reads in flight and drops them, so no read outlives
// the stream.
func (r *pageReader) stop() {
	for _, p := range r.inflight {
		<-p.c
	}
	r.inflight = nil
}

// live forwards the hub's events until the client leaves, the stream ends
// or the hub cuts the subscriber off.
func (s *sseStream) live() error {
	stop := s.watchLag(false)
	defer stop()
	timer := time.NewTimer(s.heartbeat)
	defer timer.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return nil
		case <-s.sub.Ready():
			// Everything queued goes in one write and flush per flushBytes.
			if err := s.forwardTaken(); err != nil {
				return err
			}
			if err := s.flush(); err != nil {
				return err
			}
			if s.end {
				return nil
			}
			timer.Reset(s.heartbeat)
		case <-s.sub.Done():
			lagged := s.sub.Lagged()
			if lagged {
				s.lagged.Store(true) // the writes below get lagGrace, not writeTimeout
			}
			// Events queued before the cut are still valid: send them,
			// then tell the client where to resume.
			if err := s.forwardTaken(); err != nil {
				return err
			}
			if !lagged {
				return s.flush() // closed for another reason: the client reconnects
			}
			if !s.end {
				s.control(events.StreamLagged, events.StreamLaggedData{Cursor: s.cursor(s.done)})
			}
			return s.flush()
		case <-timer.C:
			if cap(s.buf) > idleBufferBytes {
				// Idle streams can be many; let a burst's buffer go.
				s.buf = nil
			}
			s.buf = append(s.buf, ": ping\n\n"...)
			if err := s.flush(); err != nil {
				return err
			}
			timer.Reset(s.heartbeat)
		}
	}
}

// forwardTaken forwards the batches waiting in the subscription, up to the
// stream's final frame, writing out each flushBytes.
func (s *sseStream) forwardTaken() error {
	s.taken = s.sub.Take(s.taken)
	defer func() {
		clear(s.taken) // an idle stream keeps no events
		s.taken = s.taken[:0]
	}()
	for _, b := range s.taken {
		if s.end {
			break
		}
		if err := s.forwardAll(b); err != nil {
			return err
		}
		if len(s.buf) >= flushBytes {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// forward delivers one live event, skipping what the replay already sent
// and filling from the log any hole between them.
// forwardAll forwards a commit's batch, up to the stream's final frame.
func (s *sseStream) forwardAll(b []*store.Event) error {
	for _, e := range b {
		if s.end {
			return nil
		}
		if err := s.forward(*e); err != nil {
			return err
		}
	}
	return nil
}

func (s *sseStream) forward(e store.Event) error {
	n := s.src.num(e)
	if n <= s.done || s.end {
		return nil
	}
	if s.src.dense() && n > s.done+1 {
		// Should not happen (the hub publishes in commit order), but if
		// it does the log has what is missing.
		for s.done < n-1 && !s.end {
			page, err := s.src.list(s.ctx, s.done, min(replayPage, int(n-1-s.done)))
			if err != nil {
				return err
			}
			if len(page) == 0 {
				break
			}
			for _, m := range page {
				s.emit(m)
			}
		}
		if s.end {
			return nil
		}
	}
	s.emit(e)
	return nil
}

// emit appends a durable event's frame (unless filtered out) and records
// it as delivered.
func (s *sseStream) emit(e store.Event) {
	n := s.src.num(e)
	s.done = n
	// A stream ends with session.closed; but a closed session's log read
	// back goes on to its head: renaming and archiving (session.title_changed,
	// session.archived) may follow the close.
	if s.src.last(e) && !(s.pos.terminal && n < s.pos.head) {
		s.end = true
	}
	if (s.types != nil && !s.types[e.Type]) || !s.src.keep(e) {
		return
	}
	b := append(s.buf, "id: "...)
	b = append(b, s.pos.epoch...)
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	b = append(b, "\nevent: "...)
	b = append(b, e.Type...)
	b = append(b, '\n')
	s.buf = appendData(b, e.Payload)
}

// control appends a frame that carries no id: it is not in the log, and an
// id would move the client's cursor.
func (s *sseStream) control(typ string, data any) {
	payload, _ := json.Marshal(data)
	s.buf = append(s.buf, "event: "...)
	s.buf = append(s.buf, typ...)
	s.buf = append(s.buf, '\n')
	s.buf = appendData(s.buf, payload)
}

// appendData writes data as data: lines. Stored payloads are compact JSON
// (one line), but a stray newline must not end the field early.
func appendData(b, data []byte) []byte {
	for {
		i := lineEnd(data)
		if i < 0 {
			break
		}
		b = append(b, "data: "...)
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// lineEnd is the index of data's first '\r' or '\n', or -1. Two
// IndexByte scans (vectorised) beat one IndexAny on the compact JSON a
// replay is made of, where neither byte ever occurs.
func lineEnd(data []byte) int {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return bytes.IndexByte(data, '\r')
	}
	if j := bytes.IndexByte(data[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

func (s *sseStream) cursor(n int64) string { return events.Cursor{Epoch: s.pos.epoch, N: n}.String() }

// flush writes the buffered frames under a deadline, so a client that
// stopped reading cannot hold this goroutine forever.
func (s *sseStream) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	// The hub reads how long this write is in flight to tell a stalled
	// client (socket buffers full) from a quiet one. A replay buffers up
	// to replayBytes; it is written flushBytes at a time, each under its
	// own deadline, so a client is held to the same pace whatever the
	// buffer's size.
	var err error
	for b := s.buf; len(b) > 0 && err == nil; {
		n := min(len(b), flushBytes)
		s.setDeadline()
		s.sub.WriteStarted()
		_, err = s.out.Write(b[:n])
		b = b[n:]
	}
	s.buf = s.buf[:0]
	if err == nil {
		err = s.out.Flush()
	}
	s.sub.WriteDone()
	if err != nil {
		s.failed = true
		return errors.Join(errClientGone, err)
	}
	return nil
}

// setDeadline bounds the next write by writeTimeout, or by lagGrace once
// the hub has cut the subscriber off.
func (s *sseStream) setDeadline() {
	_ = s.out.SetWriteDeadline(time.Now().Add(writeTimeout))
	// The lag watcher may have shortened the deadline just before the
	// line above; keep its shorter one.
	if s.lagged.Load() {
		_ = s.out.SetWriteDeadline(time.Now().Add(lagGrace))
	}
}

// watchLag shortens the write deadline as soon as the hub cuts this
// subscriber off (during catch-up, only when it was evicted: a replay that
// outran the queue goes on from the log), so a write blocked on a stalled
// client fails within lagGrace instead of writeTimeout. The hub calls it
// back as it cuts (Subscription.OnCut), so an idle stream keeps no
// goroutine waiting for that. It returns a stop function after which no
// deadline is set, so none outlives the stream on a kept-alive connection.
func (s *sseStream) watchLag(evictedOnly bool) func() {
	sub := s.sub
	sub.OnCut(func(evicted bool) {
		if !evictedOnly || evicted {
			s.lagged.Store(true)
			_ = s.out.SetWriteDeadline(time.Now().Add(lagGrace))
		}
	})
	return func() { sub.OnCut(nil) }
}
