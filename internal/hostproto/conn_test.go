package hostproto

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// connPair is two Conns over net.Pipe, closed when the test ends.
func connPair(t *testing.T, opts Options) (*Conn, *Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return newConn(a, opts), newConn(b, opts)
}

// rawPeer is a bare net.Pipe end writing bytes to a Conn; writes run in
// the background (a pipe write waits for the reader), in order, and the
// test waits for them before it ends. write(true, ...) closes the raw end
// once the Conn has read every chunk.
func rawPeer(t *testing.T, opts Options) (*Conn, func(close bool, chunks ...[]byte)) {
	t.Helper()
	raw, other := net.Pipe()
	var wg sync.WaitGroup
	t.Cleanup(func() { raw.Close(); other.Close(); wg.Wait() })
	write := func(close bool, chunks ...[]byte) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range chunks {
				if _, err := raw.Write(c); err != nil {
					return
				}
			}
			if close {
				raw.Close()
			}
		}()
	}
	return newConn(other, opts), write
}

func mustFrame(t *testing.T, m Message) []byte {
	t.Helper()
	body, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return frameOf(uint32(len(body)), string(body))
}

func TestConnConcurrentSenders(t *testing.T) {
	const senders, each = 4, 50
	a, b := connPair(t, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := a.Send(&Record{Offset: uint64(i), SessionID: fmt.Sprint(s), Kind: RecordUpdate}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	next := map[string]uint64{}
	for range senders * each {
		m, err := b.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		r, ok := m.(*Record)
		if !ok {
			t.Fatalf("got %T, want *Record", m)
		}
		if r.Offset != next[r.SessionID] {
			t.Fatalf("sender %s: got offset %d, want %d (frames interleaved or reordered)", r.SessionID, r.Offset, next[r.SessionID])
		}
		next[r.SessionID]++
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Send: %v", err)
	}
}

func TestConnBadMessageIsNotSticky(t *testing.T) {
	c, write := rawPeer(t, Options{})
	write(false, frameOf(20, `{"type":"teleport"}`+" "), mustFrame(t, &Ack{Offset: 5}))
	if _, err := c.Recv(); !errcode.Is(err, errcode.HostProtocolError) || !strings.Contains(err.Error(), "teleport") {
		t.Fatalf("unknown type: got %v, want %s naming it", err, errcode.HostProtocolError)
	}
	m, err := c.Recv()
	if err != nil || !reflect.DeepEqual(m, Message(&Ack{Offset: 5})) {
		t.Fatalf("frame after it: got %#v, %v; want the ack", m, err)
	}
}

func TestConnFramingErrorsAreSticky(t *testing.T) {
	cases := []struct {
		name   string
		chunks [][]byte
		close  bool
		want   errcode.Code
	}{
		{name: "too large", chunks: [][]byte{frameOf(1<<20, "")}, want: errcode.HostFrameTooLarge},
		{name: "cut inside a header", chunks: [][]byte{{0, 0}}, close: true, want: errcode.HostProtocolError},
		{name: "cut inside a frame", chunks: [][]byte{frameOf(30, `{"type":"ack"`)}, close: true, want: errcode.HostProtocolError},
		{name: "cut inside a frame larger than the read buffer", chunks: [][]byte{frameOf(2*readBuffer, `{"type":"record","payload":"`+strings.Repeat("x", readBuffer))},
			close: true, want: errcode.HostProtocolError},
	}
	for _, reuse := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s (ReuseRecords=%v)", tc.name, reuse), func(t *testing.T) {
				c, write := rawPeer(t, Options{MaxFrame: 4 * readBuffer, ReuseRecords: reuse})
				write(tc.close, tc.chunks...)
				_, err := c.Recv()
				if !errcode.Is(err, tc.want) {
					t.Fatalf("first Recv: got %v, want %s", err, tc.want)
				}
				if _, again := c.Recv(); again != err {
					t.Fatalf("second Recv: got %v, want the same error %v", again, err)
				}
			})
		}
	}
}

func TestConnEOFBetweenFrames(t *testing.T) {
	a, b := connPair(t, Options{})
	go func() { _ = a.Send(&Ping{Nonce: 1}); a.Close() }()
	if m, err := b.Recv(); err != nil || m.Type() != TypePing {
		t.Fatalf("got %v, %v; want the ping", m, err)
	}
	if _, err := b.Recv(); err != io.EOF {
		t.Fatalf("after the peer closed: got %v, want io.EOF", err)
	}
}

func TestRecvBefore(t *testing.T) {
	a, b := connPair(t, Options{})
	go func() { _ = a.Send(&Pong{Nonce: 1}); _ = a.Send(&Pong{Nonce: 2}) }()
	if m, err := b.RecvBefore(time.Now().Add(time.Hour)); err != nil || !reflect.DeepEqual(m, Message(&Pong{Nonce: 1})) {
		t.Fatalf("frame before the deadline: got %#v, %v", m, err)
	}
	// The deadline was cleared: a plain Recv waits as long as it takes.
	if m, err := b.Recv(); err != nil || !reflect.DeepEqual(m, Message(&Pong{Nonce: 2})) {
		t.Fatalf("next Recv: got %#v, %v", m, err)
	}
	_, err := b.RecvBefore(time.Now().Add(-time.Second))
	if !os.IsTimeout(err) {
		t.Fatalf("deadline passed: got %v, want a timeout", err)
	}
	if _, again := b.Recv(); !os.IsTimeout(again) {
		t.Fatalf("Recv after a timeout: got %v, want the timeout again", again)
	}
}

func TestSendErrors(t *testing.T) {
	t.Run("too large is refused and the stream goes on", func(t *testing.T) {
		a, b := connPair(t, Options{MaxFrame: 48})
		err := a.Send(&Command{ID: "c", Kind: CommandPrompt, SessionID: strings.Repeat("s", 40)})
		if !errcode.Is(err, errcode.HostFrameTooLarge) {
			t.Fatalf("got %v, want %s", err, errcode.HostFrameTooLarge)
		}
		go func() { _ = a.Send(&Ack{Offset: 1}) }()
		if m, err := b.Recv(); err != nil || m.Type() != TypeAck {
			t.Fatalf("after the refused frame: got %v, %v; want the ack", m, err)
		}
	})
	t.Run("write timeout is sticky", func(t *testing.T) {
		a, _ := connPair(t, Options{WriteTimeout: time.Nanosecond}) // nobody reads
		err := a.Send(&Ack{Offset: 1})
		if !os.IsTimeout(err) {
			t.Fatalf("got %v, want a timeout", err)
		}
		if again := a.Send(&Ack{Offset: 2}); !errors.Is(again, err) {
			t.Fatalf("next Send: got %v, want the first error %v", again, err)
		}
	})
}

// TestSendAll: the messages arrive in order as separate frames, across
// the chunks SendAll writes; a message too large stops the batch after the
// ones before it, and the stream goes on.
func TestSendAll(t *testing.T) {
	big := strings.Repeat("x", sendAllChunk/3)
	acks := func(from, n int) []Message {
		ms := make([]Message, n)
		for i := range ms {
			ms[i] = &Ack{SessionID: big, Offset: uint64(from + i)}
		}
		return ms
	}
	tests := []struct {
		name     string
		max      int
		ms       []Message
		wantRecv int // acks the reader gets, offsets 1..wantRecv
		wantErr  errcode.Code
	}{
		{name: "none", ms: nil},
		{name: "one", ms: acks(1, 1), wantRecv: 1},
		{name: "more than a chunk", ms: acks(1, 8), wantRecv: 8},
		{name: "too large in the middle", max: 100, ms: []Message{&Ack{Offset: 1}, &Ack{Offset: 2}, &Ack{SessionID: big, Offset: 3}, &Ack{Offset: 4}},
			wantRecv: 2, wantErr: errcode.HostFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxFrame := tt.max
			if maxFrame == 0 {
				maxFrame = 2 * sendAllChunk
			}
			a, b := connPair(t, Options{MaxFrame: maxFrame})
			sent := make(chan error, 1)
			go func() {
				err := a.SendAll(tt.ms)
				if err == nil || errcode.Is(err, errcode.HostFrameTooLarge) {
					err = errors.Join(err, a.Send(&Ping{Nonce: 99})) // the stream goes on
				}
				sent <- err
			}()
			for i := 1; i <= tt.wantRecv; i++ {
				m, err := b.Recv()
				if ack, ok := m.(*Ack); err != nil || !ok || ack.Offset != uint64(i) {
					t.Fatalf("frame %d: got a %T (%v); want ack %d", i, m, err, i)
				}
			}
			if m, err := b.Recv(); err != nil || m.Type() != TypePing {
				t.Fatalf("after the batch: got a %T (%v); want the ping", m, err)
			}
			err := <-sent
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && !errcode.Is(err, tt.wantErr) {
				t.Fatalf("SendAll: got %v, want code %q", err, tt.wantErr)
			}
		})
	}
}
