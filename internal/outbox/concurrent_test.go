package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/outbox"
)

func TestConcurrentAppenders(t *testing.T) {
	cases := []struct {
		name       string
		goroutines int
		each       int
		segment    int64
	}{
		{name: "8 x 1000, rolling segments", goroutines: 8, each: 1000, segment: 64 << 10},
		{name: "32 x 100, a segment per few records", goroutines: 32, each: 100, segment: 1024},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := open(t, dir, outbox.Config{SegmentBytes: tc.segment})
			total := tc.goroutines * tc.each
			got := make([]string, total+1) // by offset
			var mu sync.Mutex
			var wg sync.WaitGroup
			errs := make(chan error, tc.goroutines)
			for g := range tc.goroutines {
				wg.Go(func() {
					for i := range tc.each {
						data := fmt.Sprintf("g%02d-i%04d", g, i)
						off, err := o.Append(context.Background(), []byte(data))
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						if off == 0 || off > uint64(total) || got[off] != "" {
							mu.Unlock()
							errs <- fmt.Errorf("%s got offset %d, out of range or taken", data, off)
							return
						}
						got[off] = data
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			check := func(o *outbox.Outbox) {
				t.Helper()
				recs := readAll(t, o, 0)
				if len(recs) != total {
					t.Fatalf("read back %d records, want %d", len(recs), total)
				}
				for k, r := range recs {
					if r.Offset != uint64(k+1) || string(r.Data) != got[k+1] {
						t.Fatalf("record %d: got offset %d %q, want %d %q", k, r.Offset, r.Data, k+1, got[k+1])
					}
				}
			}
			check(o)
			st := o.Stats()
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d records in %d group commits", total, st.Syncs)
			check(open(t, dir, outbox.Config{SegmentBytes: tc.segment}))
		})
	}
}

// failingSync lets skip syncs through, fails the n after them, then syncs
// for real.
func failingSync(skip, n int) func(*os.File) error {
	var calls atomic.Int32
	return func(f *os.File) error {
		if c := int(calls.Add(1)); c > skip && c <= skip+n {
			return errors.New("injected fsync failure")
		}
		return f.Sync()
	}
}

func TestWriteFailure(t *testing.T) {
	cases := []struct {
		name string
		// fails is how many syncs fail: 1 fails the write, whose undo then
		// succeeds; 2 fails the undo too, which breaks the outbox.
		fails      int
		wantBroken bool
	}{
		{name: "failed sync undone", fails: 1},
		{name: "undo fails too", fails: 2, wantBroken: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := open(t, dir, outbox.Config{})
			appendRecs(t, o, 1, 3, 40)
			outbox.SetSync(o, failingSync(0, tc.fails))
			if _, err := o.Append(context.Background(), rec(4, 40)); !errcode.Is(err, errcode.StoreWriteFailed) {
				t.Fatalf("Append with a failing disk: got %v, want %s", err, errcode.StoreWriteFailed)
			}
			off, err := o.Append(context.Background(), rec(4, 40))
			switch {
			case tc.wantBroken && !errcode.Is(err, errcode.StoreWriteFailed):
				t.Fatalf("Append on a broken outbox: got %d, %v; want %s", off, err, errcode.StoreWriteFailed)
			case !tc.wantBroken && (err != nil || off != 4):
				t.Fatalf("Append after an undone failure: got %d, %v; want offset 4", off, err)
			}
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			o = open(t, dir, outbox.Config{})
			if tc.wantBroken {
				// The undo's truncation took, so record 4 is not there,
				// and the reopened outbox goes on at 4.
				checkRecs(t, readAll(t, o, 0), 1, 3, 40)
				appendRecs(t, o, 4, 4, 40)
			}
			checkRecs(t, readAll(t, o, 0), 1, 4, 40)
		})
	}
}

func TestAppendContext(t *testing.T) {
	o := open(t, t.TempDir(), outbox.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if off, err := o.Append(ctx, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context: got %d, %v; want %v", off, err, context.Canceled)
	}
	if st := o.Stats(); st.Next != 1 {
		t.Fatalf("got next %d after a cancelled Append, want 1", st.Next)
	}
	appendRecs(t, o, 1, 1, 10)
}

// TestRollFailure: when a new segment's directory entry cannot be synced,
// its file may exist; the active segment must then take no more records,
// even ones that would fit, or the two segments would overlap.
func TestRollFailure(t *testing.T) {
	// 100-byte records: 2 frames fill a 300-byte segment; a 30-byte one
	// would still fit after them.
	dir := t.TempDir()
	o := open(t, dir, outbox.Config{SegmentBytes: 300})
	appendRecs(t, o, 1, 2, 100)
	outbox.SetSync(o, failingSync(1, 1)) // the new file's sync passes, the directory's fails
	if _, err := o.Append(context.Background(), rec(3, 100)); !errcode.Is(err, errcode.StoreWriteFailed) {
		t.Fatalf("Append that rolls onto a failing disk: got %v, want %s", err, errcode.StoreWriteFailed)
	}
	appendRecs(t, o, 3, 3, 30)
	want := outbox.SegName(1) + " " + outbox.SegName(3)
	if got := strings.Join(segFiles(t, dir), " "); got != want {
		t.Fatalf("got segments %s, want %s", got, want)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	o = open(t, dir, outbox.Config{SegmentBytes: 300})
	recs := readAll(t, o, 0)
	checkRecs(t, recs[:2], 1, 2, 100)
	checkRecs(t, recs[2:], 3, 3, 30)
}
