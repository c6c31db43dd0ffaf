package sessions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/testbin"
)

// BenchmarkStream measures chunks/s end to end through the real demo
// agent subprocess: `/stream N` in one session, from the prompt to the
// committed turn.completed, so every chunk crossed the ACP pipe, the
// session actor, the writer (event and transcript row) and SQLite. Each
// iteration is one turn (a new message); ns/chunk at 32,000 chunks should
// match that at 8,000, since a chunk must not cost more late in a message.
func BenchmarkStream(b *testing.B) {
	for _, n := range []int{8000, 32000} {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			mgr, st, sid := openStreamSession(b)
			ctx := context.Background()
			b.ResetTimer()
			self0, agent0 := cpuSelf(b), cpuChildren(b)
			for i := range b.N {
				pid := fmt.Sprintf("p%d", i)
				prompt, _ := json.Marshal([]map[string]any{{"type": "text", "text": fmt.Sprintf("/stream %d", n)}})
				if _, err := mgr.Prompt(ctx, sid, sessions.PromptInput{Prompt: prompt, PromptID: pid}); err != nil {
					b.Fatalf("prompt: %v", err)
				}
				waitTurnDone(b, st, sid, pid)
			}
			b.StopTimer()
			chunks := float64(b.N * n)
			// The machine is shared: CPU time per chunk is steadier than
			// wall time. tetherd's side is this process; the demo agent's
			// is its child process.
			b.ReportMetric(float64(cpuSelf(b)-self0)/float64(time.Microsecond)/chunks, "tetherd-cpu-µs/chunk")
			b.ReportMetric(float64(cpuChildren(b)-agent0)/float64(time.Microsecond)/chunks, "agent-cpu-µs/chunk")
			b.ReportMetric(chunks/b.Elapsed().Seconds(), "chunks/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/chunks, "ns/chunk")
		})
	}
}

// openStreamSession wires store, writer, agents and manager as tetherd
// serve does and creates one demo session with its agent started.
func openStreamSession(b *testing.B) (*sessions.Manager, *store.Store, string) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "tether.db"))
	if err != nil {
		b.Fatal(err)
	}
	reg, err := agents.Load(ctx, agents.Config{DataDir: dir, Self: testbin.Tetherd(b), Store: st,
		LookPath: func(string) (string, error) { return "", exec.ErrNotFound }})
	if err != nil {
		b.Fatal(err)
	}
	hub := events.NewHub(events.HubConfig{})
	w, err := events.NewWriter(ctx, st, hub, events.WriterConfig{})
	if err != nil {
		b.Fatal(err)
	}
	mgr := sessions.New(st, w, reg, sessions.Config{})
	b.Cleanup(func() {
		mgr.Shutdown(context.Background())
		w.Close()
		_ = st.Close()
	})
	sess, err := mgr.Create(ctx, sessions.CreateInput{AgentProfileID: agents.DemoID, Cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	prompt, _ := json.Marshal([]map[string]any{{"type": "text", "text": "/echo ready"}})
	if _, err := mgr.Prompt(ctx, sess.ID, sessions.PromptInput{Prompt: prompt, PromptID: "warm-up"}); err != nil {
		b.Fatal(err)
	}
	waitTurnDone(b, st, sess.ID, "warm-up")
	return mgr, st, sess.ID
}

// waitTurnDone polls the store until the turn has ended; it must complete.
func waitTurnDone(b *testing.B, st *store.Store, sid, pid string) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		t, err := st.GetTurn(context.Background(), sid, pid)
		if err != nil && !errors.Is(err, context.Canceled) {
			b.Fatal(err)
		}
		switch t.State {
		case session.TurnCompleted:
			return
		case session.TurnFailed, session.TurnCancelled, session.TurnInterrupted:
			b.Fatalf("turn %s: got %s, want completed", pid, t.State)
		}
		// Coarse enough not to show in the profile; a turn takes seconds.
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("turn %s did not end in 5 minutes", pid)
}

// cpuSelf is this process's CPU time (user and system).
func cpuSelf(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuChildren is the CPU time of this process's live children (the demo
// agent), from /proc in clock ticks (assumed 100 Hz, as on Linux/amd64).
func cpuChildren(b *testing.B) time.Duration {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var total time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(raw)) {
			stat, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil {
				continue
			}
			// Fields after the command's closing parenthesis: utime and
			// stime are the 12th and 13th.
			f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			if len(f) < 13 {
				b.Fatalf("%s: short stat", pid)
			}
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			total += time.Duration(ut+st) * 10 * time.Millisecond
		}
	}
	return total
}
