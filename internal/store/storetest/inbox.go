package storetest

import (
	"context"
	"fmt"
	"time"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// InboxFixture makes n sessions in one task, in turn: one whose agent
// asks for permission, one whose failed turn a later turn superseded
// (nothing waits), one whose latest turn was interrupted, one with
// completed turns only, one whose agent needs credentials, and one
// whose latest turn failed. It returns how many items wait (GET /inbox's
// tests and tether-bench's inbox part).
func InboxFixture(st *store.Store, n int) (int, error) {
	ctx := context.Background()
	waiting := 0
	err := st.Tx(ctx, func(tx *store.Store) error {
		task, err := tx.CreateTask(ctx, session.Task{Title: "inbox", Workspace: "/"})
		if err != nil {
			return err
		}
		turn := func(sid string, state session.TurnState) error {
			t, err := tx.CreateTurn(ctx, session.Turn{SessionID: sid, Kind: session.TurnPrompt})
			if err != nil {
				return err
			}
			t.State = state
			end := time.Now()
			t.EndedAt = &end
			if state == session.TurnFailed {
				t.ErrorCode, t.ErrorMessage = "agent_error", "model overloaded"
			}
			if state == session.TurnInterrupted {
				t.InterruptReason = "agent_exited"
			}
			return tx.EndTurn(ctx, t)
		}
		for i := range n {
			s, err := tx.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: "/"}, session.Executor{})
			if err != nil {
				return err
			}
			switch i % 6 {
			case 0:
				if err := turn(s.ID, session.TurnCompleted); err != nil {
					return err
				}
				if _, err := tx.CreatePermission(ctx, session.Permission{SessionID: s.ID, Title: fmt.Sprint("ask ", i)}); err != nil {
					return err
				}
				waiting++
			case 1:
				if err := turn(s.ID, session.TurnFailed); err != nil {
					return err
				}
				if err := turn(s.ID, session.TurnCompleted); err != nil {
					return err
				}
			case 2:
				if err := turn(s.ID, session.TurnInterrupted); err != nil {
					return err
				}
				waiting++
			case 3:
				for range 3 {
					if err := turn(s.ID, session.TurnCompleted); err != nil {
						return err
					}
				}
			case 4:
				if err := tx.UpdateExecutor(ctx, session.Executor{SessionID: s.ID, Runtime: session.RuntimeStandalone,
					Status: session.ExecutorError, ErrorCode: "agent_auth_required", ErrorMessage: "needs credentials"}); err != nil {
					return err
				}
				waiting++
			case 5:
				if err := turn(s.ID, session.TurnFailed); err != nil {
					return err
				}
				waiting++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("inbox fixture: %w", err)
	}
	return waiting, nil
}
