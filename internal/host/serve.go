package host

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/rawio"
)

// Serve accepts daemon connections on every listener until ctx ends or
// the host has lingered (no daemon, idle agents) for Config.Linger; it
// then closes the listeners and every connection and returns nil. The
// agents keep running: Close stops them.
func (h *Host) Serve(ctx context.Context, lns ...net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, ln := range lns {
		wg.Go(func() { h.accept(ctx, ln, &wg) })
	}
	stop := context.AfterFunc(ctx, func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	})
	defer stop()
	h.linger(ctx)
	cancel()
	for _, ln := range lns {
		_ = ln.Close()
	}
	h.closeLinks()
	wg.Wait()
	return nil
}

func (h *Host) accept(ctx context.Context, ln net.Listener, wg *sync.WaitGroup) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				h.log.Error("host: accept", "err", err)
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
			}
			return
		}
		// A unix socket is watched for input only, so that the daemon
		// reading a record does not wake the host (rawio.Conn).
		if nc, err = rawio.NewConn(nc); err != nil {
			h.log.Error("host: accept", "err", err)
			continue
		}
		wg.Go(func() { h.serveConn(ctx, nc) })
	}
}

// serveConn runs the handshake and, if the daemon is let in, serves it
// beside the others: several daemons (the nodes sharing a database) may
// each own some of the host's sessions, and a daemon that reconnects
// finds its previous connection dropped by the ping timeout, its
// sessions moved by its attaches meanwhile.
func (h *Host) serveConn(ctx context.Context, nc net.Conn) {
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	conn, hello, err := hostproto.Server(hctx, nc, hostproto.ServerConfig{Token: h.cfg.Token, HostID: h.id, HostVersion: h.cfg.HostVersion,
		Versions: h.cfg.Versions, Sessions: h.sessionIDs, Options: h.cfg.options()})
	cancel()
	if err != nil {
		h.log.Warn("host: refused a connection", "remote", nc.RemoteAddr().String(), "err", err)
		_ = nc.Close()
		return
	}
	l := newLink(h, conn, hello)
	stop := context.AfterFunc(ctx, l.close)
	defer stop()
	n := h.addLink(l)
	l.log.Info("host: daemon connected", "version", conn.Version(), "remote", nc.RemoteAddr().String(), "connections", n)
	h.changed()
	l.run()
	h.removeLink(l)
	h.changed()
}

// addLink counts l among the host's connections and returns how many
// there are; a host that is closing closes it at once.
func (h *Host) addLink(l *link) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		l.close()
	}
	h.links[l] = struct{}{}
	return len(h.links)
}

func (h *Host) removeLink(l *link) {
	h.mu.Lock()
	delete(h.links, l)
	h.mu.Unlock()
}

// closeLinks ends every daemon connection.
func (h *Host) closeLinks() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for l := range h.links {
		l.close()
	}
}

// linger returns when ctx ends or the host stayed idle for Config.Linger.
func (h *Host) linger(ctx context.Context) {
	var timer *time.Timer
	var fire <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		idle := h.cfg.Linger >= 0 && h.idle()
		switch {
		case idle && timer == nil:
			timer = time.NewTimer(h.cfg.Linger)
			fire = timer.C
		case !idle && timer != nil:
			timer.Stop()
			timer, fire = nil, nil
		}
		select {
		case <-ctx.Done():
			return
		case <-h.changes:
		case <-fire:
			if h.idle() {
				h.log.Info("host: no daemon and idle agents for the linger period; exiting", "linger", h.cfg.Linger)
				return
			}
			timer, fire = nil, nil
		}
	}
}

// idle reports whether nothing keeps the host alive: no daemon connected,
// no prompt in flight, no permission request pending.
func (h *Host) idle() bool {
	h.mu.Lock()
	connected := len(h.links) > 0
	h.mu.Unlock()
	if connected {
		return false
	}
	for _, s := range h.all() {
		if s.busy() {
			return false
		}
	}
	return true
}
