package testbin

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy a test puts between a process and a server (a
// daemon and its PostgreSQL) to cut the path on demand: Cut drops every
// connection through it and refuses new ones until Restore, as a database
// that goes away and comes back does (the process sees resets, then
// refusals), on loopback and without a namespace.
type Proxy struct {
	ln     net.Listener
	target string

	mu  sync.Mutex
	cut bool
	// armed, when set, is what CutAfter waits for the client to send;
	// silent cuts the clients alone (CutAfter).
	armed  []byte
	silent bool
	// holding is set by a silent cut: the server's side of a connection
	// is kept open, what it sends dropped.
	holding bool
	// clients are the conns facing the clients (of conns).
	clients map[net.Conn]bool
	// fired is closed once an armed cut has happened.
	fired chan struct{}
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port) until tb ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, clients: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	tb.Cleanup(func() {
		_ = ln.Close()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is where the proxy listens (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut drops every open connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// CutAfter arms a cut at a chosen moment: the first time a client sends
// data holding pattern, that data reaches the server and then every
// connection is cut, before the server's answer can come back. Aimed at
// a COMMIT, it leaves the client not knowing whether its transaction
// committed (it did). silent cuts the clients' side alone: the server's
// connections stay open and idle, as across a network partition, where
// the server learns of the loss only much later. The returned channel
// closes once the cut is done.
func (p *Proxy) CutAfter(pattern []byte, silent bool) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.silent = pattern, silent
	p.fired = make(chan struct{})
	return p.fired
}

// Restore accepts connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut, p.holding = false, false
	p.mu.Unlock()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.clients[c] = true
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.upstream(up, c)
	}
}

// upstream is pipe for what a client sends the server, watching for an
// armed cut (CutAfter).
func (p *Proxy) upstream(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			hit := p.armed != nil && bytes.Contains(buf[:n], p.armed)
			silent := p.silent
			if hit {
				p.armed = nil
				p.cut, p.holding = true, silent
			}
			p.mu.Unlock()
			if hit {
				p.cutAt(dst, src, buf[:n], silent)
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	p.forget(dst, src)
}

// cutAt is an armed cut: the client's side closes first, so the server's
// answer to data can never reach it; then data goes to the server, and
// every other connection is cut. The server's side of this one is closed
// by its pipe once the server answers (data was acted on), or, silent,
// kept open and unread like every server side.
func (p *Proxy) cutAt(dst, src net.Conn, data []byte, silent bool) {
	_ = src.Close()
	_, _ = dst.Write(data)
	p.mu.Lock()
	for c := range p.conns {
		if c != dst && (!silent || p.clients[c]) {
			_ = c.Close()
		}
	}
	fired := p.fired
	p.mu.Unlock()
	p.forget(src)
	close(fired)
}

// forget drops closed connections from the proxy's books.
func (p *Proxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		delete(p.clients, c)
	}
}

// pipe copies src to dst until either ends, then closes both.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	p.mu.Lock()
	hold := p.holding && !p.clients[src]
	p.mu.Unlock()
	if hold { // src is a server's side a silent cut keeps open
		_, _ = io.Copy(io.Discard, src)
	}
	_ = dst.Close()
	_ = src.Close()
	p.forget(dst, src)
}
