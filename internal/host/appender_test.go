package host

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/outbox"
)

// TestFlushBatchesQueuedRecords: the records queued before a flush are
// appended in one outbox commit (one fsync), in queue order; each learns
// its offset before its credit is released, and mark answers the offset
// of the last record queued before it.
func TestFlushBatchesQueuedRecords(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ob, err := outbox.Open(t.TempDir(), outbox.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	s := &session{h: &Host{}, ob: ob, log: quiet, quit: make(chan struct{}), closingCh: make(chan struct{}), room: make(chan struct{}, 1)}
	var offsets []uint64
	released := 0
	update := func(i int) item {
		return item{kind: hostproto.RecordUpdate, payload: map[string]int{"i": i},
			appended: func(off uint64) { offsets = append(offsets, off) },
			done: func() {
				if released >= len(offsets) {
					t.Errorf("credit %d released before its record had an offset", released+1)
				}
				released++
			}}
	}
	for i := 1; i <= 5; i++ {
		s.q.push(update(i))
	}
	first := s.mark()
	for i := 6; i <= 8; i++ {
		s.q.push(update(i))
	}
	if got := []uint64{first, s.mark()}; !slices.Equal(got, []uint64{5, 8}) {
		t.Fatalf("marks: got offsets %v, want [5 8]", got)
	}
	if want := []uint64{1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(offsets, want) || released != 8 {
		t.Fatalf("got offsets %v and %d credits released, want %v and 8", offsets, released, want)
	}
	if st := ob.Stats(); st.Syncs != 2 {
		t.Fatalf("got %d fsyncs for two runs of queued records, want 2", st.Syncs)
	}
	recs, err := ob.Read(1, 10)
	if err != nil || len(recs) != 8 {
		t.Fatalf("read back: got %d records (%v), want 8", len(recs), err)
	}
	for i, r := range recs {
		if kind, payload, err := decodeRecord(r.Data); err != nil || kind != hostproto.RecordUpdate || string(payload) != `{"i":`+string(rune('1'+i))+`}` {
			t.Fatalf("record %d: got %s %s (%v), want update {\"i\":%d}", r.Offset, kind, payload, err, i+1)
		}
	}
}
