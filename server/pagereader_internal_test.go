package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// logSource is a source over an in-memory log of event numbers, for the
// page reader: it records where each read started.
type logSource struct {
	nums     []int64
	isDense  bool
	failFrom int64 // a read after this number fails (0: never)

	mu     sync.Mutex
	starts []int64
}

func (l *logSource) page(_ context.Context, after int64, limit int) ([]store.Event, error) {
	l.mu.Lock()
	l.starts = append(l.starts, after)
	l.mu.Unlock()
	if l.failFrom > 0 && after >= l.failFrom {
		return nil, errors.New("disk on fire")
	}
	var page []store.Event
	for _, n := range l.nums {
		if n > after && len(page) < limit {
			page = append(page, store.Event{Seq: n})
		}
	}
	return page, nil
}

func (l *logSource) num(e store.Event) int64 { return e.Seq }
func (l *logSource) dense() bool             { return l.isDense }

func (l *logSource) check(context.Context) error                { return nil }
func (l *logSource) subscribe() (*events.Subscription, error)   { return nil, nil }
func (l *logSource) position(context.Context) (position, error) { return position{}, nil }
func (l *logSource) list(ctx context.Context, after int64, limit int) ([]store.Event, error) {
	return l.page(ctx, after, limit)
}
func (l *logSource) keep(store.Event) bool { return true }
func (l *logSource) last(store.Event) bool { return false }

// TestPageReaderReadsEveryEventOnceInOrder checks the replay's read-ahead
// (sse.go, pageReader): whether it foresees the next pages (dense logs) or
// waits for each (sparse ones), and also when the foresight is wrong (a
// hole in a "dense" log), the pages it hands out are the log after the
// cursor, each event once and in order; it starts no read at or past
// head; and a failed read ends it with the error.
func TestPageReaderReadsEveryEventOnceInOrder(t *testing.T) {
	seq := func(from, to int64) []int64 {
		var out []int64
		for n := from; n <= to; n++ {
			out = append(out, n)
		}
		return out
	}
	holey := slices.Concat(seq(1, replayPage+10), seq(replayPage+20, 3*replayPage+5))
	sparse := func() []int64 {
		var out []int64
		for n := int64(1); n <= 3*replayPage; n++ {
			out = append(out, 3*n)
		}
		return out
	}()
	for _, tc := range []struct {
		name     string
		nums     []int64
		dense    bool
		after    int64
		head     int64
		failFrom int64
		wantErr  bool
	}{
		{name: "dense, several pages", nums: seq(1, 3*replayPage+7), dense: true, head: 3*replayPage + 7},
		{name: "dense, pages end at head exactly", nums: seq(1, 2*replayPage), dense: true, head: 2 * replayPage},
		{name: "dense, from a cursor", nums: seq(1, 3*replayPage), dense: true, after: replayPage / 2, head: 3 * replayPage},
		{name: "dense, head below the log's end", nums: seq(1, 3*replayPage), dense: true, head: replayPage + 1},
		{name: "dense with a hole", nums: holey, dense: true, head: holey[len(holey)-1]},
		{name: "sparse", nums: sparse, head: sparse[len(sparse)-1]},
		{name: "empty", dense: true},
		{name: "a read fails", nums: seq(1, 3*replayPage), dense: true, head: 3 * replayPage, failFrom: replayPage, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &logSource{nums: tc.nums, isDense: tc.dense, failFrom: tc.failFrom}
			r := readAhead(context.Background(), src, tc.after, tc.head)
			var got []int64
			var err error
			for {
				var page []store.Event
				if page, err = r.next(); err != nil || len(page) == 0 {
					break
				}
				for _, e := range page {
					got = append(got, e.Seq)
				}
				if got[len(got)-1] >= tc.head {
					break // replay stops at head
				}
			}
			r.stop()
			if tc.wantErr {
				if err == nil {
					t.Fatal("got no error, want the failed read's")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []int64
			for _, n := range tc.nums {
				if n > tc.after {
					want = append(want, n)
				}
			}
			// Pages are whole: the last one may run past head.
			if len(got) < len(want) {
				want = want[:len(got)]
			}
			if !slices.Equal(got, want) {
				t.Fatalf("got %d events (%v…), want %d (%v…)", len(got), head(got), len(want), head(want))
			}
			if len(got) > 0 && got[len(got)-1] < min(tc.head, tc.nums[len(tc.nums)-1]) {
				t.Fatalf("stopped at %d, want at least head %d", got[len(got)-1], tc.head)
			}
			for _, s := range src.starts {
				if tc.head > 0 && s >= tc.head {
					t.Errorf("a read started at %d, at or past head %d", s, tc.head)
				}
			}
		})
	}
}

func head(s []int64) []int64 { return s[:min(len(s), 5)] }
