package rawio_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/tether/tether/internal/rawio"
)

// quietPair is a unix socket pair whose first end is a rawio.Conn.
func quietPair(t *testing.T) (q, peer net.Conn) {
	t.Helper()
	a, b := socketPair(t)
	q, err := rawio.NewConn(a)
	if err != nil {
		t.Fatalf("NewConn: %v", err)
	}
	if _, ok := q.(*rawio.Conn); !ok {
		t.Fatalf("NewConn of a unix socket: got %T, want *rawio.Conn", q)
	}
	t.Cleanup(func() { q.Close() })
	return q, b
}

func TestConnBothWays(t *testing.T) {
	q, peer := quietPair(t)
	out := bytes.Repeat([]byte("record "), 300000) // more than the socket holds: Write waits for room
	in := bytes.Repeat([]byte("ack "), 300000)
	werr := make(chan error, 2)
	go func() {
		_, err := q.Write(out)
		werr <- err
	}()
	go func() {
		_, err := peer.Write(in)
		peer.(*net.UnixConn).CloseWrite()
		werr <- err
	}()
	gotOut := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(out))))
		gotOut <- b
	}()
	gotIn, err := io.ReadAll(q)
	if err != nil {
		t.Fatalf("ReadAll of the Conn: %v", err)
	}
	if !bytes.Equal(gotIn, in) {
		t.Fatalf("read: got %d bytes, want %d", len(gotIn), len(in))
	}
	if b := <-gotOut; !bytes.Equal(b, out) {
		t.Fatalf("written: peer got %d bytes, want %d", len(b), len(out))
	}
	for range 2 {
		if err := <-werr; err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
}

func TestConnDeadlines(t *testing.T) {
	cases := []struct {
		name string
		op   func(q net.Conn) error
	}{
		{"read with nothing sent", func(q net.Conn) error {
			q.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
			_, err := q.Read(make([]byte, 8))
			return err
		}},
		{"write to a peer that never reads", func(q net.Conn) error {
			q.SetWriteDeadline(time.Now().Add(30 * time.Millisecond))
			_, err := q.Write(make([]byte, 64<<20))
			return err
		}},
		{"deadline already passed", func(q net.Conn) error {
			q.SetDeadline(time.Now().Add(-time.Second))
			_, err := q.Read(make([]byte, 8))
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, _ := quietPair(t)
			err := c.op(q)
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("got %v, want a net.Error that timed out", err)
			}
		})
	}
}

func TestConnCloseEndsWaits(t *testing.T) {
	cases := []struct {
		name string
		op   func(q net.Conn) error
	}{
		{"a read", func(q net.Conn) error { _, err := q.Read(make([]byte, 8)); return err }},
		{"a write on a full socket", func(q net.Conn) error { _, err := q.Write(make([]byte, 64<<20)); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, _ := quietPair(t)
			errc := make(chan error, 1)
			go func() { errc <- c.op(q) }()
			time.Sleep(30 * time.Millisecond) // let it wait
			if err := q.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			select {
			case err := <-errc:
				if err == nil {
					t.Fatal("got no error after Close, want one")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("still waiting 5 s after Close")
			}
			if _, err := q.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Write after Close: got %v, want net.ErrClosed", err)
			}
		})
	}
}

func TestConnPeerGone(t *testing.T) {
	q, peer := quietPair(t)
	peer.Close()
	if n, err := q.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer closed: got %d, %v, want 0, EOF", n, err)
	}
	var err error
	for range 100 { // the first sends may still land in the buffer
		if _, err = q.Write([]byte("x")); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("writes to a closed peer: got no error")
	}
}

func TestNewConnLeavesOthers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := rawio.NewConn(c)
	if err != nil || got != c {
		t.Fatalf("NewConn of a TCP connection: got %T, %v, want it unchanged", got, err)
	}
}
