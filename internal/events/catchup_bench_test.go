package events_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/tasks"
	"github.com/tether/tether/internal/workspace"
	"github.com/tether/tether/server"
)

// catchUpEvents is how far behind the reconnecting subscriber is.
const catchUpEvents = 100_000

// BenchmarkCatchUp measures how fast a subscriber 100,000 events behind
// gets back to the head. The log is filled once; every iteration replays
// all of it.
//
//   - store: ListSessionEvents pages of 1000 (what the SSE handler reads),
//     with a plain context and (store-reqctx) with a cancellable one.
//   - store-scan: ReplaySessionEvents pages of 4000, what the SSE
//     handler reads now (each page read as one blob).
//   - http: GET /session/{id}/events?follow=false through the real server
//     (auth, request validation, SSE framing, loopback TCP), timed until
//     the replay_complete frame has been read.
func BenchmarkCatchUp(b *testing.B) {
	l := openBenchLog(b, 1)
	sid := l.sessions[0]
	wd := newWindow(ingestWindow)
	for i := range catchUpEvents {
		wd.submit(l.w, chunkOp(l, sid, promptID(i/100), 0))
	}
	if err := wd.drain(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()

	// store reads as a caller with a plain context would; store-reqctx
	// passes a cancellable context, as the SSE handler does with the
	// request's (go-sqlite3 then runs every row step in a new goroutine).
	b.Run("store", func(b *testing.B) { benchListAll(b, l, ctx) })
	b.Run("store-reqctx", func(b *testing.B) {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		benchListAll(b, l, rctx)
	})

	b.Run("store-scan", func(b *testing.B) {
		for b.Loop() {
			var after int64
			n := 0
			for {
				page, err := l.st.ReplaySessionEvents(ctx, sid, after, 4000)
				if err != nil {
					b.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				n += len(page)
				after = page[len(page)-1].Seq
			}
			if n != catchUpEvents {
				b.Fatalf("replayed %d events, want %d", n, catchUpEvents)
			}
		}
		reportCatchUp(b)
	})

	b.Run("http", func(b *testing.B) {
		url := startServer(b, l) + "/session/" + sid + "/events?follow=false"
		cpu0 := cpuClock(b)
		for b.Loop() {
			n, err := replayHTTP(url)
			if err != nil {
				b.Fatal(err)
			}
			if n != catchUpEvents {
				b.Fatalf("replayed %d events, want %d", n, catchUpEvents)
			}
		}
		b.ReportMetric(float64(cpuClock(b)-cpu0)/float64(time.Microsecond)/float64(b.N*catchUpEvents), "cpu-µs/event")
		reportCatchUp(b)
	})
}

// benchListAll pages through the whole session log, 1000 events a page,
// as the SSE handler's replay does.
func benchListAll(b *testing.B, l *benchLog, ctx context.Context) {
	sid := l.sessions[0]
	for b.Loop() {
		var after int64
		n := 0
		for {
			page, err := l.st.ListSessionEvents(ctx, sid, after, 1000)
			if err != nil {
				b.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			n += len(page)
			after = page[len(page)-1].Seq
		}
		if n != catchUpEvents {
			b.Fatalf("replayed %d events, want %d", n, catchUpEvents)
		}
	}
	reportCatchUp(b)
}

func reportCatchUp(b *testing.B) {
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(catchUpEvents/sec, "events/s")
	b.ReportMetric(sec*1000, "ms/replay")
}

const benchToken = "bench-token"

// startServer serves the real API (server.New) over the bench log on a
// loopback listener. No agent is detected (LookPath finds nothing), so no
// process is ever started.
func startServer(tb testing.TB, l *benchLog) string {
	tb.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg, err := agents.Load(ctx, agents.Config{DataDir: tb.TempDir(), Self: "/nonexistent/tetherd", Store: l.st, Logger: quiet,
		LookPath: func(string) (string, error) { return "", exec.ErrNotFound }})
	if err != nil {
		tb.Fatal(err)
	}
	mgr := sessions.New(l.st, l.w, reg, sessions.Config{Logger: quiet})
	e, err := server.New(server.Config{Store: l.st, Sessions: mgr, Tasks: tasks.New(l.st, l.w, workspace.CwdPolicy{}), Agents: reg, Hub: l.hub, Token: benchToken, Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(e)
	tb.Cleanup(func() {
		srv.Close()
		mgr.Shutdown(context.Background())
	})
	return srv.URL
}

// replayHTTP reads one follow=false stream and returns how many durable
// events (frames with an id) came before replay_complete.
func replayHTTP(url string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return n, fmt.Errorf("stream ended before replay_complete after %d events: %w", n, err)
		}
		switch {
		case bytes.HasPrefix(line, []byte("id: ")):
			n++
		case bytes.Equal(line, []byte("event: "+events.ReplayComplete+"\n")):
			return n, nil
		}
	}
}
