package executor

import (
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/hostproto"
)

// TestAckWaitsForDurable checks that with HostConfig.Durable a committed
// record is acknowledged to the host (which then drops it) only once
// Durable says its commit is on disk: a power cut before that must find
// the record still on the host. The records are committed at once (a
// plain handler), so only the disk holds the acknowledgement back.
func TestAckWaitsForDurable(t *testing.T) {
	var mu sync.Mutex
	var held []func()
	f := newFakeHost(t, nil)
	h := newTestHost(t, f, func(c *HostConfig) {
		c.Durable = func(done func()) {
			mu.Lock()
			held = append(held, done)
			mu.Unlock()
		}
	})
	startAgent(t, h, "s1", newRecHandler(true))
	want := []uint64{
		f.emit("s1", hostproto.RecordRequest, permissionRequest("r1")),
		f.emit("s1", hostproto.RecordRequestClosed, hostproto.RequestClosed{RequestID: "r1"}),
	}
	poll := func() <-chan struct{} {
		ch := make(chan struct{})
		time.AfterFunc(5*time.Millisecond, func() { close(ch) })
		return ch
	}
	eventually(t, "both commits waiting for the disk", poll, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(held) == len(want)
	})
	f.mu.Lock()
	early := f.lastAckLocked("s1")
	f.mu.Unlock()
	if early != 0 {
		t.Fatalf("acknowledged up to %d before any commit was durable, want nothing", early)
	}
	mu.Lock()
	first := held[0]
	mu.Unlock()
	first()
	f.waitFor(t, "the first record acknowledged", func() bool { return f.lastAckLocked("s1") == want[0] })
	mu.Lock()
	rest := held[1:]
	mu.Unlock()
	for _, done := range rest {
		done()
	}
	f.waitFor(t, "every record acknowledged", func() bool { return f.lastAckLocked("s1") == want[len(want)-1] })
}
