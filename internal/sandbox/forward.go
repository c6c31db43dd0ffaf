package sandbox

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The `loopback` network policy: the agent gets a network namespace of its
// own, so it reaches nothing outside, and the host's loopback TCP ports
// the policy lists are forwarded into it. Inside, the sandbox's init
// (InitCommand) listens on 127.0.0.1:port for each port and passes
// each connection, prefixed by its port, over a unix socket bound into the
// sandbox; outside, the launching process (forwarder) dials 127.0.0.1:port
// for each port it allows. Why not share the network and filter: nothing
// unprivileged filters connect() by address.

// insideSocketDir is where the forwarder's socket appears in the sandbox.
const insideSocketDir = "/run/tether-net"

const socketName = "s"

// forwarder is the outside half: a unix socket in a private directory.
type forwarder struct {
	dir   string
	ln    net.Listener
	ports []int
	wg    sync.WaitGroup
}

// listen starts the outside half for ports.
func listen(ports []int) (*forwarder, error) {
	dir, err := os.MkdirTemp("", "tether-net-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: loopback forwarder: %w", err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, socketName))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox: loopback forwarder: %w", err)
	}
	f := &forwarder{dir: dir, ln: ln, ports: slices.Clone(ports)}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.pass(c)
	}
}

// pass connects one inside connection to its port outside; a port the
// policy does not list is refused (the inside half only listens on listed
// ones, but the socket is the agent's to write to).
func (f *forwarder) pass(c net.Conn) {
	defer c.Close()
	var hdr [2]byte
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	port := int(binary.BigEndian.Uint16(hdr[:]))
	if !slices.Contains(f.ports, port) {
		return
	}
	out, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 10*time.Second)
	if err != nil {
		return
	}
	splice(c, out)
}

// close stops accepting and removes the socket's directory. Connections
// open still end with the sandbox.
func (f *forwarder) close() {
	_ = f.ln.Close()
	f.wg.Wait()
	_ = os.RemoveAll(f.dir)
}

// splice copies both ways until both directions end.
func splice(a, b net.Conn) {
	defer b.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
}

// forwardPort listens on 127.0.0.1:port (and [::1]:port where IPv6 is up)
// inside and passes each connection to the outside half.
func forwardPort(socket string, port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	lns := []net.Listener{ln}
	if ln6, err := net.Listen("tcp", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
		lns = append(lns, ln6)
	}
	for _, l := range lns {
		go func(l net.Listener) {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					out, err := net.Dial("unix", socket)
					if err != nil {
						return
					}
					var hdr [2]byte
					binary.BigEndian.PutUint16(hdr[:], uint16(port))
					if _, err := out.Write(hdr[:]); err != nil {
						out.Close()
						return
					}
					splice(c, out)
				}()
			}
		}(l)
	}
	return nil
}
