package hostproto

import (
	"bufio"
	"encoding/binary"
	"github.com/tether/tether/internal/rawio"
	"io"
	"net"
	"sync"
	"time"
)

// Options tune a Conn; the zero value takes the defaults.
type Options struct {
	// MaxFrame bounds the body of a frame sent or received
	// (DefaultMaxFrame). Both sides should agree; a receiver refuses a
	// larger frame and the connection ends.
	MaxFrame int
	// WriteTimeout bounds each Send when positive, so that a writer never
	// hangs on a peer that stopped reading (a cut network link keeps a
	// TCP write blocked for minutes).
	WriteTimeout time.Duration
	// ReuseRecords lets Recv return a *Record that the Conn reuses: it
	// and its Payload (which may point into the read buffer) are valid
	// only until the next Recv. A reader that is done with each record
	// before it reads the next spares two allocations and a copy a
	// record, which on a stream of records is most of the garbage the
	// link makes.
	ReuseRecords bool
}

func (o Options) withDefaults() Options {
	if o.MaxFrame <= 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	return o
}

// Conn exchanges typed messages over a net.Conn whose handshake is done.
// One goroutine may Recv while others Send: sends are serialised, so a
// frame is never interleaved with another. Recv is for one goroutine at a
// time.
type Conn struct {
	nc net.Conn
	// w writes to nc, and r reads it, with raw calls (rawio: they wake no
	// runtime thread).
	w       io.Writer
	r       *bufio.Reader
	opts    Options
	version int

	wmu  sync.Mutex
	werr error // sticky: after a failed write the stream is out of step

	rerr error // sticky; only the reading goroutine touches it
	// rdeadline is the read deadline RecvBefore set (zero: none).
	rdeadline time.Time
	// lastSession is the session id of the last record read.
	lastSession string
	// rec and body are reused for each record when opts.ReuseRecords:
	// body holds a frame too large for the read buffer.
	rec  Record
	body []byte
	// arrived is when RecvWithin last had to wait for the network.
	arrived time.Time
}

// readBuffer is the size of a Conn's read buffer: a stream of records is
// read a few hundred at a time, and with ReuseRecords a frame that fits
// is decoded where it lies.
const readBuffer = 64 << 10

func newConn(nc net.Conn, opts Options) *Conn {
	opts = opts.withDefaults()
	return &Conn{nc: nc, w: rawio.NewWriter(nc), r: bufio.NewReaderSize(rawio.NewReader(nc), readBuffer), opts: opts}
}

// Version is the protocol version the handshake chose.
func (c *Conn) Version() int { return c.version }

// Send writes m as one frame. After a failed Send (the peer went away, the
// write timed out part way) every later Send fails with the same error:
// the peer may have received part of a frame, so the stream cannot go on.
func (c *Conn) Send(m Message) error {
	frame, err := appendMessageFrame(nil, m, c.opts.MaxFrame)
	if err != nil {
		return err // nothing was written: the stream is intact
	}
	return c.write(frame)
}

// sendAllChunk is how many bytes of frames SendAll gathers before it
// writes them.
const sendAllChunk = 256 << 10

// SendAll sends ms in order, like Send each, but gathers their frames into
// as few writes as it can (one unless they pass sendAllChunk bytes): a
// batch of records costs one system call instead of one each. It stops at
// the first message it cannot send, after the ones before it, with Send's
// error. Another goroutine's frame may come between two writes.
func (c *Conn) SendAll(ms []Message) error {
	var buf []byte
	for i, m := range ms {
		var err error
		if buf, err = appendMessageFrame(buf, m, c.opts.MaxFrame); err != nil {
			if werr := c.write(buf); werr != nil {
				return werr
			}
			return err
		}
		if len(buf) >= sendAllChunk || i == len(ms)-1 {
			if err := c.write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return nil
}

// write writes whole frames under the write lock.
func (c *Conn) write(frames []byte) error {
	if len(frames) == 0 {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if c.opts.WriteTimeout > 0 {
		if err := c.nc.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout)); err != nil {
			c.werr = err
			return err
		}
	}
	if _, err := c.w.Write(frames); err != nil {
		c.werr = err
		return err
	}
	return nil
}

// Recv reads the next message. io.EOF means the peer closed between
// frames. A framing error (frame too large, connection cut inside a
// frame, read deadline passed) is returned again by every later Recv, as
// the stream is out of step; a frame that is whole but not a valid
// message (unknown type, malformed JSON) fails only that Recv, with
// errcode.HostProtocolError, and the caller decides whether to go on.
func (c *Conn) Recv() (Message, error) {
	if !c.rdeadline.IsZero() && c.rerr == nil {
		if err := c.nc.SetReadDeadline(time.Time{}); err != nil {
			c.rerr = err
			return nil, err
		}
		c.rdeadline = time.Time{}
	}
	return c.recvLimit(c.opts.MaxFrame)
}

// recvLimit is Recv with a frame limit of its own: the handshake reads an
// unauthenticated peer's first frame with a small one.
func (c *Conn) recvLimit(maxFrame int) (Message, error) {
	if c.rerr != nil {
		return nil, c.rerr
	}
	if !c.opts.ReuseRecords {
		body, err := readFrame(c.r, maxFrame)
		if err != nil {
			c.rerr = err
			return nil, err
		}
		return decode(body, &c.lastSession, nil)
	}
	body, err := c.readBody(maxFrame)
	if err != nil {
		c.rerr = err
		return nil, err
	}
	return decode(body, &c.lastSession, &c.rec)
}

// readBody reads one frame's body for ReuseRecords: in place in the read
// buffer when it fits (valid until the next read), else into c.body. It
// fails as readFrame does.
func (c *Conn) readBody(maxFrame int) ([]byte, error) {
	size, err := peekFrameSize(c.r, maxFrame)
	if err != nil {
		return nil, err
	}
	if n := frameHeader + size; n <= c.r.Size() {
		b, err := c.r.Peek(n)
		if err != nil {
			return nil, frameBodyError(err, len(b)-frameHeader, size)
		}
		_, _ = c.r.Discard(n) // the bytes stay where they are until the next read
		return b[frameHeader:], nil
	}
	_, _ = c.r.Discard(frameHeader)
	if cap(c.body) < size || cap(c.body) > 4*size+readBuffer {
		c.body = make([]byte, size) // not kept past a few times what is needed
	}
	c.body = c.body[:size]
	if n, err := io.ReadFull(c.r, c.body); err != nil {
		return nil, frameBodyError(err, n, size)
	}
	return c.body, nil
}

// frameBuffered reports whether a whole frame is in the read buffer, so
// that reading it does not wait for the network.
func (c *Conn) frameBuffered() bool {
	n := c.r.Buffered()
	if n < frameHeader {
		return false
	}
	hdr, _ := c.r.Peek(frameHeader)
	return uint64(n) >= frameHeader+uint64(binary.BigEndian.Uint32(hdr))
}

// RecvBefore is Recv with a read deadline: if no whole frame arrives
// before deadline (or up to deadlineSlack after it) it fails with an
// error satisfying os.IsTimeout (a net.Error whose Timeout() is true),
// and the Conn can no longer be read (part of a frame may have been
// consumed). It is the liveness check: a peer that answers nothing, not
// even a Pong, within the deadline is gone. The socket's deadline is
// moved only when deadline passes the one set (which is then set
// deadlineSlack later), not for every frame: setting it costs two timer
// updates, which a stream of records paid per frame.
func (c *Conn) RecvBefore(deadline time.Time) (Message, error) {
	if c.rerr != nil {
		return nil, c.rerr
	}
	if c.rdeadline.IsZero() || deadline.After(c.rdeadline) || deadline.Before(c.rdeadline.Add(-deadlineSlack)) {
		set := deadline.Add(deadlineSlack)
		if err := c.nc.SetReadDeadline(set); err != nil {
			return nil, err
		}
		c.rdeadline = set
	}
	return c.recvLimit(c.opts.MaxFrame)
}

// RecvWithin is RecvBefore(now + d), reading the clock only when the
// next frame is not whole in the read buffer already: a frame that is
// cannot time out, and a stream of records then costs no clock read per
// record. Arrived tells when the data last came in.
func (c *Conn) RecvWithin(d time.Duration) (Message, error) {
	if c.rerr == nil && c.frameBuffered() {
		if c.arrived.IsZero() {
			c.arrived = time.Now() // buffered with the handshake: it came in just now
		}
		return c.recvLimit(c.opts.MaxFrame)
	}
	m, err := c.RecvBefore(time.Now().Add(d))
	c.arrived = time.Now()
	return m, err
}

// Arrived is when the last RecvWithin that waited for the network
// returned: the time the frames read since then came in, as near as
// matters for a liveness display.
func (c *Conn) Arrived() time.Time { return c.arrived }

// deadlineSlack is how much later than asked RecvBefore may time out.
const deadlineSlack = time.Second

// Close closes the underlying connection; a Recv or Send blocked in
// another goroutine returns.
func (c *Conn) Close() error { return c.nc.Close() }
