package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/events"
)

// A live stream waits far more than it writes: an idle client's stream
// used to hold net/http's connection goroutine (its stack grown by the
// request's path through the middlewares), the connection's background
// reader, and net/http's read and write buffers, for as long as it stayed
// connected: about 46 KiB a subscriber, more than r3labs/sse's 26.
//
// So once its catch-up is written, a stream over HTTP/1.1 is parked: it
// takes the connection from net/http (Hijack) and lets the handler
// return, which frees the connection goroutine and both buffers. What is
// left is the connection, the subscription and one goroutine blocked in a
// one-byte read, which learns at once when the client leaves. A write
// happens on a goroutine started when there is something to write (the
// hub queues a batch, the hub cuts the subscriber off, a heartbeat is due)
// and ends when the queue is empty. The frames go out in HTTP/1.1's
// chunked encoding, as net/http had begun the body. HTTP/2 streams, and
// HTTP/1.0 ones (close-delimited), stay with net/http (live).

// sink is where a stream's frames go: net/http's response, or a parked
// stream's connection.
type sink interface {
	Write(p []byte) (int, error)
	Flush() error
	SetWriteDeadline(t time.Time) error
}

// responseSink is net/http's response as a sink.
type responseSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (r responseSink) Write(p []byte) (int, error)        { return r.w.Write(p) }
func (r responseSink) Flush() error                       { return r.rc.Flush() }
func (r responseSink) SetWriteDeadline(t time.Time) error { return r.rc.SetWriteDeadline(t) }

// chunkSink writes each Write as one HTTP/1.1 chunk: in one writev on a
// TCP connection, else (TLS, whose every Write is a record) copied into
// one buffer first.
type chunkSink struct {
	conn    net.Conn
	vector  bool   // conn is a *net.TCPConn: writev
	scratch []byte // the one buffer otherwise, kept while the writer is busy
}

func newChunkSink(conn net.Conn) *chunkSink {
	_, tcp := conn.(*net.TCPConn)
	return &chunkSink{conn: conn, vector: tcp}
}

func (c *chunkSink) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var head [18]byte
	h := strconv.AppendInt(head[:0], int64(len(p)), 16)
	h = append(h, '\r', '\n')
	var err error
	if c.vector {
		bufs := net.Buffers{h, p, crlf}
		_, err = bufs.WriteTo(c.conn)
	} else {
		c.scratch = append(append(append(c.scratch[:0], h...), p...), crlf...)
		_, err = c.conn.Write(c.scratch)
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *chunkSink) Flush() error                       { return nil }
func (c *chunkSink) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }

// idle lets the scratch buffer of a burst go.
func (c *chunkSink) idle() {
	if cap(c.scratch) > idleBufferBytes {
		c.scratch = nil
	}
}

var (
	crlf      = []byte("\r\n")
	lastChunk = []byte("0\r\n\r\n")
)

// streamBaseKey carries the context parked streams live in (StreamBase).
type streamBaseKey struct{}

// StreamBase returns ctx carrying itself as the lifetime of parked event
// streams: tetherd serves requests under it (http.Server.BaseContext) and
// cancels it as shutdown begins, which ends every parked stream as it
// ends every other (net/http does not close a connection it gave away).
func StreamBase(ctx context.Context) context.Context {
	return context.WithValue(ctx, streamBaseKey{}, ctx)
}

// parkedStream is a stream whose connection left net/http (park).
type parkedStream struct {
	s    *sseStream
	conn net.Conn
	sink *chunkSink
	// wake bookkeeping: pending says work arrived, running that a writer
	// goroutine is on it; beat that a heartbeat is due; gone that the
	// client left or the daemon stops.
	pending, running, beat, gone atomic.Bool
	heart                        *time.Timer
	kick                         chan struct{} // wakes a lingering writer
	stopBase                     func() bool
	release                      func() // of what the request held (streamHold)
	finish                       sync.Once
}

// park takes the connection from net/http once the stream is live (see
// above) and reports whether it did; a stream it cannot park (HTTP/2,
// HTTP/1.0) goes on in live.
func (s *sseStream) park() bool {
	if s.req == nil || s.req.ProtoMajor != 1 || s.req.ProtoMinor < 1 || s.req.Header.Get("Connection") == "close" {
		return false
	}
	if err := s.flush(); err != nil {
		return false // live ends it on its first write
	}
	conn, brw, err := s.rc.Hijack()
	if err != nil {
		return false
	}
	s.parked = true
	release := func() {}
	if h, ok := s.ctx.Value(streamHoldKey{}).(*streamHold); ok {
		h.kept, release = true, h.release // the ticket stays in use until the end
	}
	base, _ := s.ctx.Value(streamBaseKey{}).(context.Context)
	if base == nil {
		base = context.Background()
	}
	// The request's context ends as the handler returns; the log reads
	// that fill a hole (forward) run under the daemon's.
	s.ctx, s.req, s.rc = base, nil, nil
	s.buf = nil
	p := &parkedStream{s: s, conn: conn, sink: newChunkSink(conn), release: release, kick: make(chan struct{}, 1)}
	s.out = p.sink
	if s.parkedCount != nil {
		s.parkedCount.Add(1)
	}
	p.heart = time.AfterFunc(s.heartbeat, func() { p.beat.Store(true); p.wake() })
	p.stopBase = context.AfterFunc(base, func() { p.gone.Store(true); p.wake() })
	go p.watchClient(brw.Reader)
	s.sub.OnCut(func(evicted bool) {
		s.lagged.Store(true)
		_ = conn.SetWriteDeadline(time.Now().Add(lagGrace))
		p.wake()
	})
	s.sub.OnReady(p.wake)
	return true
}

// watchClient reads the connection until it fails: a client that leaves
// ends the stream at once, not at the next write. An SSE client sends
// nothing after its request; whatever it does send is dropped.
func (p *parkedStream) watchClient(r *bufio.Reader) {
	var b [1]byte
	if n := r.Buffered(); n > 0 {
		_, _ = r.Discard(n)
	}
	for {
		if _, err := p.conn.Read(b[:]); err != nil {
			p.gone.Store(true)
			p.wake()
			return
		}
	}
}

// writerLinger is how long a parked stream's writer waits for more work
// before it ends: a busy stream keeps one writer, as a live one does (a
// goroutine started for each commit grows its stack again each time: at
// full speed that cost a quarter of the stream's throughput), and an idle
// one holds none.
const writerLinger = time.Second

// wake makes sure a writer goroutine runs after this call: it starts one,
// or tells the running one to look again. Called under the hub's lock
// (OnReady, OnCut), from timers and from watchClient: it never blocks.
func (p *parkedStream) wake() {
	p.pending.Store(true)
	select {
	case p.kick <- struct{}{}:
	default: // a kick already waits
	}
	if p.running.CompareAndSwap(false, true) {
		go p.drain()
	}
}

// drain writes while there is work and for writerLinger after; the
// stream's one writer at a time.
func (p *parkedStream) drain() {
	idle := time.NewTimer(writerLinger)
	defer idle.Stop()
	for {
		p.pending.Store(false)
		if !p.write() {
			p.end()
			return
		}
		if p.pending.Load() {
			continue
		}
		idle.Reset(writerLinger)
		select {
		case <-p.kick:
			continue
		case <-idle.C:
		}
		if cap(p.s.buf) > idleBufferBytes {
			p.s.buf = nil // idle streams can be many; let a burst's buffer go
		}
		p.sink.idle()
		p.running.Store(false)
		// Work that arrived after the last look, and no writer took it.
		if !p.pending.Load() || !p.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// write sends what waits (queued batches, the frames of a cut, a due
// heartbeat) and reports whether the stream goes on.
func (p *parkedStream) write() bool {
	s := p.s
	if p.gone.Load() {
		return false
	}
	if err := s.forwardTaken(); err != nil {
		return false
	}
	select {
	case <-s.sub.Done():
		// Cut off (lagged or evicted): what was queued before the cut
		// went above; now where to resume. Any other end is the stream's
		// own (end).
		if !s.end && s.sub.Lagged() {
			s.control(events.StreamLagged, events.StreamLaggedData{Cursor: s.cursor(s.done)})
		}
		s.end = true
	default:
	}
	if p.beat.Swap(false) && len(s.buf) == 0 {
		s.buf = append(s.buf, ": ping\n\n"...)
	}
	wrote := len(s.buf) > 0
	if err := s.flush(); err != nil {
		return false
	}
	if s.end {
		_ = p.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, _ = p.conn.Write(lastChunk) // the body's clean end
		return false
	}
	if wrote {
		p.heart.Reset(s.heartbeat)
	}
	return true
}

// end releases the stream once: the subscription, its timers and the
// connection (which ends watchClient).
func (p *parkedStream) end() {
	p.finish.Do(func() {
		p.s.sub.OnReady(nil)
		p.s.sub.OnCut(nil)
		p.s.sub.Close()
		p.heart.Stop()
		p.stopBase()
		_ = p.conn.Close()
		p.release()
		if p.s.parkedCount != nil {
			p.s.parkedCount.Add(-1)
		}
	})
}
