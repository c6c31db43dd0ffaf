// Package connlimit keeps clients from exhausting the daemon's connections
// and file descriptors. Its Listener caps how many connections are open at
// once; at the cap it admits a new connection by closing the one that has
// been doing nothing useful the longest (idle keep-alive, still sending
// headers, or still trickling a body), and only when every connection is
// busy (a request being handled, an event stream) does it answer the
// newcomer with a small 503 and Retry-After. Its Handler gives each request
// a body-read deadline and a response-write deadline, which long-lived
// streams extend for themselves through http.ResponseController.
//
// Wire it as:
//
//	l := connlimit.New(ln, cfg)
//	srv := &http.Server{Handler: l.Handler(h), ConnState: l.ConnState, ConnContext: l.ConnContext}
//	srv.Serve(l)
package connlimit

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// Config sets the cap and the deadlines.
type Config struct {
	// Max is how many connections may be open at once (> 0).
	Max int
	// RetryAfter is what a refused client is told to wait (default 1s).
	RetryAfter time.Duration
	// BodyTimeout bounds reading a request body, from the handler's start
	// (0: no limit).
	BodyTimeout time.Duration
	// WriteTimeout bounds writing a response, from its first byte (0: no
	// limit). Streams set their own deadlines per write.
	WriteTimeout time.Duration
	// Refuse writes the refusal. The default writes the plain HTTP/1.1 503;
	// a TLS listener, whose clients cannot read plain text, passes a
	// function that just closes.
	Refuse func(c net.Conn, retryAfter time.Duration)
	Logger *slog.Logger
}

// maxRefusing bounds the connections being refused at once: each holds a
// descriptor for up to refuseTimeout. Beyond it, newcomers are closed
// without an answer.
const (
	maxRefusing   = 64
	refuseTimeout = time.Second
	// warnEvery spaces out the log line saying the cap is being hit.
	warnEvery = time.Minute
)

// Listener is a net.Listener that enforces Config.Max.
type Listener struct {
	net.Listener
	cfg Config

	mu   sync.Mutex
	open int
	// idle holds connections with no request being handled: new, idle
	// between requests, or still sending a request's headers. Oldest
	// first (by when they last finished a request or were accepted).
	idle list.List
	// receiving holds connections whose every running request is still
	// reading its body: a trickling body is not useful work yet.
	receiving list.List
	lastWarn  time.Time

	refusing         chan struct{}
	wg               sync.WaitGroup
	evicted, refused atomic.Int64
}

// New wraps ln.
func New(ln net.Listener, cfg Config) *Listener {
	if cfg.Max <= 0 {
		cfg.Max = 1
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = time.Second
	}
	if cfg.Refuse == nil {
		cfg.Refuse = RefuseHTTP
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Listener{Listener: ln, cfg: cfg, refusing: make(chan struct{}, maxRefusing)}
}

// Stats are the listener's counters.
type Stats struct {
	// Open is how many connections are held now, Max the cap.
	Open, Max int
	// Evicted counts connections closed to admit a newcomer; Refused counts
	// newcomers turned away because every connection was busy.
	Evicted, Refused int64
}

// Stats reports what the listener holds and has done.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Open: l.open, Max: l.cfg.Max, Evicted: l.evicted.Load(), Refused: l.refused.Load()}
}

// Accept returns the next admitted connection. At the cap it first closes
// the longest-idle connection; if none is idle, it refuses the newcomer and
// waits for the next.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := l.admit(nc); c != nil {
			return c, nil
		}
		l.refuse(nc)
	}
}

// admit tracks nc if there is (or can be made) room for it.
func (l *Listener) admit(nc net.Conn) *conn {
	l.mu.Lock()
	for l.open >= l.cfg.Max {
		v := l.victim()
		l.noteCapLocked()
		if v == nil {
			l.mu.Unlock()
			return nil
		}
		l.unlistLocked(v)
		l.mu.Unlock()
		l.evicted.Add(1)
		_ = v.Close() // lowers l.open
		l.mu.Lock()
	}
	l.open++
	c := &conn{Conn: nc, l: l}
	l.placeLocked(c)
	l.mu.Unlock()
	return c
}

// victim is the connection to close for a newcomer: the oldest idle one,
// else the oldest still receiving a body.
func (l *Listener) victim() *conn {
	if e := l.idle.Front(); e != nil {
		return e.Value.(*conn)
	}
	if e := l.receiving.Front(); e != nil {
		return e.Value.(*conn)
	}
	return nil
}

func (l *Listener) noteCapLocked() {
	if now := time.Now(); now.Sub(l.lastWarn) >= warnEvery {
		l.lastWarn = now
		l.cfg.Logger.Warn("connection cap reached: closing idle connections, refusing new ones when all are busy",
			"max", l.cfg.Max, "evicted", l.evicted.Load(), "refused", l.refused.Load())
	}
}

// refuse answers nc in the background (bounded) and closes it.
func (l *Listener) refuse(nc net.Conn) {
	l.refused.Add(1)
	select {
	case l.refusing <- struct{}{}:
	default:
		_ = nc.Close()
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() { <-l.refusing }()
		l.cfg.Refuse(nc, l.cfg.RetryAfter)
	}()
}

// Close stops accepting and waits for the refusals in flight.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	l.wg.Wait()
	return err
}

// RefuseHTTP writes a minimal HTTP/1.1 503 problem with Retry-After to c,
// reads what the client sent (so that closing does not reset the
// connection before the client read the answer) and closes it. It gives up
// after one second.
func RefuseHTTP(c net.Conn, retryAfter time.Duration) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseTimeout))
	secs := max(1, int(retryAfter.Round(time.Second)/time.Second))
	body := fmt.Sprintf(`{"type":"about:blank","title":"Service Unavailable","status":503,"code":%q,"detail":"too many connections; retry later"}`+"\n",
		errcode.TooManyConnections)
	resp := "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: " + strconv.Itoa(secs) +
		"\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(c, resp); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// RefuseClose closes c without an answer (for TLS listeners).
func RefuseClose(c net.Conn, _ time.Duration) { _ = c.Close() }

// ConnState is the http.Server's ConnState hook: it notices connections
// that finished a request (idle again) or were hijacked (never evicted).
func (l *Listener) ConnState(nc net.Conn, s http.ConnState) {
	c := lookup(nc)
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateIdle:
		// Back of the line: it just did useful work.
		l.unlistLocked(c)
		l.placeLocked(c)
	case http.StateHijacked:
		c.hijacked = true
		l.unlistLocked(c)
	}
}

type connKey struct{}

// ConnContext is the http.Server's ConnContext hook: it lets Handler find
// the connection of a request.
func (l *Listener) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c := lookup(nc); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// lookup finds the tracked connection under nc (a TLS connection wraps it).
func lookup(nc net.Conn) *conn {
	for nc != nil {
		switch v := nc.(type) {
		case *conn:
			return v
		case interface{ NetConn() net.Conn }:
			nc = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// conn is an admitted connection and what its requests are doing.
type conn struct {
	net.Conn
	l *Listener
	// Guarded by l.mu.
	elem      *list.Element
	in        *list.List
	handlers  int // requests being handled
	receiving int // of which still reading their body
	hijacked  bool
	closed    bool
}

// Close closes the connection and frees its place.
func (c *conn) Close() error {
	err := c.Conn.Close()
	l := c.l
	l.mu.Lock()
	if !c.closed {
		c.closed = true
		l.unlistLocked(c)
		l.open--
	}
	l.mu.Unlock()
	if errors.Is(err, net.ErrClosed) {
		err = nil // evicted earlier; net/http closes it again
	}
	return err
}

// update changes c's counters and moves it to the list it now belongs to.
func (c *conn) update(handlers, receiving int) {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	c.handlers += handlers
	c.receiving += receiving
	l.unlistLocked(c)
	l.placeLocked(c)
}

// placeLocked puts c at the back of the list its state belongs to (none
// if it is busy, hijacked or closed).
func (l *Listener) placeLocked(c *conn) {
	if c.closed || c.hijacked || c.elem != nil {
		return
	}
	switch {
	case c.handlers == 0:
		c.in = &l.idle
	case c.receiving == c.handlers:
		c.in = &l.receiving
	default:
		return
	}
	c.elem = c.in.PushBack(c)
}

func (l *Listener) unlistLocked(c *conn) {
	if c.elem != nil {
		c.in.Remove(c.elem)
		c.elem, c.in = nil, nil
	}
}
