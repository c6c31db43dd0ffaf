package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// TestHotUpdatesCompileNothing: the updates of every turn boundary and of
// start-up reconciliation, run in write transactions, are statements
// prepared once on the pool, not compiled again in each transaction.
func TestHotUpdatesCompileNothing(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)
	sess := mustSession(t, s, task.ID)
	turn, err := s.CreateTurn(ctx, session.Turn{SessionID: sess.ID, PromptID: "p1", Kind: session.TurnPrompt, State: session.TurnRunning})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := s.GetExecutor(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	ex.Status, ex.ErrorMessage = session.ExecutorStopped, "agent stopped: tetherd restarted"
	before := s.TransactionStatements()
	for i := range 2 {
		if err := s.Tx(ctx, func(tx *store.Store) error {
			now := time.Now().UTC()
			turn.State, turn.EndedAt, turn.InterruptReason = session.TurnInterrupted, &now, "daemon_restart"
			if err := tx.UpdateTurn(ctx, turn); err != nil {
				return err
			}
			if err := tx.UpdateExecutor(ctx, ex); err != nil {
				return err
			}
			if err := tx.UpdateSessionState(ctx, sess.ID, session.SessionWaitingForInput); err != nil {
				return err
			}
			if err := tx.SetSessionQueueHeld(ctx, sess.ID, i == 0); err != nil {
				return err
			}
			if _, _, err := tx.TaskFollow(ctx, task.ID); err != nil {
				return err
			}
			return tx.SetTaskState(ctx, task.ID, session.TaskReview)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.TransactionStatements() - before; got != 0 {
		t.Errorf("got %d statements compiled per transaction by the updates, want 0", got)
	}
	got, err := s.GetTurn(ctx, sess.ID, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != session.TurnInterrupted || got.InterruptReason != "daemon_restart" || got.EndedAt == nil {
		t.Errorf("got turn %+v, want interrupted (daemon_restart) with an end", got)
	}
}

// TestTaskFollow reads a task's state and whether one of its sessions runs.
func TestTaskFollow(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)
	sess := mustSession(t, s, task.ID)
	mustSession(t, s, task.ID)
	for _, c := range []struct {
		name    string
		state   session.SessionState
		running bool
	}{
		{"no session running", session.SessionWaitingForInput, false},
		{"one session running", session.SessionRunning, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := s.UpdateSessionState(ctx, sess.ID, c.state); err != nil {
				t.Fatal(err)
			}
			state, running, err := s.TaskFollow(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if state != task.State || running != c.running {
				t.Errorf("got %s, running %v; want %s, running %v", state, running, task.State, c.running)
			}
		})
	}
	_, _, err := s.TaskFollow(ctx, "nope")
	wantCode(t, err, errcode.TaskNotFound)
}

// TestHotUpdatesOfMissingRows: each update reports its not-found code.
func TestHotUpdatesOfMissingRows(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	wantCode(t, s.UpdateExecutor(ctx, session.Executor{SessionID: "nope", Status: session.ExecutorStopped}), errcode.SessionNotFound)
	wantCode(t, s.UpdateSessionState(ctx, "nope", session.SessionCompleted), errcode.SessionNotFound)
	wantCode(t, s.SetSessionQueueHeld(ctx, "nope", true), errcode.SessionNotFound)
	wantCode(t, s.SetTaskState(ctx, "nope", session.TaskReview), errcode.TaskNotFound)
}
