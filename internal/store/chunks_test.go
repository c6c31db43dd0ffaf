package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
)

// TestChunksNameTheirMessage drives the session actor's transcript path:
// a message started under a reserved id, chunks appended to it by id inside
// one transaction (queued, then written in multi-row statements), read
// back and folded in that same transaction, and written with a fixed
// number of statements whatever their count.
func TestChunksNameTheirMessage(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	first := store.Message{ID: s.NewMessageID(), SessionID: sess.ID, PromptID: "p1", Role: store.RoleAgent, Text: "a"}
	second := store.Message{ID: s.NewMessageID(), SessionID: sess.ID, PromptID: "p1", Role: store.RoleThought, Text: "x"}
	if second.ID != first.ID+1 {
		t.Fatalf("reserved ids: got %d then %d, want consecutive", first.ID, second.ID)
	}
	var inTx []string
	before := s.Statements()
	err := s.Tx(ctx, func(tx *store.Store) error {
		if _, err := tx.StartMessage(ctx, first, 0); err != nil {
			return err
		}
		for range 300 { // more than the largest multi-row statement
			if err := tx.AppendChunk(ctx, first.ID, "b"); err != nil {
				return err
			}
		}
		msgs, err := tx.ListMessages(ctx, sess.ID) // sees the queued chunks
		if err != nil {
			return err
		}
		for _, m := range msgs {
			inTx = append(inTx, m.Text)
		}
		if _, err := tx.StartMessage(ctx, second, first.ID); err != nil { // folds first
			return err
		}
		return tx.AppendChunk(ctx, second.ID, "y")
	})
	if err != nil {
		t.Fatal(err)
	}
	statements := s.Statements() - before
	want := "a" + strings.Repeat("b", 300)
	if len(inTx) != 1 || inTx[0] != want {
		t.Errorf("inside the transaction: got %d messages, want the open one with its 300 chunks", len(inTx))
	}
	msgs, err := s.ListMessages(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].ID != first.ID || msgs[0].Text != want || msgs[1].ID != second.ID || msgs[1].Text != "xy" {
		t.Fatalf("got %+v, want messages %d (%d bytes) and %d (xy)", msgs, first.ID, len(want), second.ID)
	}
	// 300 chunks in statements of 256, 16, 16, 4, 4, 4: never one per chunk.
	if statements > 40 {
		t.Errorf("the transaction ran %d statements, want a few dozen at most for 301 chunks", statements)
	}

	// A chunk of a message that does not exist fails its transaction.
	err = s.Tx(ctx, func(tx *store.Store) error { return tx.AppendChunk(ctx, s.NewMessageID(), "lost") })
	if errcode.CodeOf(err) != errcode.Internal {
		t.Errorf("chunk of an unknown message: got %v, want an internal error (foreign key)", err)
	}
}
