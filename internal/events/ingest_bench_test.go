package events_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// ingestSessions is how many sessions produce concurrently; every
// subscriber subscribes to all of them, so it receives every event.
const ingestSessions = 4

// ingestWindow bounds each producer's unacknowledged ops.
const ingestWindow = 1024

// BenchmarkIngest measures durable events/s through the real writer
// (group commit into SQLite, then publish) with 0, 10 and 100 live
// subscribers that each receive every event. One op is one message.chunk
// event of about 200 bytes; b.N is the number of events. The clock stops
// only when every subscriber has received everything, so fan-out is in
// the figure. A subscriber the hub cuts off for lagging is counted in the
// "lagged" metric (it would reconnect from the log in the daemon).
//
// baseline=raw-sqlite is the same rows inserted by database/sql alone
// (benchRawInsert): the ratio of subs=10 to it is what the writer, the
// hub and the subscribers cost on top of SQLite; raw-sqlite-nockpt is
// the same without any checkpoint.
func BenchmarkIngest(b *testing.B) {
	b.Run("baseline=raw-sqlite", func(b *testing.B) { benchRawInsert(b, true) })
	b.Run("baseline=raw-sqlite-nockpt", func(b *testing.B) { benchRawInsert(b, false) })
	for _, subs := range []int{0, 10, 100} {
		b.Run(fmt.Sprintf("subs=%d", subs), func(b *testing.B) {
			benchIngest(b, subs, 100, statelessOp(chunkOp))
		})
	}
}

// BenchmarkIngestTranscript is BenchmarkIngest/subs=10 with the
// transcript write a real chunk costs, in the same transaction as its
// event, as the session actor does: the first chunk of a message starts
// the message under an id reserved before submission (store.NewMessageID,
// store.StartMessage, which folds the message it closes), every further
// chunk appends a row to it (store.AppendChunk). The
// sub-benchmarks differ only in how long a message grows before the next
// one starts (1 kB, 100 kB, 1 MB of text): a chunk must cost the same
// whatever the length of its message.
//
// path=latest-read is the op main had before (AppendMessageChunk, which
// reads the session's latest message for every chunk, and a map payload),
// measured in the same run as the baseline of the ratio.
func BenchmarkIngestTranscript(b *testing.B) {
	for _, path := range []struct {
		name string
		op   opMaker
	}{{"path=append-chunk", transcriptChunkOps}, {"path=latest-read", statelessOp(latestReadChunkOp)}} {
		for _, size := range []struct {
			name  string
			bytes int
		}{{"len=1kB", 1 << 10}, {"len=100kB", 100 << 10}, {"len=1MB", 1 << 20}} {
			b.Run(path.name+"/"+size.name, func(b *testing.B) {
				benchIngest(b, 10, max(1, size.bytes/len(chunkText)), path.op)
			})
		}
	}
}

// transcriptChunkOps makes one session's chunk ops as its actor does: the
// actor owns the open message, so only a message's first chunk inserts a
// row of messages (message.added naming the message it closes); the others
// name it. The rows are the events' projections.
func transcriptChunkOps(l *benchLog, sid string) func(pid string, k int) events.Apply {
	var open int64
	return func(pid string, k int) events.Apply {
		if k == 0 {
			id, idErr := l.st.NewMessageID(context.Background())
			closes := open
			open = id
			return func(_ *store.Store, emit events.Emit) error {
				if idErr != nil {
					return idErr
				}
				emit(events.Draft{SessionID: sid, Type: events.MessageAdded, PromptID: pid, Payload: &session.MessageAddedData{
					EventCommon: session.EventCommon{TaskID: l.taskID}, MessageID: id, Role: session.RoleAgent, Text: chunkText,
					CreatedAt: time.Now().UTC(), Closes: closes}})
				return nil
			}
		}
		id := open
		return func(_ *store.Store, emit events.Emit) error {
			emit(events.Draft{SessionID: sid, Type: events.MessageChunk, PromptID: pid, Payload: &session.MessageChunkData{
				EventCommon: session.EventCommon{TaskID: l.taskID}, MessageID: id, Role: session.RoleAgent, Text: chunkText}})
			return nil
		}
	}
}

// latestReadChunkOp is the chunk op as it was before the actor owned the
// open message: the store looks up the session's latest message per chunk.
func latestReadChunkOp(l *benchLog, sid, pid string, _ int64) events.Apply {
	return func(tx *store.Store, emit events.Emit) error {
		m, started, err := tx.AppendMessageChunk(context.Background(), sid, pid, session.RoleAgent, chunkText)
		if err != nil {
			return err
		}
		typ := events.MessageChunk
		if started {
			typ = events.MessageAdded
		}
		emit(events.Draft{SessionID: sid, Type: typ, PromptID: pid, Payload: map[string]any{
			"taskId": l.taskID, "messageId": m.ID, "role": "agent", "text": chunkText}})
		return nil
	}
}

type opFunc func(l *benchLog, sid, promptID string, sentAt int64) events.Apply

// opMaker makes the ops of one session's producer; k is an op's index
// within its prompt (0 starts a message).
type opMaker func(l *benchLog, sid string) func(promptID string, k int) events.Apply

// statelessOp adapts an op that needs no per-session state.
func statelessOp(f opFunc) opMaker {
	return func(l *benchLog, sid string) func(string, int) events.Apply {
		return func(pid string, _ int) events.Apply { return f(l, sid, pid, 0) }
	}
}

// benchIngest runs b.N ops over ingestSessions sessions with subs
// subscribers each; every perPrompt ops of a session start a new prompt
// (so a new transcript message).
func benchIngest(b *testing.B, subs, perPrompt int, mkOps opMaker) {
	l := openBenchLog(b, ingestSessions)
	per := make([]int, ingestSessions) // events per session
	for i := range b.N {
		per[i%ingestSessions]++
	}

	var (
		recv   sync.WaitGroup
		lagged atomic.Int64
	)
	for range subs {
		for si, sid := range l.sessions {
			sub, err := l.hub.Subscribe(sid)
			if err != nil {
				b.Fatal(err)
			}
			recv.Add(1)
			go func(want int) {
				defer recv.Done()
				defer sub.Close()
				n := 0
				for n < want {
					select {
					case <-sub.Ready():
						for _, b := range sub.Take(nil) {
							n += len(b)
						}
					case <-sub.Done():
						// Take what was queued before the cut, then give up.
						for _, b := range sub.Take(nil) {
							n += len(b)
						}
						if n < want {
							lagged.Add(1)
						}
						return
					}
				}
			}(per[si])
		}
	}

	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuClock(b)
	var prod sync.WaitGroup
	errs := make([]error, ingestSessions)
	for si, sid := range l.sessions {
		prod.Add(1)
		go func() {
			defer prod.Done()
			wd := newWindow(ingestWindow)
			op := mkOps(l, sid)
			for i := range per[si] {
				wd.submit(l.w, op(promptID(si*1_000_000+i/perPrompt), i%perPrompt))
			}
			errs[si] = wd.drain()
		}()
	}
	prod.Wait()
	recv.Wait()
	b.StopTimer()
	reportCPU(b, cpu0)
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/sec, "events/s")
	b.ReportMetric(float64(b.N*subs)/sec, "deliveries/s")
	b.ReportMetric(float64(lagged.Load()), "lagged")
	if evs, batches := l.w.Stats(); batches > 0 {
		b.ReportMetric(float64(evs)/float64(batches), "events/batch")
	}
}
