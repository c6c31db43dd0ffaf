package host

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/outbox"
)

// readBatch bounds the records one session sends per writer round, so
// that a streaming session does not starve the others.
const readBatch = 64

// link is one daemon connection after its handshake. Its writer goroutine
// sends every frame: control messages, command results once their session
// caught up, and the records of the sessions routed to it (route.go).
type link struct {
	h      *Host
	conn   *hostproto.Conn
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // cap 1

	mu      sync.Mutex
	streams map[string]*stream
	results []heldResult
	ctrl    []hostproto.Message
	// released: the link ended and gave its sessions up; it takes no more.
	released bool

	// The writer's own, reused by each flush.
	sendBuf   []byte
	streamBuf []*stream
}

// stream is a session's record stream on a link: sent is the last offset
// written to the daemon, acked the last it acknowledged on this link.
type stream struct {
	s           *session
	sent, acked uint64
	// dec decodes agents' lines for a version 1 daemon (v1Record).
	dec acp.UpdateDecoder
}

// heldResult waits until s's stream on the link has sent need.
type heldResult struct {
	res  hostproto.CommandResult
	s    *session
	need uint64
}

func newLink(h *Host, conn *hostproto.Conn, hello hostproto.Hello) *link {
	ctx, cancel := context.WithCancel(h.life)
	return &link{h: h, conn: conn, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1),
		log: h.log.With("daemon", hello.DaemonID, "daemonVersion", hello.DaemonVersion), streams: map[string]*stream{}}
}

// run serves the link until the daemon goes or the host stops, then
// gives up the sessions routed to it.
func (l *link) run() {
	var wg sync.WaitGroup
	wg.Go(l.writeLoop)
	stop := context.AfterFunc(l.ctx, func() { _ = l.conn.Close() })
	l.readLoop()
	l.cancel()
	stop()
	_ = l.conn.Close()
	wg.Wait()
	l.release()
}

// close ends the link (the host stops).
func (l *link) close() { l.cancel() }

// release gives up the link's sessions once it has ended: none is routed
// to it any more, and none can be (take refuses).
func (l *link) release() {
	l.mu.Lock()
	l.released = true
	streams := l.streams
	l.streams = map[string]*stream{}
	l.mu.Unlock()
	for _, st := range streams {
		st.s.unroute(l)
	}
}

func (l *link) wakeUp() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *link) readLoop() {
	for {
		m, err := l.conn.RecvBefore(time.Now().Add(l.h.cfg.PingTimeout))
		if err != nil {
			switch {
			case l.ctx.Err() != nil:
			case errcode.Is(err, errcode.HostProtocolError) && !errors.Is(err, io.ErrUnexpectedEOF):
				l.log.Warn("host: ignored a frame the protocol does not allow", "err", err)
				continue
			case errors.Is(err, io.EOF):
				l.log.Info("host: daemon disconnected")
			case os.IsTimeout(err):
				l.log.Warn("host: daemon silent past the ping timeout; closing its connection", "timeout", l.h.cfg.PingTimeout)
			default:
				l.log.Warn("host: daemon connection failed", "err", err)
			}
			return
		}
		switch m := m.(type) {
		case *hostproto.Command:
			if !l.h.spawn(func() { l.h.runCommand(l, m) }) {
				return
			}
		case *hostproto.Ack:
			l.ack(m)
		case *hostproto.Ping:
			l.control(&hostproto.Pong{Nonce: m.Nonce})
		case *hostproto.Pong:
		default:
			l.log.Warn("host: ignored an unexpected message", "type", m.Type())
		}
	}
}

// ack takes the daemon's acknowledgement: it frees the stream's window at
// once (waking the writer if the window held it back) and reaches the
// session's outbox through its acker. The session is looked up now, so
// an ack meant for an incarnation a later start replaced never touches
// the new one; and only the link the session's records flow on
// acknowledges them: one whose records moved to another daemon (or were
// never here) speaks for a node that no longer owns the session.
func (l *link) ack(a *hostproto.Ack) {
	s := l.h.lookup(a.SessionID)
	if s == nil {
		return
	}
	window := uint64(l.h.cfg.SendWindow)
	wake, ours := false, false
	l.mu.Lock()
	if st := l.streams[a.SessionID]; st != nil && st.s == s {
		ours = true
		if a.Offset > st.acked {
			// Only a stream the window held back has more to send now.
			wake = st.sent-min(st.acked, st.sent) >= window
			st.acked = a.Offset
		}
	}
	l.mu.Unlock()
	if !ours {
		return
	}
	s.noteAck(a.Offset)
	if wake {
		l.wakeUp()
	}
}

func (l *link) control(m hostproto.Message) {
	l.mu.Lock()
	l.ctrl = append(l.ctrl, m)
	l.mu.Unlock()
	l.wakeUp()
}

// result queues a command's result, held until s's stream on this link
// has sent need (at once if s is nil or not attached here).
func (l *link) result(res hostproto.CommandResult, s *session, need uint64) {
	l.mu.Lock()
	l.results = append(l.results, heldResult{res: res, s: s, need: need})
	l.mu.Unlock()
	l.wakeUp()
}

// take makes the session's records after from flow on this link, with
// res sent before any of them; false once the link has been released.
// The caller holds s.mu (session.routeTo).
func (l *link) take(s *session, from uint64, res hostproto.CommandResult) bool {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return false
	}
	l.streams[s.id] = &stream{s: s, sent: from, acked: from}
	l.results = append(l.results, heldResult{res: res})
	l.mu.Unlock()
	l.wakeUp()
	return true
}

// detach stops the session's records on this link: they flow on another
// now, or on none until the session's new owner attaches. A record
// appended before may still go, none appended after (appendRecords). The
// caller holds s.mu.
func (l *link) detach(s *session) {
	l.mu.Lock()
	if st := l.streams[s.id]; st != nil && st.s == s {
		delete(l.streams, s.id)
	}
	l.mu.Unlock()
	l.wakeUp() // results held for the stream can go now
}

// ready reports whether a held result may go; caller holds mu.
func (l *link) ready(r heldResult) bool {
	if r.s == nil {
		return true
	}
	st := l.streams[r.s.id]
	return st == nil || st.s != r.s || st.sent >= r.need
}

func (l *link) writeLoop() {
	ping := time.NewTicker(l.h.cfg.PingInterval)
	defer ping.Stop()
	var nonce uint64
	for {
		sent, err := l.flush()
		if err != nil {
			if l.ctx.Err() == nil {
				l.log.Warn("host: send to daemon failed", "err", err)
			}
			l.cancel()
			return
		}
		if sent {
			continue
		}
		select {
		case <-l.wake:
		case <-ping.C:
			nonce++
			l.control(&hostproto.Ping{Nonce: nonce})
		case <-l.ctx.Done():
			return
		}
	}
}

// flush sends what is ready: control messages, results whose session
// caught up, then a batch of each attached session's records within its
// window, framed into one buffer and written at once (in pieces of
// sendChunk). It reports whether it sent anything.
func (l *link) flush() (bool, error) {
	l.mu.Lock()
	msgs := l.ctrl
	l.ctrl = nil
	var keep []heldResult
	for _, r := range l.results {
		if l.ready(r) {
			if r.s != nil && r.res.Error == nil {
				if err := r.s.lostBefore(r.need); err != nil {
					r.res = fail(r.res.ID, err)
				}
			}
			msgs = append(msgs, &r.res)
		} else {
			keep = append(keep, r)
		}
	}
	l.results = keep
	l.streamBuf = l.streamBuf[:0]
	for _, st := range l.streams {
		l.streamBuf = append(l.streamBuf, st)
	}
	streams := l.streamBuf
	l.mu.Unlock()
	buf := l.sendBuf[:0]
	var err error
	for _, m := range msgs {
		if buf, err = l.conn.AppendFrame(buf, m); err != nil {
			return false, err
		}
	}
	sent := len(msgs) > 0
	var done []streamSent
	write := func() error {
		if err := l.conn.WriteFrames(buf); err != nil {
			return err
		}
		buf = buf[:0]
		l.mu.Lock()
		for _, d := range done {
			d.st.sent = max(d.st.sent, d.last)
		}
		l.mu.Unlock()
		done = done[:0]
		return nil
	}
	for _, st := range streams {
		var last uint64
		var n int
		if buf, last, n, err = l.appendRecords(buf, st); err != nil {
			return false, err
		}
		if n > 0 {
			sent = true
			done = append(done, streamSent{st, last})
		}
		if len(buf) >= sendChunk {
			if err := write(); err != nil {
				return false, err
			}
		}
	}
	if err := write(); err != nil {
		return false, err
	}
	clear(streams)
	if cap(buf) <= 4*sendChunk {
		l.sendBuf = buf // reused; a rare huge one is let go
	}
	return sent, nil
}

// sendChunk is how many bytes of frames flush gathers before it writes.
const sendChunk = 256 << 10

// streamSent is how far a flush's write takes a stream.
type streamSent struct {
	st   *stream
	last uint64
}

// appendRecords frames st's next records within its window into buf,
// returning the last offset framed and how many.
func (l *link) appendRecords(buf []byte, st *stream) ([]byte, uint64, int, error) {
	window := uint64(l.h.cfg.SendWindow)
	l.mu.Lock()
	if l.streams[st.s.id] != st {
		l.mu.Unlock()
		return buf, 0, 0, nil
	}
	from, inflight := st.sent+1, st.sent-min(st.acked, st.sent)
	// Read no further than the records appended while the stream was
	// still here: one appended after a detach (the session moved to
	// another daemon) must not go out on this link.
	upTo := st.s.q.last.Load()
	l.mu.Unlock()
	if inflight >= window || upTo < from {
		return buf, 0, 0, nil
	}
	recs, err := st.s.ob.Read(from, int(min(window-inflight, readBatch, upTo-from+1)))
	var ce *outbox.CorruptError
	if errors.As(err, &ce) {
		// Damaged on disk: the session's records resume once the damage
		// is set aside, with its exit record (damage.go).
		st.s.readFailed(ce)
		return buf, 0, 0, nil
	}
	if err != nil {
		l.drop(st, err)
		return buf, 0, 0, nil
	}
	var last uint64
	n := 0
	for _, r := range recs {
		kind, payload, err := decodeRecord(r.Data)
		if err != nil {
			l.drop(st, err)
			break
		}
		last, n = r.Offset, n+1
		if kind.Since() > l.conn.Version() {
			rec := l.v1Record(st, &hostproto.Record{Offset: r.Offset, SessionID: st.s.id, Kind: kind, Payload: payload})
			if rec == nil {
				continue // sent is past it all the same
			}
			kind, payload = rec.Kind, rec.Payload
		}
		if buf, err = hostproto.AppendRecordFrame(buf, r.Offset, st.s.id, kind, payload, l.conn.MaxFrame()); err != nil {
			return buf, 0, 0, err
		}
	}
	return buf, last, n, nil
}

// v1Record converts an agent's line (RecordACPUpdate) into the update
// record a version 1 daemon reads, decoding it as the daemon of this
// version would. A line that daemon would drop is not sent (nil): the
// daemon's acknowledgement of a later offset covers it.
func (l *link) v1Record(st *stream, r *hostproto.Record) *hostproto.Record {
	st.dec.Logger = st.s.log
	u, ok := st.dec.Decode(r.Payload)
	if !ok {
		return nil
	}
	payload, err := json.Marshal(hostproto.FromUpdate(u))
	if err != nil {
		st.s.log.Error("host: update not sent to a version 1 daemon", "offset", r.Offset, "err", err)
		return nil
	}
	return &hostproto.Record{Offset: r.Offset, SessionID: r.SessionID, Kind: hostproto.RecordUpdate, Payload: payload}
}

// drop ends st's stream on the link: its session closed (err is then
// outbox.ErrClosed) or its outbox cannot be read.
func (l *link) drop(st *stream, err error) {
	if !errors.Is(err, outbox.ErrClosed) {
		st.s.log.Error("host: outbox unreadable; the session's records stop here", "err", err)
	}
	l.mu.Lock()
	if l.streams[st.s.id] == st {
		delete(l.streams, st.s.id)
	}
	l.mu.Unlock()
	l.wakeUp() // results held for the stream can go now
}
