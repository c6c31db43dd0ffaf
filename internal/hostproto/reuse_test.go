package hostproto

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// cloneMessage copies what a ReuseRecords Conn would reuse.
func cloneMessage(m Message) Message {
	if r, ok := m.(*Record); ok {
		c := *r
		c.Payload = bytes.Clone(r.Payload)
		return &c
	}
	return m
}

// TestReuseRecordsReadsWhatWasSent: with ReuseRecords a Conn reads the
// same messages as without, records in the read buffer and records larger
// than it alike, and other messages between them.
func TestReuseRecordsReadsWhatWasSent(t *testing.T) {
	big := `{"text":"` + strings.Repeat("b", 3*readBuffer) + `"}`
	var ms []Message
	for i := range 600 { // several buffers' worth
		payload := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("p", i%300))
		switch {
		case i%97 == 0:
			payload = big
		case i%50 == 0:
			ms = append(ms, &Ack{SessionID: "s", Offset: uint64(i)})
		}
		ms = append(ms, &Record{Offset: uint64(i + 1), SessionID: fmt.Sprintf("s%d", i%3), Kind: RecordACPUpdate, Payload: []byte(payload)})
	}
	for _, reuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reuse=%v", reuse), func(t *testing.T) {
			a, b := connPair(t, Options{ReuseRecords: reuse})
			go func() { _ = a.SendAll(ms) }()
			var prev *Record
			for i, want := range ms {
				m, err := b.RecvWithin(time.Minute)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				if !reflect.DeepEqual(cloneMessage(m), want) {
					t.Fatalf("message %d: got %#v, want %#v", i, m, want)
				}
				if r, ok := m.(*Record); ok {
					if reuse && prev != nil && r != prev {
						t.Fatalf("message %d: got a new Record, want the Conn's own reused", i)
					}
					prev = r
				}
			}
		})
	}
}

// TestRecvWithinFirstFrameBuffered: a frame that came in with what was
// read before (the handshake) has arrived now, not at the zero time.
func TestRecvWithinFirstFrameBuffered(t *testing.T) {
	a, b := connPair(t, Options{})
	go func() { _ = a.SendAll([]Message{&Pong{Nonce: 1}, &Pong{Nonce: 2}}) }()
	if _, err := b.Recv(); err != nil { // as the handshake reads its frame
		t.Fatal(err)
	}
	before := time.Now()
	if m, err := b.RecvWithin(time.Minute); err != nil || !reflect.DeepEqual(m, Message(&Pong{Nonce: 2})) {
		t.Fatalf("buffered frame: got %#v, %v", m, err)
	}
	if got := b.Arrived(); got.Before(before) {
		t.Fatalf("Arrived after a first, buffered frame: got %v, want no earlier than %v", got, before)
	}
}

// TestRecvWithin: a frame already buffered is read even with no time
// left (it cannot time out); one that is not times out, for good, and
// Arrived moves only when the network was waited for.
func TestRecvWithin(t *testing.T) {
	a, b := connPair(t, Options{})
	go func() { _ = a.SendAll([]Message{&Pong{Nonce: 1}, &Pong{Nonce: 2}}) }()
	if m, err := b.RecvWithin(time.Minute); err != nil || !reflect.DeepEqual(m, Message(&Pong{Nonce: 1})) {
		t.Fatalf("first frame: got %#v, %v", m, err)
	}
	arrived := b.Arrived()
	if arrived.IsZero() {
		t.Fatal("Arrived after a wait: got the zero time")
	}
	if m, err := b.RecvWithin(-time.Second); err != nil || !reflect.DeepEqual(m, Message(&Pong{Nonce: 2})) {
		t.Fatalf("buffered frame with no time left: got %#v, %v", m, err)
	}
	if !b.Arrived().Equal(arrived) {
		t.Fatalf("Arrived after a buffered frame: got %v, want %v unchanged", b.Arrived(), arrived)
	}
	if _, err := b.RecvWithin(-time.Second); !os.IsTimeout(err) {
		t.Fatalf("nothing buffered, no time left: got %v, want a timeout", err)
	}
	if _, err := b.RecvWithin(time.Minute); !os.IsTimeout(err) {
		t.Fatalf("after a timeout: got %v, want the timeout again", err)
	}
}
