package events_test

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// benchLog is a real event log on a SQLite file: store, hub and writer
// wired as cmd/tetherd does, plus sessions to write into.
type benchLog struct {
	st       *store.Store
	hub      *events.Hub
	w        *events.Writer
	taskID   string
	sessions []string
	// path is the database file (the raw-insert baseline opens it too).
	path string
}

// openBenchLog opens a fresh database in tb.TempDir() and creates
// nSessions sessions through the writer (as the session manager does).
// The hub allows many subscribers per session because the benchmarks put
// up to 100 subscribers on every session; the queue length stays the
// daemon's default.
func openBenchLog(tb testing.TB, nSessions int) *benchLog {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "tether.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	l := newLog(tb, st, nSessions)
	l.path = path
	return l
}

// newLog starts a writer on st and makes nSessions sessions in one task;
// the writer and st close when tb ends.
func newLog(tb testing.TB, st *store.Store, nSessions int) *benchLog {
	tb.Helper()
	ctx := context.Background()
	hub := events.NewHub(events.HubConfig{MaxPerSession: 1024, MaxTotal: 1 << 16})
	w, err := events.NewWriter(ctx, st, hub, events.WriterConfig{})
	if err != nil {
		tb.Fatalf("writer: %v", err)
	}
	l := &benchLog{st: st, hub: hub, w: w}
	tb.Cleanup(func() {
		w.Close()
		_ = st.Close()
	})
	_, err = w.Do(ctx, func(tx *store.Store, emit events.Emit) error {
		task, err := tx.CreateTask(ctx, session.Task{Title: "bench", Workspace: "/"})
		if err != nil {
			return err
		}
		l.taskID = task.ID
		for range nSessions {
			s, err := tx.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "bench", Cwd: "/"}, session.Executor{})
			if err != nil {
				return err
			}
			l.sessions = append(l.sessions, s.ID)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("create sessions: %v", err)
	}
	return l
}

// chunkText makes a message.chunk payload of about 200 bytes once
// sessionId, promptId, taskId and messageId are added, the size of a
// typical streamed agent token run.
var chunkText = strings.Repeat("streamed agent text ", 4)[:72]

// chunkOp is the op an agent's message chunk turns into, minus the
// transcript row: one message.chunk event with the typed payload the
// session actor emits, in a type of its own (eventOnlyChunk) that the
// writer does not project, so no message row is needed; BenchmarkIngestTranscript
// measures chunks with their rows. sentAt (unix ns), when set, lets a
// subscriber measure publish→receive latency.
func chunkOp(l *benchLog, sid, promptID string, sentAt int64) events.Apply {
	return func(tx *store.Store, emit events.Emit) error {
		d := events.Draft{SessionID: sid, Type: events.MessageChunk, PromptID: promptID}
		c := session.MessageChunkData{EventCommon: session.EventCommon{TaskID: l.taskID}, MessageID: 42, Role: session.RoleAgent, Text: chunkText}
		if sentAt != 0 {
			d.Payload = &stampedChunk{MessageChunkData: c, SentAt: sentAt}
		} else {
			d.Payload = &eventOnlyChunk{c}
		}
		emit(d)
		return nil
	}
}

// stampedChunk is a message.chunk payload carrying the time its op was
// submitted, for BenchmarkLatency.
type stampedChunk struct {
	session.MessageChunkData
	SentAt int64 `json:"sentAt"`
}

// eventOnlyChunk is a message.chunk payload the writer does not project
// (its projection is for *session.MessageChunkData alone).
type eventOnlyChunk struct{ session.MessageChunkData }

// promptID is a UUID-sized prompt id, as the daemon assigns them.
func promptID(i int) string { return "0b6d8e0c-1f8c-4bb0-9a57-" + strconv.FormatInt(1e11+int64(i), 10) }

// window submits ops without waiting for each (as session actors do) but
// bounds how many are in flight, like a producer that eventually needs
// its writes acknowledged.
type window struct {
	ring []*events.Pending
	n    int
	err  error
}

func newWindow(size int) *window { return &window{ring: make([]*events.Pending, size)} }

func (wd *window) submit(w *events.Writer, op events.Apply) {
	slot := wd.n % len(wd.ring)
	if p := wd.ring[slot]; p != nil {
		wd.wait(p)
	}
	wd.ring[slot] = w.Submit(op)
	wd.n++
}

func (wd *window) wait(p *events.Pending) {
	if _, err := p.Wait(context.Background()); err != nil && wd.err == nil {
		wd.err = err
	}
}

// drain waits for everything submitted.
func (wd *window) drain() error {
	for i, p := range wd.ring {
		if p != nil {
			wd.wait(p)
			wd.ring[i] = nil
		}
	}
	return wd.err
}

// sentAt extracts the "sentAt" stamp from a payload without a full JSON
// decode, so the measuring subscriber stays cheap.
func sentAt(payload []byte) (int64, bool) {
	const key = `"sentAt":`
	i := bytes.Index(payload, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := payload[i+len(key):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}

// percentile returns the q-quantile (0..1) of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}

// cpuClock reads the process's CPU time (user and system). On a shared
// machine events/s depends on how much CPU the run got; CPU time per event
// is what the code costs.
func cpuClock(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per event since start (a cpuClock reading).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuClock(b)-start)/float64(time.Microsecond)/float64(b.N), "cpu-µs/event")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// mergeSorted concatenates per-subscriber samples and sorts them.
func mergeSorted(parts [][]time.Duration) []time.Duration {
	var all []time.Duration
	for _, p := range parts {
		all = append(all, p...)
	}
	slices.Sort(all)
	return all
}
