package events_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

func ev(sid string, seq int64, global bool) store.Event {
	return store.Event{ID: seq, SessionID: sid, Seq: seq, Type: events.MessageChunk, Global: global}
}

// A subscriber that does not read is cut off when its queue overflows;
// Publish never blocks and the other subscribers get everything.
func TestHubCutsOffStalledSubscriberOnly(t *testing.T) {
	h := events.NewHub(events.HubConfig{Buffer: 4})
	stalled, err := h.Subscribe("s1")
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := h.Subscribe("s1")
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for i := int64(1); i <= 10; i++ {
		h.Publish([]store.Event{ev("s1", i, false)}) // must not block
		<-healthy.Ready()
		got = append(got, healthy.Take(nil)[0][0].Seq)
	}
	if len(got) != 10 || got[9] != 10 {
		t.Fatalf("healthy subscriber got %v", got)
	}
	select {
	case <-stalled.Done():
	default:
		t.Fatal("stalled subscriber was not cut off")
	}
	if !stalled.Lagged() || healthy.Lagged() {
		t.Fatalf("Lagged: stalled %v, healthy %v", stalled.Lagged(), healthy.Lagged())
	}
	// What was queued before the cut is still there, in order.
	queued := stalled.Take(nil)
	if len(queued) != 4 {
		t.Fatalf("stalled queue: got %d batches, want 4", len(queued))
	}
	for i, b := range queued {
		if len(b) != 1 || b[0].Seq != int64(i+1) {
			t.Fatalf("stalled queue: got %d events from seq %d, want seq %d alone", len(b), b[0].Seq, i+1)
		}
	}
	if more := stalled.Take(nil); len(more) != 0 {
		t.Fatalf("stalled queue after a take: got %d batches, want none", len(more))
	}
	if n := h.Count(); n != 1 {
		t.Fatalf("Count = %d after the cut, want 1", n)
	}
}

// Session subscribers see their session only; global subscribers see
// global events of every session.
func TestHubRouting(t *testing.T) {
	h := events.NewHub(events.HubConfig{})
	s1, _ := h.Subscribe("s1")
	s2, _ := h.Subscribe("s2")
	g, _ := h.Subscribe("")
	h.Publish([]store.Event{ev("s1", 1, false), ev("s2", 1, true)})
	q1, q2, qg := s1.Take(nil), s2.Take(nil), g.Take(nil)
	if len(q1) != 1 || len(q2) != 1 || len(qg) != 1 {
		t.Fatalf("queued: s1 %d, s2 %d, global %d; want 1 each", len(q1), len(q2), len(qg))
	}
	if b := qg[0]; len(b) != 1 || b[0].SessionID != "s2" {
		t.Fatalf("global subscriber got %+v", b)
	}
}

func TestHubLimits(t *testing.T) {
	h := events.NewHub(events.HubConfig{MaxPerSession: 1, MaxTotal: 2})
	a, err := h.Subscribe("s1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Subscribe("s1"); !isCode(err, errcode.TooManySubscribers) {
		t.Fatalf("second subscriber of s1: %v", err)
	}
	if _, err := h.Subscribe("s2"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Subscribe(""); !isCode(err, errcode.TooManySubscribers) {
		t.Fatalf("third subscriber: %v", err)
	}
	a.Close()
	a.Close() // idempotent
	if _, err := h.Subscribe("s1"); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}

func isCode(err error, c errcode.Code) bool {
	var e *errcode.Error
	return errors.As(err, &e) && e.Code == c
}

// The writer numbers events gaplessly per session, commits them before a
// subscriber can see them, and a failing op neither sinks the ops batched
// with it nor consumes numbers.
func TestWriterNumbersCommitsThenPublishes(t *testing.T) {
	l := openBenchLog(t, 2)
	ctx := context.Background()
	sub, err := l.hub.Subscribe(l.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var ps []*events.Pending
	for i := range 6 {
		sid := l.sessions[i%2]
		if i == 3 {
			ps = append(ps, l.w.Submit(func(tx *store.Store, emit events.Emit) error {
				emit(events.Draft{SessionID: sid, Type: events.MessageChunk})
				return boom
			}))
			continue
		}
		ps = append(ps, l.w.Submit(chunkOp(l, sid, "p", 0)))
	}
	for i, p := range ps {
		evs, err := p.Wait(ctx)
		if i == 3 {
			if !errors.Is(err, boom) || len(evs) != 0 {
				t.Fatalf("failing op: %v, %d events", err, len(evs))
			}
			continue
		}
		if err != nil || len(evs) != 1 {
			t.Fatalf("op %d: %v, %d events", i, err, len(evs))
		}
	}
	var queued []*store.Event // the batch being read
	for want := int64(1); want <= 3; want++ {
		if len(queued) == 0 {
			select {
			case <-sub.Ready():
				for _, b := range sub.Take(nil) {
					queued = append(queued, b...)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("seq %d never published", want)
			}
		}
		e := queued[0]
		queued = queued[1:]
		{
			if e.Seq != want {
				t.Fatalf("published seq %d, want %d", e.Seq, want)
			}
			// Commit before publish: what a subscriber sees is in the log.
			got, err := l.st.ListSessionEvents(ctx, e.SessionID, e.Seq-1, 1)
			if err != nil || len(got) != 1 || got[0].ID != e.ID {
				t.Fatalf("event %d not in the log when published: %v %v", e.Seq, got, err)
			}
		}
	}
	// Session 2 got ops 1 and 5 (op 3 failed): seqs 1 and 2, no hole.
	got, err := l.st.ListSessionEvents(ctx, l.sessions[1], 0, 10)
	if err != nil || len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 {
		t.Fatalf("session 2 log: %+v, %v", got, err)
	}
}

func TestWriterClosed(t *testing.T) {
	l := openBenchLog(t, 1)
	l.w.Close()
	if _, err := l.w.Do(context.Background(), chunkOp(l, l.sessions[0], "p", 0)); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
}
