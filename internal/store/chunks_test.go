package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
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
	first := session.Message{ID: msgID(t, s), SessionID: sess.ID, PromptID: "p1", Role: session.RoleAgent, Text: "a"}
	second := session.Message{ID: msgID(t, s), SessionID: sess.ID, PromptID: "p1", Role: session.RoleThought, Text: "x"}
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
	err = s.Tx(ctx, func(tx *store.Store) error { return tx.AppendChunk(ctx, msgID(t, s), "lost") })
	if errcode.CodeOf(err) != errcode.Internal {
		t.Errorf("chunk of an unknown message: got %v, want an internal error (foreign key)", err)
	}
}

// TestStartMessageFoldsQueuedChunks checks the fold at a message boundary
// inside the writer's transaction (messages.go, foldClosed): chunks of the
// closed message that this transaction queued go into its text from
// memory, after any chunk rows earlier transactions stored, and never
// become chunk rows; other messages' queued chunks stay queued in order.
func TestStartMessageFoldsQueuedChunks(t *testing.T) {
	ctx := context.Background()
	type step struct {
		tx     int    // transaction number; steps of one run in one
		start  string // start this message (closing the open one of its session)
		chunk  string // append this text to the message named by msg
		msg    string
		closes string
	}
	for _, tc := range []struct {
		name      string
		steps     []step
		want      map[string]string // message text after the last commit
		chunkRows map[string]int    // chunk rows left per message
		wantErr   bool
	}{
		{
			name: "whole message in one transaction",
			steps: []step{{tx: 1, start: "A"}, {tx: 1, chunk: "b", msg: "A"}, {tx: 1, chunk: "c", msg: "A"},
				{tx: 1, start: "B", closes: "A"}, {tx: 1, chunk: "y", msg: "B"}},
			want:      map[string]string{"A": "Abc", "B": "By"},
			chunkRows: map[string]int{"A": 0, "B": 1},
		},
		{
			name: "chunks stored earlier, more queued now",
			steps: []step{{tx: 1, start: "A"}, {tx: 1, chunk: "1", msg: "A"}, {tx: 1, chunk: "2", msg: "A"},
				{tx: 2, chunk: "3", msg: "A"}, {tx: 2, chunk: "4", msg: "A"}, {tx: 2, start: "B", closes: "A"}},
			want:      map[string]string{"A": "A1234", "B": "B"},
			chunkRows: map[string]int{"A": 0, "B": 0},
		},
		{
			name: "other messages' chunks stay queued, in order",
			steps: []step{{tx: 1, start: "A"}, {tx: 1, start: "C"}, {tx: 1, chunk: "c1", msg: "C"}, {tx: 1, chunk: "a1", msg: "A"},
				{tx: 1, chunk: "c2", msg: "C"}, {tx: 1, start: "B", closes: "A"}, {tx: 1, chunk: "c3", msg: "C"}},
			want:      map[string]string{"A": "Aa1", "B": "B", "C": "Cc1c2c3"},
			chunkRows: map[string]int{"A": 0, "C": 3},
		},
		{
			name:    "closing a message that does not exist",
			steps:   []step{{tx: 1, chunk: "z", msg: "ghost"}, {tx: 1, start: "B", closes: "ghost"}},
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, path := openStoreAt(t, t.TempDir()+"/tether.db")
			task := mustTask(t, s)
			// C's message is in a session of its own.
			main, other := mustSession(t, s, task.ID).ID, mustSession(t, s, task.ID).ID
			sessionOf := func(name string) string {
				if name == "C" {
					return other
				}
				return main
			}
			ids := map[string]int64{"ghost": msgID(t, s) + 1000}
			var err error
			for txn := 1; txn <= 2 && err == nil; txn++ {
				err = s.Tx(ctx, func(tx *store.Store) error {
					for _, st := range tc.steps {
						if st.tx != txn {
							continue
						}
						switch {
						case st.start != "":
							ids[st.start] = msgID(t, s)
							m := session.Message{ID: ids[st.start], SessionID: sessionOf(st.start), PromptID: "p", Role: session.RoleAgent, Text: st.start}
							if _, err := tx.StartMessage(ctx, m, ids[st.closes]); err != nil {
								return err
							}
						default:
							if err := tx.AppendChunk(ctx, ids[st.msg], st.chunk); err != nil {
								return err
							}
						}
					}
					return nil
				})
			}
			if tc.wantErr {
				if errcode.CodeOf(err) != errcode.Internal {
					t.Fatalf("got %v, want an internal error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				var got string
				if err := rawDB(t, path).QueryRowContext(ctx,
					`SELECT text || coalesce((SELECT group_concat(text, '' ORDER BY id) FROM message_chunks WHERE message_id = ?1), '') FROM messages WHERE id = ?1`,
					ids[name]).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("message %s: got %q, want %q", name, got, want)
				}
			}
			for name, want := range tc.chunkRows {
				var got int
				if err := rawDB(t, path).QueryRowContext(ctx, `SELECT count(*) FROM message_chunks WHERE message_id = ?`, ids[name]).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("message %s: %d chunk rows, want %d", name, got, want)
				}
			}
		})
	}
}

// msgID reserves a message id, failing tb when the store cannot.
func msgID(tb testing.TB, s *store.Store) int64 {
	tb.Helper()
	id, err := s.NewMessageID(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return id
}
