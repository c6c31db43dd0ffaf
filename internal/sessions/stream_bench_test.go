package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/events"
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
		case store.TurnCompleted:
			return
		case store.TurnFailed, store.TurnCancelled, store.TurnInterrupted:
			b.Fatalf("turn %s: got %s, want completed", pid, t.State)
		}
		time.Sleep(2 * time.Millisecond)
	}
	b.Fatalf("turn %s did not end in 5 minutes", pid)
}
