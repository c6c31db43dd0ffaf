package executor

import (
	"slices"
	"sync"
	"testing"

	"github.com/tether/tether/internal/hostproto"
)

// offsetHandler is a recHandler that commits the offsets of records that
// bring it no update itself (RecordHandler), holding each done until the
// test calls commit.
type offsetHandler struct {
	*recHandler
	mu      sync.Mutex
	offsets []uint64
	dones   []func()
}

func (o *offsetHandler) Record(offset uint64, done func()) {
	o.mu.Lock()
	o.offsets = append(o.offsets, offset)
	o.dones = append(o.dones, done)
	o.mu.Unlock()
	o.recHandler.mu.Lock()
	o.recHandler.notifyLocked()
	o.recHandler.mu.Unlock()
}

func (o *offsetHandler) seen() []uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.offsets)
}

// commit calls every done handed over so far.
func (o *offsetHandler) commit() {
	o.mu.Lock()
	ds := o.dones
	o.dones = nil
	o.mu.Unlock()
	for _, d := range ds {
		d()
	}
}

// TestRecordsWithoutUpdateCommittedByHandler: a permission request, its
// withdrawal, an update that does not decode and a record of an unknown
// kind bring the handler no update; a RecordHandler is handed their
// offsets, in order, and the host is acknowledged none of them before the
// handler says it committed them (issue 28: a record acknowledged and not
// committed put the host's replay after the offset the next attach
// started from). A handler without RecordHandler has them acknowledged
// once handed over, as before.
func TestRecordsWithoutUpdateCommittedByHandler(t *testing.T) {
	emitAll := func(f *fakeHost) []uint64 {
		return []uint64{
			f.emit("s1", hostproto.RecordRequest, permissionRequest("r1")),
			f.emit("s1", hostproto.RecordRequestClosed, hostproto.RequestClosed{RequestID: "r1"}),
			f.emit("s1", hostproto.RecordACPUpdate, []byte(`{"not an update"`)),
			f.emit("s1", "kind_of_a_later_version", map[string]any{}),
		}
	}
	t.Run("RecordHandler", func(t *testing.T) {
		f := newFakeHost(t, nil)
		h := newTestHost(t, f, nil)
		oh := &offsetHandler{recHandler: newRecHandler(true)}
		if _, err := h.Start(ctxT(t), "s1", hostproto.StartPayload{ProfileID: "demo", Cwd: "/tmp"}, oh); err != nil {
			t.Fatalf("Start: %v", err)
		}
		want := emitAll(f)
		oh.waitFor(t, "the offsets", func() bool { return len(oh.seen()) == len(want) })
		if got := oh.seen(); !slices.Equal(got, want) {
			t.Fatalf("offsets handed to Record: got %v, want %v", got, want)
		}
		f.mu.Lock()
		early := f.lastAckLocked("s1")
		f.mu.Unlock()
		if early >= want[0] {
			t.Fatalf("acknowledged up to %d before the handler committed %v", early, want)
		}
		oh.commit()
		f.waitFor(t, "every record acknowledged", func() bool { return f.lastAckLocked("s1") == want[len(want)-1] })
	})
	t.Run("plain handler", func(t *testing.T) {
		f := newFakeHost(t, nil)
		h := newTestHost(t, f, nil)
		startAgent(t, h, "s1", newRecHandler(true))
		want := emitAll(f)
		f.waitFor(t, "every record acknowledged", func() bool { return f.lastAckLocked("s1") == want[len(want)-1] })
	})
}
