package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/sessions"
)

// getWithin is an authenticated GET that gives up after limit, so that a
// request the daemon never answers fails the test instead of hanging it.
func (d *daemon) getWithin(path string, limit time.Duration) result {
	return d.sendWithin("GET", path, nil, limit)
}

// sendWithin is an authenticated request (body: JSON, or nil) that gives
// up after limit; it is safe to call off the test goroutine.
func (d *daemon) sendWithin(method, path string, body any, limit time.Duration) result {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return result{err: err}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, rd)
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, body: b, err: err}
}

// untilTaken sends a request until the session takes it (it answers
// anything but 503 session_overloaded), and requires a 200.
func (d *daemon) untilTaken(method, path string) {
	d.t.Helper()
	var r result
	d.waitFor(method+" "+path+" to be taken", func() bool {
		r = d.sendWithin(method, path, nil, 30*time.Second)
		return r.err != nil || r.status != http.StatusServiceUnavailable
	})
	if r.err != nil || r.status != http.StatusOK {
		d.t.Fatalf("%s %s: got %d %s %v, want 200", method, path, r.status, r.body, r.err)
	}
}

// waitWriterBlocked waits until a producer waits for room in the writer's
// full queue.
func (d *daemon) waitWriterBlocked() {
	d.t.Helper()
	d.waitFor("a producer to wait for room in the writer's queue", func() bool {
		_, _, waiting := d.Writer.QueueStats()
		return waiting > 0
	})
}

// streamed checks that the reply of turn pid holds every chunk of
// `/stream n` in order.
func (d *daemon) streamed(sid, pid string, n int) {
	d.t.Helper()
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "chunk %d\n", i)
	}
	var got string
	for _, m := range list(d.transcript(sid), "messages") {
		if m["role"] == "agent" && m["promptId"] == pid {
			got += m["text"].(string)
		}
	}
	if got != want.String() {
		d.t.Errorf("session %s: got %d bytes of reply (%d chunks), want every one of %d chunks (%d bytes)",
			sid, len(got), strings.Count(got, "\n"), n, want.Len())
	}
}

// TestOverloadedSessionAnswers503: while the disk does not keep up (the
// writer is held), the writer's queue fills, the session's actor waits
// for room in it, and requests to the session pile up. Each of them is
// answered 503 session_overloaded once the busy timeout has passed, never
// left hanging, nothing of it done, and the session's mailbox holds no
// more than its bound. Once the disk catches up the session answers
// again. Before the queues were bounded, the requests waited as long as
// the writer did and the mailbox grew with each one.
func TestOverloadedSessionAnswers503(t *testing.T) {
	const queue, mailbox, requests = 8, 4, 12
	d := startDaemon(t, daemonOptions{
		writer:   events.WriterConfig{MaxQueue: queue},
		sessions: sessions.Config{MailboxLimit: mailbox, BusyTimeout: 200 * time.Millisecond},
	})
	sid, _ := d.createSession(nil)
	d.waitTurn(sid, d.prompt(sid, "/echo ready", "warm-up"))
	// Far more than can stream before the writer is held: the actor is
	// still busy with it when its writes stop committing.
	before, _ := d.Writer.Stats()
	pid := d.prompt(sid, "/stream 1000000", "flood")
	// Hold the writer once chunks are being committed: held earlier, it
	// could keep the prompt itself from reaching the agent.
	d.waitFor("the flood to stream", func() bool {
		evs, _ := d.Writer.Stats()
		return evs > before+100
	})
	release := sync.OnceFunc(d.holdWriter())
	t.Cleanup(release) // a failing test must not leave the writer held
	d.waitWriterBlocked()

	// The requests, all at once: more than the mailbox holds.
	reqs := []struct {
		name, method, path string
		body               any
	}{
		{"status", "GET", "/session/" + sid + "/status", nil},
		{"prompt", "POST", "/session/" + sid + "/prompt", map[string]any{"prompt": text("/echo never"), "promptId": "refused"}},
		{"cancel", "POST", "/session/" + sid + "/cancel", nil},
	}
	type answer struct {
		name string
		r    result
	}
	answers := make(chan answer, requests)
	for i := range requests {
		rq := reqs[i%len(reqs)]
		go func() { answers <- answer{rq.name, d.sendWithin(rq.method, rq.path, rq.body, 30*time.Second)} }()
	}
	for range requests {
		a := <-answers
		switch r := a.r; {
		case r.err != nil:
			t.Errorf("%s of an overloaded session: %v (the request hung), want 503", a.name, r.err)
		case r.status != http.StatusServiceUnavailable:
			t.Errorf("%s of an overloaded session: got %d %s, want 503", a.name, r.status, r.body)
		default:
			var p map[string]any
			if err := json.Unmarshal(r.body, &p); err != nil || p["code"] != "session_overloaded" {
				t.Errorf("%s of an overloaded session: got %s, want code session_overloaded", a.name, r.body)
			}
		}
	}
	_, peak := d.Mgr.MailboxStats()
	if bound := mailbox + acp.DefaultUpdateWindow + 8; peak > bound {
		t.Errorf("session mailbox peak: got %d, want ≤ %d (commands + update window + the daemon's own)", peak, bound)
	}

	// Once the disk catches up the session takes requests again (while
	// the flood goes on it may still be too busy for some: a client
	// retries a 503, as its problem says).
	release()
	d.untilTaken("POST", "/session/"+sid+"/cancel")
	if got := d.waitTurn(sid, pid)["state"]; got != "cancelled" {
		t.Errorf("turn: got %v, want cancelled", got)
	}
	if _, writerPeak, _ := d.Writer.QueueStats(); writerPeak > queue {
		t.Errorf("writer queue peak: got %d, want ≤ %d", writerPeak, queue)
	}
	// A refused prompt was never admitted: nothing was done.
	if r := d.getWithin("/session/"+sid+"/turns/refused", 30*time.Second); r.status != http.StatusNotFound {
		t.Errorf("turn of the refused prompt: got %d %s, want 404", r.status, r.body)
	}
}

// TestFloodOnASlowDiskStaysBounded: several agents stream at once while
// every commit is slowed down and clients poll the sessions. The writer's
// queue never holds more than its bound, no session's mailbox more than
// its bound, the Go heap stays far below what keeping every chunk queued
// would take, and every turn completes with every chunk: the agents were
// slowed down, nothing was dropped. Before the bound, the writer's queue
// grew to an update window per agent.
func TestFloodOnASlowDiskStaysBounded(t *testing.T) {
	const queue, mailbox, agents = 32, 16, 3
	chunks := 5000
	if testing.Short() {
		chunks = 1000
	}
	d := startDaemon(t, daemonOptions{
		writer:   events.WriterConfig{MaxQueue: queue, MaxBatch: 16, CommitDelay: 100 * time.Microsecond},
		sessions: sessions.Config{MailboxLimit: mailbox},
	})
	sids := make([]string, agents)
	for i := range sids {
		sids[i], _ = d.createSession(nil)
		d.waitTurn(sids[i], d.prompt(sids[i], "/echo ready", "warm-up"))
	}

	// The heap is measured live, after a collection: what the daemon
	// retains, not how far garbage ran ahead of a collector the load of
	// the machine slowed down.
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := live()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var heapPeak uint64
	wg.Add(1)
	go func() { // samples the heap and polls every session, as a UI would
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if i%5 == 0 {
				heapPeak = max(heapPeak, live())
			}
			for _, sid := range sids {
				d.getWithin("/session/"+sid+"/status", 30*time.Second)
			}
		}
	}()
	pids := make([]string, agents)
	for i, sid := range sids {
		pids[i] = d.prompt(sid, fmt.Sprintf("/stream %d", chunks), "flood")
	}
	for i, sid := range sids {
		if got := d.waitTurn(sid, pids[i])["state"]; got != "completed" {
			t.Errorf("turn of %s: got %v, want completed", sid, got)
		}
	}
	close(stop)
	wg.Wait()
	for i, sid := range sids {
		d.streamed(sid, pids[i], chunks)
	}

	limit, writerPeak, _ := d.Writer.QueueStats()
	if limit != queue || writerPeak > queue {
		t.Errorf("writer queue: got peak %d of limit %d, want ≤ %d", writerPeak, limit, queue)
	}
	_, mailboxPeak := d.Mgr.MailboxStats()
	if bound := mailbox + acp.DefaultUpdateWindow + 8; mailboxPeak > bound {
		t.Errorf("session mailbox peak: got %d, want ≤ %d (commands + update window + the daemon's own)", mailboxPeak, bound)
	}
	// The replies themselves (about 12 bytes a chunk) are in memory as the
	// actors' open messages; a queued chunk costs far more (its update, its
	// closure, its change and Pending, its event). 256 bytes a chunk is
	// well below what queueing them all would take, and well above what
	// the replies, the GC's slack and the bounded queues need.
	growth := int64(heapPeak) - int64(base)
	if budget := int64(16<<20 + 256*agents*chunks); growth > budget {
		t.Errorf("the live heap grew by %d MiB during %d chunks, want ≤ %d MiB", growth>>20, agents*chunks, budget>>20)
	}
	t.Logf("%d chunks: writer queue peak %d/%d, mailbox peak %d, live heap +%d KiB", agents*chunks, writerPeak, limit, mailboxPeak, growth>>10)
}
