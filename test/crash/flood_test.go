package crash_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// streamChunks is how many chunks /stream sends while clients replay the
// log; TETHER_FLOOD_CHUNKS runs a bigger flood by hand (70,000 is the
// issue's figure; chunk appends are quadratic today, so that takes minutes,
// and 20,000 already outlasts the harness deadline on a busy machine).
func streamChunks(t *testing.T) int {
	t.Helper()
	if s := os.Getenv("TETHER_FLOOD_CHUNKS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("TETHER_FLOOD_CHUNKS=%q: want a positive number", s)
		}
		return n
	}
	return 10000
}

// TestFastAgentIsSlowedDownNotCut: an agent that streams faster than the
// daemon can record keeps its turn: it ends completed with every chunk in
// the log, in order, every live client sees them all, and the daemon's
// memory stays bounded. Without back-pressure on the agent's stdout the
// SDK's 1,024-slot notification queue overflows and the connection is
// dropped (turn interrupted): always with /flood, which writes its chunks
// in one go; sometimes with /stream while clients replay the log (the
// issue's report; it depends on the machine's load).
func TestFastAgentIsSlowedDownNotCut(t *testing.T) {
	tests := []struct {
		name    string
		prompt  string
		chunks  int
		replays int
	}{
		{name: "one write of 5000 chunks", prompt: "/flood", chunks: 5000},
		{name: "stream while clients replay", prompt: "/stream", chunks: streamChunks(t), replays: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, profile{id: "agent"})
			w.start()
			sid, _ := w.createSession("agent")
			live := w.record(sid)
			stopReplays := w.replayLoop(sid, tt.replays)

			w.prompt(sid, fmt.Sprintf("%s %d", tt.prompt, tt.chunks), "flood")
			turn := w.waitTurn(sid, "flood")
			stopReplays()
			if turn["state"] != "completed" {
				t.Fatalf("turn: got %v, want completed", turn)
			}
			hwm := w.daemonHWM()
			t.Logf("%s %d: daemon VmHWM %d MiB", tt.prompt, tt.chunks, hwm>>20)

			var want strings.Builder
			for i := 1; i <= tt.chunks; i++ {
				fmt.Fprintf(&want, "chunk %d\n", i)
			}
			if got := agentText(t, w.replay(sid), "flood"); got != want.String() {
				t.Errorf("log: got %d chars of agent text ending %q, want %d ending %q",
					len(got), tail(got), want.Len(), tail(want.String()))
			}
			w.waitSeen(live, "the live client to see the turn end", func(f frame) bool { return f.Event == "turn.completed" })
			live.stop()
			if got := agentText(t, live.seen(), "flood"); got != want.String() {
				t.Errorf("live client: got %d chars of agent text ending %q, want %d", len(got), tail(got), want.Len())
			}
			// Generous on purpose: a safety net against unbounded growth,
			// not a performance figure.
			if limit := int64(1 << 30); hwm > limit {
				t.Errorf("daemon VmHWM: got %d MiB, want under %d MiB", hwm>>20, limit>>20)
			}
		})
	}
}

// agentText concatenates the agent message text of one turn's events.
func agentText(t *testing.T, frames []frame, promptID string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range frames {
		if f.Event != "message.added" && f.Event != "message.chunk" {
			continue
		}
		m := f.JSON(t)
		if m["role"] == "agent" && m["promptId"] == promptID {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

func tail(s string) string { return s[max(0, len(s)-24):] }

// replayLoop starts n clients that read the session's whole log over and
// over (GET events?follow=false) until the returned func stops them.
func (w *world) replayLoop(sid string, n int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	url := "http://" + w.addr + "/session/" + sid + "/events?follow=false"
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Accept", "text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // the daemon is gone; the test reports why
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	w.t.Cleanup(stop)
	return stop
}

// daemonHWM is the running daemon's peak resident set (VmHWM), in bytes.
func (w *world) daemonHWM() int64 {
	w.t.Helper()
	w.mu.Lock()
	pid := w.daemon.pid()
	w.mu.Unlock()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				w.t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	w.t.Fatal("no VmHWM in /proc status")
	return 0
}
