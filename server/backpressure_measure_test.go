package server_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
)

// TestMeasureStreamOnASlowDisk is a measurement, not a check: with
// TETHER_MEASURE_STREAM=N (and optionally TETHER_MEASURE_SESSIONS=S), S
// sessions each run `/stream N` through the demo agent while every commit
// of the writer is slowed down by 1 ms, and the test logs the process's
// peak RSS (VmHWM) and the peak Go heap in use. Skipped otherwise.
func TestMeasureStreamOnASlowDisk(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TETHER_MEASURE_STREAM"))
	if n <= 0 {
		t.Skip("set TETHER_MEASURE_STREAM=N to measure")
	}
	s, _ := strconv.Atoi(os.Getenv("TETHER_MEASURE_SESSIONS"))
	s = max(s, 1)
	d := startDaemon(t, daemonOptions{writer: events.WriterConfig{CommitDelay: time.Millisecond}})
	sids := make([]string, s)
	for i := range sids {
		sids[i], _ = d.createSession(nil)
		d.waitTurn(sids[i], d.prompt(sids[i], "/echo ready", "warm-up"))
	}
	var heapPeak uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heapPeak = max(heapPeak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	pids := make([]string, s)
	for i, sid := range sids {
		pids[i] = d.prompt(sid, fmt.Sprintf("/stream %d", n), "flood")
	}
	for i, sid := range sids {
		if got := d.waitTurnWithin(sid, pids[i], 30*time.Minute)["state"]; got != "completed" {
			t.Fatalf("turn: got %v, want completed", got)
		}
	}
	close(done)
	<-stopped
	t.Logf("%d × /stream %d with 1 ms per commit: %.1f s, peak RSS %s, peak heap in use %d MiB",
		s, n, time.Since(start).Seconds(), vmHWM(t), heapPeak>>20)
}

// waitTurnWithin polls the turn until it has ended or limit has passed.
func (d *daemon) waitTurnWithin(sid, pid string, limit time.Duration) map[string]any {
	d.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		turn := d.turn(sid, pid)
		if st, _ := turn["state"].(string); st != "running" && st != "queued" || time.Now().After(deadline) {
			return turn
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// vmHWM is the process's peak resident set size, from /proc/self/status.
func vmHWM(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "?"
}
