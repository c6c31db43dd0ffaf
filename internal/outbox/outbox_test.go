package outbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/outbox"
)

// quiet is the logger of outboxes whose warnings a test does not read.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// open opens dir and closes the outbox when the test ends.
func open(t *testing.T, dir string, cfg outbox.Config) *outbox.Outbox {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	o, err := outbox.Open(dir, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = o.Close() })
	return o
}

// rec is the content of the i-th test record: distinct, size bytes long
// (at least its label), and without zero bytes.
func rec(i, size int) []byte {
	b := []byte(fmt.Sprintf("record-%06d|", i))
	for len(b) < size {
		b = append(b, byte('a'+(i+len(b))%26))
	}
	return b
}

// appendRecs appends records from..to (rec(i, size)) and checks that each
// gets offset i.
func appendRecs(t *testing.T, o *outbox.Outbox, from, to, size int) {
	t.Helper()
	for i := from; i <= to; i++ {
		off, err := o.Append(context.Background(), rec(i, size))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if off != uint64(i) {
			t.Fatalf("Append %d: got offset %d, want %d", i, off, i)
		}
	}
}

// readAll returns every record from offset from, reading in small pages.
func readAll(t *testing.T, o *outbox.Outbox, from uint64) []outbox.Record {
	t.Helper()
	var out []outbox.Record
	for {
		page, err := o.Read(from, 7)
		if err != nil {
			t.Fatalf("Read(%d): %v", from, err)
		}
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		from = page[len(page)-1].Offset + 1
	}
}

// checkRecs checks that got is exactly records from..to of the given size.
func checkRecs(t *testing.T, got []outbox.Record, from, to, size int) {
	t.Helper()
	if want := to - from + 1; len(got) != max(want, 0) {
		t.Fatalf("got %d records, want %d (%d..%d)", len(got), want, from, to)
	}
	for k, r := range got {
		i := from + k
		if r.Offset != uint64(i) || !bytes.Equal(r.Data, rec(i, size)) {
			t.Fatalf("record %d: got offset %d data %.20q, want offset %d data %.20q", k, r.Offset, r.Data, i, rec(i, size))
		}
	}
}

func TestOffsetsGaplessAcrossReopen(t *testing.T) {
	cases := []struct {
		name    string
		rounds  []int // records appended per open
		segment int64
	}{
		{name: "empty then records", rounds: []int{0, 5}},
		{name: "one segment", rounds: []int{3, 4, 1}},
		{name: "many segments", rounds: []int{40, 1, 25}, segment: 512},
		{name: "reopen right after a roll", rounds: []int{6, 6, 6}, segment: 300},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			n := 0
			for _, k := range tc.rounds {
				o := open(t, dir, outbox.Config{SegmentBytes: tc.segment})
				if st := o.Stats(); st.Next != uint64(n+1) {
					t.Fatalf("after reopen: got next %d, want %d", st.Next, n+1)
				}
				appendRecs(t, o, n+1, n+k, 60)
				n += k
				checkRecs(t, readAll(t, o, 0), 1, n, 60)
				if err := o.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestAckThenReopen(t *testing.T) {
	cases := []struct {
		name      string
		n         int
		acks      []uint64
		wantAcked uint64
	}{
		{name: "nothing acked", n: 5, wantAcked: 0},
		{name: "some acked", n: 10, acks: []uint64{4}, wantAcked: 4},
		{name: "acks are idempotent", n: 10, acks: []uint64{6, 6, 3, 0}, wantAcked: 6},
		{name: "all acked", n: 10, acks: []uint64{10}, wantAcked: 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := open(t, dir, outbox.Config{SegmentBytes: 400})
			appendRecs(t, o, 1, tc.n, 50)
			for _, a := range tc.acks {
				if err := o.Ack(a); err != nil {
					t.Fatalf("Ack(%d): %v", a, err)
				}
			}
			checkRecs(t, readAll(t, o, 0), int(tc.wantAcked)+1, tc.n, 50)
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			o = open(t, dir, outbox.Config{SegmentBytes: 400})
			st := o.Stats()
			if st.Acked != tc.wantAcked || st.FirstUnacked != tc.wantAcked+1 || st.PendingRecords != uint64(tc.n)-tc.wantAcked {
				t.Fatalf("after reopen: got %+v, want acked %d of %d", st, tc.wantAcked, tc.n)
			}
			checkRecs(t, readAll(t, o, 0), int(tc.wantAcked)+1, tc.n, 50)
			if got, err := o.Read(1, 100); err != nil || (len(got) > 0 && got[0].Offset <= tc.wantAcked) {
				t.Fatalf("Read(1): got %d records (first %v), err %v; want none at or below %d", len(got), got, err, tc.wantAcked)
			}
			appendRecs(t, o, tc.n+1, tc.n+2, 50)
		})
	}
}

func TestAckRefused(t *testing.T) {
	o := open(t, t.TempDir(), outbox.Config{})
	appendRecs(t, o, 1, 3, 10)
	for _, upTo := range []uint64{4, 100} {
		if err := o.Ack(upTo); !errcode.Is(err, errcode.InvalidRequest) {
			t.Fatalf("Ack(%d) beyond the last record: got %v, want %s", upTo, err, errcode.InvalidRequest)
		}
	}
	if st := o.Stats(); st.Acked != 0 {
		t.Fatalf("refused acks moved acked to %d", st.Acked)
	}
}

// segFiles lists dir's segment file names.
func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	return names
}

func TestSegmentsRollAndAreDeletedWhenAcked(t *testing.T) {
	// 100-byte records make 116-byte frames: 4 fit in a 500-byte segment
	// after its 16-byte header, so records 1-4, 5-8, 9-12 and 13-14.
	dir := t.TempDir()
	o := open(t, dir, outbox.Config{SegmentBytes: 500})
	appendRecs(t, o, 1, 14, 100)
	want := []string{outbox.SegName(1), outbox.SegName(5), outbox.SegName(9), outbox.SegName(13)}
	if got := segFiles(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got segments %v, want %v", got, want)
	}
	cases := []struct {
		name string
		ack  uint64
		want []string
	}{
		{name: "inside the first segment", ack: 3, want: want},
		{name: "end of the first segment", ack: 4, want: want[1:]},
		{name: "past two segments", ack: 10, want: want[2:]},
		{name: "everything: the active segment stays", ack: 14, want: want[3:]},
	}
	for _, tc := range cases {
		if err := o.Ack(tc.ack); err != nil {
			t.Fatalf("%s: Ack(%d): %v", tc.name, tc.ack, err)
		}
		if got := segFiles(t, dir); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Fatalf("%s: got segments %v, want %v", tc.name, got, tc.want)
		}
		if st := o.Stats(); st.Segments != len(tc.want) {
			t.Fatalf("%s: Stats says %d segments, want %d", tc.name, st.Segments, len(tc.want))
		}
	}
	if st := o.Stats(); st.PendingBytes != 0 || st.PendingRecords != 0 || st.DiskBytes != outbox.SegHeaderSize+2*116 {
		t.Fatalf("all acked: got %+v, want nothing pending and one segment of 2 records on disk", st)
	}
}

func TestOutboxFull(t *testing.T) {
	const frame = outbox.FrameHeaderSize + 84 // records of 84 bytes
	o := open(t, t.TempDir(), outbox.Config{SegmentBytes: 1000, MaxBytes: 10 * frame})
	appendRecs(t, o, 1, 10, 84)
	for range 2 {
		_, err := o.Append(context.Background(), rec(11, 84))
		if !errcode.Is(err, errcode.OutboxFull) {
			t.Fatalf("Append past the limit: got %v, want %s", err, errcode.OutboxFull)
		}
	}
	if st := o.Stats(); st.PendingBytes != 10*frame || st.Next != 11 {
		t.Fatalf("after refusals: got %+v, want 10 frames pending and next 11", st)
	}
	if err := o.Ack(3); err != nil {
		t.Fatal(err)
	}
	appendRecs(t, o, 11, 13, 84)
	if _, err := o.Append(context.Background(), rec(14, 84)); !errcode.Is(err, errcode.OutboxFull) {
		t.Fatalf("Append once full again: got %v, want %s", err, errcode.OutboxFull)
	}
	checkRecs(t, readAll(t, o, 0), 4, 13, 84)
}

// TestRecordPastTheLimitAlone: a record larger than MaxBytes waits until
// everything before it is acknowledged, then goes in alone: refused even
// then, it could never be appended.
func TestRecordPastTheLimitAlone(t *testing.T) {
	o := open(t, t.TempDir(), outbox.Config{SegmentBytes: 1000, MaxBytes: 100})
	appendRecs(t, o, 1, 1, 20)
	if _, err := o.Append(context.Background(), rec(2, 200)); !errcode.Is(err, errcode.OutboxFull) {
		t.Fatalf("large Append behind a pending record: got %v, want %s", err, errcode.OutboxFull)
	}
	if err := o.Ack(1); err != nil {
		t.Fatal(err)
	}
	appendRecs(t, o, 2, 2, 200)
	if _, err := o.Append(context.Background(), rec(3, 20)); !errcode.Is(err, errcode.OutboxFull) {
		t.Fatalf("Append behind the large record: got %v, want %s", err, errcode.OutboxFull)
	}
	checkRecs(t, readAll(t, o, 0), 2, 2, 200)
}

func TestRecordTooLarge(t *testing.T) {
	o := open(t, t.TempDir(), outbox.Config{SegmentBytes: 1024})
	largest := 1024 - outbox.SegHeaderSize - outbox.FrameHeaderSize
	if _, err := o.Append(context.Background(), rec(1, largest+1)); !errcode.Is(err, errcode.PayloadTooLarge) {
		t.Fatalf("Append of %d bytes: got %v, want %s", largest+1, err, errcode.PayloadTooLarge)
	}
	appendRecs(t, o, 1, 3, largest) // one segment each
	checkRecs(t, readAll(t, o, 0), 1, 3, largest)
	if st := o.Stats(); st.Segments != 3 {
		t.Fatalf("got %d segments, want 3", st.Segments)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	o := open(t, dir, outbox.Config{SegmentBytes: 300})
	appendRecs(t, o, 1, 20, 40)
	if err := o.Ack(5); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		from     uint64
		limit    int
		from2    int // want records from2..to2
		to2      int
		wantNone bool
	}{
		{name: "from zero starts after the ack", from: 0, limit: 3, from2: 6, to2: 8},
		{name: "from an acked offset", from: 2, limit: 2, from2: 6, to2: 7},
		{name: "across segments", from: 7, limit: 10, from2: 7, to2: 16},
		{name: "limit larger than what there is", from: 18, limit: 100, from2: 18, to2: 20},
		{name: "the last record", from: 20, limit: 1, from2: 20, to2: 20},
		{name: "not written yet", from: 21, limit: 5, wantNone: true},
		{name: "far beyond", from: 1 << 40, limit: 5, wantNone: true},
		{name: "zero limit", from: 6, limit: 0, wantNone: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := o.Read(tc.from, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantNone {
				if len(got) != 0 {
					t.Fatalf("got %d records, want none", len(got))
				}
				return
			}
			checkRecs(t, got, tc.from2, tc.to2, 40)
		})
	}
}

func TestWait(t *testing.T) {
	o := open(t, t.TempDir(), outbox.Config{})
	appendRecs(t, o, 1, 2, 10)
	if err := o.Wait(context.Background(), 1); err != nil {
		t.Fatalf("Wait(1) with record 2 there: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := o.Wait(ctx, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait(2) with a cancelled context: got %v, want %v", err, context.Canceled)
	}
	woke := make(chan error, 1)
	go func() { woke <- o.Wait(context.Background(), 2) }()
	appendRecs(t, o, 3, 3, 10)
	if err := <-woke; err != nil {
		t.Fatalf("Wait(2) woken by record 3: %v", err)
	}
	go func() { woke <- o.Wait(context.Background(), 3) }()
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; !errors.Is(err, outbox.ErrClosed) {
		t.Fatalf("Wait across Close: got %v, want ErrClosed", err)
	}
}

func TestClosed(t *testing.T) {
	dir := t.TempDir()
	o := open(t, dir, outbox.Config{})
	appendRecs(t, o, 1, 1, 10)
	if _, err := outbox.Open(dir, outbox.Config{Logger: quiet}); err == nil {
		t.Fatal("a second Open of a directory in use succeeded")
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := o.Append(context.Background(), []byte("x")); !errors.Is(err, outbox.ErrClosed) {
		t.Fatalf("Append after Close: got %v, want ErrClosed", err)
	}
	if _, err := o.Read(1, 1); !errors.Is(err, outbox.ErrClosed) {
		t.Fatalf("Read after Close: got %v, want ErrClosed", err)
	}
	if err := o.Ack(1); !errors.Is(err, outbox.ErrClosed) {
		t.Fatalf("Ack after Close: got %v, want ErrClosed", err)
	}
	o2 := open(t, dir, outbox.Config{}) // the lock is released
	checkRecs(t, readAll(t, o2, 0), 1, 1, 10)
	if _, err := os.Stat(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatal(err)
	}
}

// TestSyncDelay: with a SyncDelay an Append returns before its fsync,
// which the writer makes within the delay; an Ack of records not yet
// durable syncs them first, and fails (acknowledging nothing) when it
// cannot.
func TestSyncDelay(t *testing.T) {
	t.Run("the writer syncs after the delay", func(t *testing.T) {
		o := open(t, t.TempDir(), outbox.Config{SyncDelay: 20 * time.Millisecond})
		appendRecs(t, o, 1, 10, 40)
		deadline := time.Now().Add(10 * time.Second)
		for o.Stats().Durable < 10 {
			if time.Now().After(deadline) {
				t.Fatalf("durable: got %d after 10 s, want 10", o.Stats().Durable)
			}
			time.Sleep(5 * time.Millisecond)
		}
		checkRecs(t, readAll(t, o, 1), 1, 10, 40)
	})
	t.Run("an ack syncs what it covers", func(t *testing.T) {
		o := open(t, t.TempDir(), outbox.Config{SyncDelay: time.Hour})
		var syncs atomic.Int32
		outbox.SetSync(o, func(f *os.File) error { syncs.Add(1); return f.Sync() })
		appendRecs(t, o, 1, 5, 40)
		if st := o.Stats(); st.Durable != 0 || syncs.Load() != 0 {
			t.Fatalf("before the ack: got durable %d after %d fsyncs, want 0 and none", st.Durable, syncs.Load())
		}
		if err := o.Ack(3); err != nil {
			t.Fatal(err)
		}
		if st := o.Stats(); st.Durable != 5 || st.Acked != 3 || syncs.Load() != 1 {
			t.Fatalf("after the ack: got durable %d, acked %d, %d fsyncs; want 5, 3, 1", st.Durable, st.Acked, syncs.Load())
		}
	})
	t.Run("an ack that cannot sync fails", func(t *testing.T) {
		dir := t.TempDir()
		o := open(t, dir, outbox.Config{SyncDelay: time.Hour})
		appendRecs(t, o, 1, 5, 40)
		outbox.SetSync(o, func(*os.File) error { return errors.New("disk gone") })
		if err := o.Ack(3); !errcode.Is(err, errcode.StoreWriteFailed) {
			t.Fatalf("got %v, want %s", err, errcode.StoreWriteFailed)
		}
		if st := o.Stats(); st.Acked != 0 {
			t.Fatalf("acked: got %d, want 0", st.Acked)
		}
	})
	t.Run("close syncs", func(t *testing.T) {
		dir := t.TempDir()
		o := open(t, dir, outbox.Config{SyncDelay: time.Hour})
		var syncs atomic.Int32
		outbox.SetSync(o, func(f *os.File) error { syncs.Add(1); return f.Sync() })
		appendRecs(t, o, 1, 5, 40)
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		if syncs.Load() != 1 {
			t.Fatalf("fsyncs at close: got %d, want 1", syncs.Load())
		}
	})
}

// TestReadFromMemoryAndFile: the last records are read from the outbox's
// memory, older ones from the file; both give the same records, also
// across a reopen (which starts with nothing in memory).
func TestReadFromMemoryAndFile(t *testing.T) {
	dir := t.TempDir()
	o := open(t, dir, outbox.Config{})
	appendRecs(t, o, 1, 8, 100<<10) // more than the memory holds
	for _, from := range []int{1, 4, 7, 8} {
		checkRecs(t, readAll(t, o, uint64(from)), from, 8, 100<<10)
	}
	if err := o.Ack(7); err != nil {
		t.Fatal(err)
	}
	checkRecs(t, readAll(t, o, 1), 8, 8, 100<<10)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	o = open(t, dir, outbox.Config{})
	checkRecs(t, readAll(t, o, 1), 8, 8, 100<<10)
	appendRecs(t, o, 9, 10, 100<<10)
	checkRecs(t, readAll(t, o, 8), 8, 10, 100<<10)
}
