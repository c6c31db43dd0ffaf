package store_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/store"
)

// TestReplaySessionEventsMatchesTheLog checks the replay read (replay.go)
// against ListSessionEvents, the plain read, on logs that exercise the page
// blob: payloads with spaces, digits, multi-byte text and newlines (the
// blob is cut by byte lengths), pages cut by limit, and a page past the
// blob's byte bound, which is read row by row instead.
func TestReplaySessionEventsMatchesTheLog(t *testing.T) {
	ctx := context.Background()
	text := func(s string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"text": s})
		return b
	}
	for _, tc := range []struct {
		name     string
		payloads []json.RawMessage
		after    int64
		limit    int
	}{
		{name: "empty log", limit: 10},
		{name: "one event", payloads: []json.RawMessage{text("hello")}, limit: 10},
		{name: "spaces and digits", payloads: []json.RawMessage{text("1 2 3 message.chunk 42 "), text(" "), text("")}, limit: 10},
		{name: "multi-byte text", payloads: []json.RawMessage{text("héllo wörld ✓ 日本語 🙂"), text("ß")}, limit: 10},
		{name: "escaped newlines", payloads: []json.RawMessage{text("a\nb\r\nc"), json.RawMessage("{\"a\":\n1}")}, limit: 10},
		{name: "after a seq", payloads: []json.RawMessage{text("a"), text("b"), text("c"), text("d")}, after: 2, limit: 10},
		{name: "cut by limit", payloads: []json.RawMessage{text("a"), text("b"), text("c"), text("d")}, limit: 3},
		{name: "page past the blob bound", payloads: []json.RawMessage{
			text(strings.Repeat("x", 3<<20)), text("small"), text(strings.Repeat("y", 3<<20)), text(strings.Repeat("z", 3<<20))}, limit: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			sess := mustSession(t, s, mustTask(t, s).ID)
			evs := make([]store.Event, len(tc.payloads))
			for i, p := range tc.payloads {
				typ := "message.chunk"
				if i%2 == 1 {
					typ = "tool.call"
				}
				evs[i] = store.Event{ID: int64(i + 1), SessionID: sess.ID, Seq: int64(i + 1), Type: typ, Payload: p, Time: time.Now()}
			}
			if len(evs) > 0 {
				if err := s.Tx(ctx, func(tx *store.Store) error { return tx.AppendEvents(ctx, evs) }); err != nil {
					t.Fatal(err)
				}
			}
			want, err := s.ListSessionEvents(ctx, sess.ID, tc.after, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.ReplaySessionEvents(ctx, sess.ID, tc.after, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d rows, want %d", len(got), len(want))
			}
			for i, w := range want {
				g := got[i]
				if g.SessionID != w.SessionID || g.Seq != w.Seq || g.Type != w.Type || string(g.Payload) != string(w.Payload) {
					t.Errorf("row %d: got %s seq %d type %q payload %.60q, want %s seq %d type %q payload %.60q",
						i, g.SessionID, g.Seq, g.Type, g.Payload, w.SessionID, w.Seq, w.Type, w.Payload)
				}
			}
		})
	}
}

// TestAppendEventsStoresText checks that the event columns AppendEvents
// binds as byte views (events.go, textBytes) are stored as TEXT, as every
// reader and SQLite's JSON functions expect, and read back unchanged.
func TestAppendEventsStoresText(t *testing.T) {
	ctx := context.Background()
	s, path := openStoreAt(t, filepath.Join(t.TempDir(), "tether.db"))
	sess := mustSession(t, s, mustTask(t, s).ID)
	at := time.Date(2026, 12, 1, 19, 4, 5, 123456789, time.UTC)
	evs := []store.Event{
		{ID: 1, SessionID: sess.ID, Seq: 1, Type: "message.chunk", PromptID: "p-1", Payload: json.RawMessage(`{"text":"ü"}`), Time: at},
		{ID: 2, Type: "task.created", Global: true, Payload: json.RawMessage(`{}`), Time: at},
	}
	if err := s.Tx(ctx, func(tx *store.Store) error { return tx.AppendEvents(ctx, evs) }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sql, want string
	}{
		{"session event column types", `SELECT typeof(session_id)||typeof(type)||typeof(prompt_id)||typeof(payload)||typeof(created_at) FROM events WHERE id = 1`, "texttexttexttexttext"},
		{"task event column types", `SELECT typeof(session_id)||typeof(seq)||typeof(prompt_id)||typeof(payload) FROM events WHERE id = 2`, "nullnullnulltext"},
		{"values", `SELECT session_id||' '||type||' '||prompt_id||' '||payload||' '||created_at FROM events WHERE id = 1`,
			sess.ID + ` message.chunk p-1 {"text":"ü"} 2026-12-01T19:04:05.123456789Z`},
		{"JSON functions see text", `SELECT payload->>'text' FROM events WHERE id = 1`, "ü"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			if err := rawDB(t, path).QueryRowContext(ctx, tc.sql).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLastTurnEvent: the latest event of the turn among the types asked
// for, whatever other turns and other types came after it.
func TestLastTurnEvent(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	log := []struct{ prompt, typ, payload string }{
		{"p1", "message.added", `{"messageId":1}`},
		{"p1", "message.chunk", `{"messageId":1,"n":2}`},
		{"p1", "tool_call.started", `{"toolCallId":"t1"}`},
		{"p1", "turn.usage", `{}`},
		{"p2", "message.chunk", `{"messageId":5}`},
		{"", "session.state_changed", `{}`},
	}
	evs := make([]store.Event, len(log))
	for i, e := range log {
		evs[i] = store.Event{ID: int64(i + 1), SessionID: sess.ID, Seq: int64(i + 1), Type: e.typ, PromptID: e.prompt, Payload: json.RawMessage(e.payload), Time: time.Now()}
	}
	if err := s.Tx(ctx, func(tx *store.Store) error { return tx.AppendEvents(ctx, evs) }); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, prompt     string
		types            []string
		wantTyp, wantPay string
	}{
		{name: "the last of the kinds asked for", prompt: "p1", types: []string{"message.added", "message.chunk", "tool_call.started"}, wantTyp: "tool_call.started", wantPay: `{"toolCallId":"t1"}`},
		{name: "later kinds not asked for are passed over", prompt: "p1", types: []string{"message.added", "message.chunk"}, wantTyp: "message.chunk", wantPay: `{"messageId":1,"n":2}`},
		{name: "another turn's", prompt: "p2", types: []string{"message.chunk", "tool_call.started"}, wantTyp: "message.chunk", wantPay: `{"messageId":5}`},
		{name: "none of those kinds", prompt: "p2", types: []string{"plan.updated"}},
		{name: "a turn with no events", prompt: "p9", types: []string{"message.chunk"}},
		{name: "no kinds", prompt: "p1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, payload, err := s.LastTurnEvent(ctx, sess.ID, tt.prompt, tt.types)
			if err != nil {
				t.Fatal(err)
			}
			if typ != tt.wantTyp || string(payload) != tt.wantPay {
				t.Errorf("got %q %s, want %q %s", typ, payload, tt.wantTyp, tt.wantPay)
			}
		})
	}
}
