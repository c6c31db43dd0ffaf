package store_test

import (
	"context"
	"testing"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// TestTransactionIgnoresCallerCancellation: a statement inside a write
// transaction runs even if the context it was given is cancelled (a
// request that went away), so it cannot roll back the writer's batch of
// other clients' changes; outside a transaction a cancelled context still
// stops the statement.
func TestTransactionIgnoresCallerCancellation(t *testing.T) {
	s := openStore(t)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Tx(context.Background(), func(tx *store.Store) error {
		if _, err := tx.CreateTask(gone, session.Task{Title: "in a batch", Workspace: t.TempDir()}); err != nil {
			return err
		}
		_, err := tx.CreateTask(context.Background(), session.Task{Title: "its neighbour", Workspace: t.TempDir()})
		return err
	})
	if err != nil {
		t.Fatalf("transaction with a cancelled statement context: got %v, want it committed", err)
	}
	tasks, err := s.ListTasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 {
		t.Fatalf("tasks after the transaction: got %d, want 2", len(tasks))
	}
	if _, err := s.CreateTask(gone, session.Task{Title: "alone", Workspace: t.TempDir()}); err == nil {
		t.Fatal("CreateTask outside a transaction with a cancelled context: got nil error, want it stopped")
	}
}
