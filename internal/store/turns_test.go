package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// mustTurn creates a prompt turn with the given id.
func mustTurn(t *testing.T, s *store.Store, sessionID, promptID string) session.Turn {
	t.Helper()
	turn, err := s.CreateTurn(context.Background(), session.Turn{
		SessionID: sessionID, PromptID: promptID, Kind: session.TurnPrompt,
		Prompt: json.RawMessage(`[{"type":"text","text":"hi"}]`),
	})
	if err != nil {
		t.Fatalf("CreateTurn(%s): %v", promptID, err)
	}
	return turn
}

func TestCreateTurnAssignsSeqPerSession(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)
	a, b := mustSession(t, s, task.ID), mustSession(t, s, task.ID)

	tests := []struct {
		session, prompt string
		wantSeq         int64
	}{
		{a.ID, "p1", 1},
		{a.ID, "p2", 2},
		{b.ID, "p1", 1}, // prompt ids and seqs are per session
		{a.ID, "p3", 3},
	}
	for _, tc := range tests {
		got := mustTurn(t, s, tc.session, tc.prompt)
		if got.Seq != tc.wantSeq {
			t.Errorf("%s/%s: got seq %d, want %d", tc.session, tc.prompt, got.Seq, tc.wantSeq)
		}
		if got.State != session.TurnQueued || got.CreatedAt.IsZero() {
			t.Errorf("%s/%s: got state %q createdAt %v, want queued and set", tc.session, tc.prompt, got.State, got.CreatedAt)
		}
	}

	generated, err := s.CreateTurn(ctx, session.Turn{SessionID: b.ID, Kind: session.TurnContinue})
	if err != nil {
		t.Fatalf("CreateTurn without prompt id: %v", err)
	}
	if generated.PromptID == "" || generated.Prompt != nil {
		t.Errorf("got prompt id %q prompt %s, want generated id and nil prompt", generated.PromptID, generated.Prompt)
	}
}

func TestCreateTurnConflictsAndMissingSession(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	first := mustTurn(t, s, sess.ID, "p1")

	_, err := s.CreateTurn(ctx, session.Turn{SessionID: sess.ID, PromptID: "p1", Kind: session.TurnPrompt})
	wantCode(t, err, errcode.PromptIDConflict)

	got, err := s.GetTurn(ctx, sess.ID, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, first) {
		t.Errorf("after conflict:\n got %+v\nwant %+v (unchanged)", got, first)
	}
	if next := mustTurn(t, s, sess.ID, "p2"); next.Seq != 2 {
		t.Errorf("after conflict: got seq %d, want 2 (no gap)", next.Seq)
	}

	_, err = s.CreateTurn(ctx, session.Turn{SessionID: "missing", PromptID: "p1", Kind: session.TurnPrompt})
	wantCode(t, err, errcode.SessionNotFound)
	_, err = s.GetTurn(ctx, sess.ID, "nope")
	wantCode(t, err, errcode.TurnNotFound)
	wantCode(t, s.UpdateTurn(ctx, session.Turn{SessionID: sess.ID, PromptID: "nope",
		Kind: session.TurnPrompt, State: session.TurnFailed}), errcode.TurnNotFound)
}

func TestCreateTurnConcurrentSeqsAreUnique(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)

	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := s.CreateTurn(ctx, session.Turn{SessionID: sess.ID, PromptID: fmt.Sprintf("p%d", i), Kind: session.TurnPrompt})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent CreateTurn: %v", err)
		}
	}
	turns, err := s.ListTurns(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, turn := range turns {
		seqs = append(seqs, turn.Seq)
	}
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if !slices.Equal(seqs, want) {
		t.Errorf("got seqs %v, want %v", seqs, want)
	}
}

func TestUpdateTurnAndListByState(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	p1, p2, p3 := mustTurn(t, s, sess.ID, "p1"), mustTurn(t, s, sess.ID, "p2"), mustTurn(t, s, sess.ID, "p3")

	started := time.Date(2026, 11, 3, 9, 0, 0, 1, time.UTC)
	ended := started.Add(time.Second)
	code := 137
	delivered := started.Add(time.Millisecond)
	p1.State, p1.StopReason, p1.StartedAt, p1.DeliveredAt, p1.EndedAt = session.TurnCompleted, "end_turn", &started, &delivered, &ended
	p2.State, p2.StartedAt, p2.DeliveredAt, p2.CancelRequested = session.TurnRunning, &started, &delivered, true
	p3.Kind, p3.State, p3.ContinuesPromptID = session.TurnContinue, session.TurnInterrupted, "p2"
	p3.InterruptReason, p3.ErrorCode, p3.ErrorMessage, p3.ExitCode, p3.ExitSignal =
		"daemon_restart", "agent_error", "boom", &code, "SIGKILL"
	for _, turn := range []session.Turn{p1, p2, p3} {
		changed := turn
		changed.Seq, changed.CreatedAt = 99, time.Time{} // immutable: ignored
		if err := s.UpdateTurn(ctx, changed); err != nil {
			t.Fatalf("UpdateTurn(%s): %v", turn.PromptID, err)
		}
		got, err := s.GetTurn(ctx, sess.ID, turn.PromptID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, turn) {
			t.Errorf("%s:\n got %+v\nwant %+v", turn.PromptID, got, turn)
		}
	}

	tests := []struct {
		name   string
		states []session.TurnState
		want   []string
	}{
		{"all", nil, []string{"p1", "p2", "p3"}},
		{"unfinished", []session.TurnState{session.TurnRunning, session.TurnQueued}, []string{"p2"}},
		{"terminal", []session.TurnState{session.TurnCompleted, session.TurnInterrupted}, []string{"p1", "p3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turns, err := s.ListTurnsByState(ctx, sess.ID, tc.states...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, turn := range turns {
				got = append(got, turn.PromptID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
