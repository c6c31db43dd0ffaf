package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// TestCheckConstraintsRejectBadValues: the schema, not only Go code, keeps
// enum columns to the values of records.go, so a bad value fails loudly
// (errcode.Internal: it is a programming error) and nothing is stored.
func TestCheckConstraintsRejectBadValues(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)
	sess := mustSession(t, s, task.ID)
	turn := mustTurn(t, s, sess.ID, "p1")
	perm, err := s.CreatePermission(ctx, session.Permission{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		run  func() error
	}{
		{"task state", func() error {
			_, err := s.CreateTask(ctx, session.Task{State: "DONE"})
			return err
		}},
		{"task state update", func() error { return s.SetTaskState(ctx, task.ID, "done") }},
		{"session state", func() error { return s.UpdateSessionState(ctx, sess.ID, "PAUSED") }},
		{"session mcpServers not an array", func() error {
			_, err := s.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: "/",
				MCPServers: json.RawMessage(`{}`)}, session.Executor{})
			return err
		}},
		{"executor runtime", func() error {
			return s.UpdateExecutor(ctx, session.Executor{SessionID: sess.ID, Runtime: "k8s", Status: session.ExecutorReady})
		}},
		{"executor status", func() error {
			return s.UpdateExecutor(ctx, session.Executor{SessionID: sess.ID, Runtime: session.RuntimeStandalone, Status: "dead"})
		}},
		{"turn kind", func() error {
			_, err := s.CreateTurn(ctx, session.Turn{SessionID: sess.ID, PromptID: "p2", Kind: "retry"})
			return err
		}},
		{"turn state", func() error {
			bad := turn
			bad.State = "done"
			return s.UpdateTurn(ctx, bad)
		}},
		{"message role", func() error {
			_, _, err := s.AppendMessageChunk(ctx, sess.ID, "p1", "robot", "hi")
			return err
		}},
		{"tool call status", func() error {
			_, err := s.UpsertToolCall(ctx, session.ToolCall{SessionID: sess.ID, ToolCallID: "c1", Status: "done"})
			return err
		}},
		{"permission state", func() error {
			_, err := s.ResolvePermission(ctx, sess.ID, perm.ID, "granted", "")
			return err
		}},
		{"invalid JSON", func() error { return s.SetSessionPlan(ctx, sess.ID, json.RawMessage(`{not json`)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.run(), errcode.Internal)
		})
	}

	// Nothing above changed stored state.
	if got, _ := s.GetTask(ctx, task.ID); got.State != session.TaskTodo {
		t.Errorf("task state: got %q, want TODO", got.State)
	}
	if got, _ := s.GetSession(ctx, sess.ID); got.State != session.SessionCreated || got.Plan != nil {
		t.Errorf("session: got state %q plan %s, want CREATED and nil", got.State, got.Plan)
	}
	if got, _ := s.GetPermission(ctx, sess.ID, perm.ID); got.State != session.PermissionPending {
		t.Errorf("permission: got %q, want pending", got.State)
	}
	if turns, _ := s.ListTurns(ctx, sess.ID); len(turns) != 1 || turns[0].State != session.TurnQueued {
		t.Errorf("turns: got %+v, want only p1 queued", turns)
	}
	if msgs, _ := s.ListMessages(ctx, sess.ID); len(msgs) != 0 {
		t.Errorf("messages: got %d, want 0", len(msgs))
	}
}
