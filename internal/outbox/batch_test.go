package outbox_test

import (
	"context"
	"os"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/outbox"
)

// TestAppendBatch: a batch is appended in order at consecutive offsets,
// in one fsync when it fits its segment; when a record of it is refused,
// none after it is appended (even one that would fit), so what is
// appended is a prefix.
func TestAppendBatch(t *testing.T) {
	const frame = outbox.FrameHeaderSize + 84
	largest := 4096 - outbox.SegHeaderSize - outbox.FrameHeaderSize
	tests := []struct {
		name     string
		cfg      outbox.Config
		before   int   // records of 84 bytes appended first
		sizes    []int // the batch's record sizes
		failSync bool
		wantN    int
		wantCode errcode.Code // of the error, "" for none
		// wantSyncs is the batch's fsyncs (-1: not checked).
		wantSyncs int
	}{
		{name: "all in one fsync", cfg: outbox.Config{SegmentBytes: 4096}, sizes: []int{84, 84, 84, 84, 84}, wantN: 5, wantSyncs: 1},
		{name: "after earlier records", cfg: outbox.Config{SegmentBytes: 4096}, before: 3, sizes: []int{84, 84}, wantN: 2, wantSyncs: 1},
		{name: "rolls a segment", cfg: outbox.Config{SegmentBytes: 400}, sizes: []int{84, 84, 84, 84, 84, 84}, wantN: 6, wantSyncs: -1},
		{name: "full mid-batch: the rest waits too", cfg: outbox.Config{SegmentBytes: 4096, MaxBytes: 4*frame + outbox.FrameHeaderSize + 14}, before: 2,
			sizes: []int{84, 84, 84, 14}, wantN: 2, wantCode: errcode.OutboxFull, wantSyncs: 1},
		{name: "too large mid-batch: the prefix goes in", cfg: outbox.Config{SegmentBytes: 4096}, sizes: []int{84, largest + 1, 84},
			wantN: 1, wantCode: errcode.PayloadTooLarge, wantSyncs: 1},
		{name: "too large first: nothing", cfg: outbox.Config{SegmentBytes: 4096}, sizes: []int{largest + 1, 84}, wantCode: errcode.PayloadTooLarge},
		{name: "failing disk: nothing", cfg: outbox.Config{SegmentBytes: 4096}, before: 1, sizes: []int{84, 84}, failSync: true,
			wantCode: errcode.StoreWriteFailed, wantSyncs: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := open(t, t.TempDir(), tt.cfg)
			appendRecs(t, o, 1, tt.before, 84)
			if tt.failSync {
				outbox.SetSync(o, func(*os.File) error { return os.ErrPermission })
			}
			recs := make([][]byte, len(tt.sizes))
			for i, size := range tt.sizes {
				recs[i] = rec(tt.before+1+i, size)
			}
			syncs := o.Stats().Syncs
			n, first, err := o.AppendBatch(context.Background(), recs)
			if n != tt.wantN {
				t.Fatalf("got %d appended, want %d (err %v)", n, tt.wantN, err)
			}
			if tt.wantCode == "" && err != nil || tt.wantCode != "" && !errcode.Is(err, tt.wantCode) {
				t.Fatalf("got error %v, want code %q", err, tt.wantCode)
			}
			if n > 0 && first != uint64(tt.before+1) {
				t.Fatalf("got first offset %d, want %d", first, tt.before+1)
			}
			if got := o.Stats().Syncs - syncs; tt.wantSyncs >= 0 && got != uint64(tt.wantSyncs) {
				t.Errorf("got %d fsyncs for the batch, want %d", got, tt.wantSyncs)
			}
			if st := o.Stats(); st.Next != uint64(tt.before+n+1) {
				t.Fatalf("got next offset %d, want %d", st.Next, tt.before+n+1)
			}
			got := readAll(t, o, 0)
			for i := tt.before; i < tt.before+n; i++ {
				if string(got[i].Data) != string(recs[i-tt.before]) {
					t.Fatalf("record %d: got %.20q, want %.20q", i+1, got[i].Data, recs[i-tt.before])
				}
			}
		})
	}
}
