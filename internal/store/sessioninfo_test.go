package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// TestSearchSessions checks GET /sessions?q= at the store, on SQLite's
// FTS4 and PostgreSQL's tsvector alike: a session is found by every word
// of q in its title, or in the text of a turn indexed at its end (the
// last word also as a prefix), and the archive filter applies to it.
func TestSearchSessions(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)
	mk := func(title string, turns ...[]string) session.Session {
		t.Helper()
		sess, err := s.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: "/tmp/ws", Title: title}, session.Executor{})
		if err != nil {
			t.Fatal(err)
		}
		for i, texts := range turns {
			pid := sess.ID + "-p" + string(rune('0'+i))
			if _, err := s.CreateTurn(ctx, session.Turn{SessionID: sess.ID, PromptID: pid, Kind: session.TurnPrompt, State: session.TurnQueued}); err != nil {
				t.Fatal(err)
			}
			for j, text := range texts {
				role := session.RoleAgent
				if j == 0 {
					role = session.RoleUser
				}
				if _, err := s.AddMessage(ctx, session.Message{SessionID: sess.ID, PromptID: pid, Role: role, Text: text}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.IndexTurnText(ctx, sess.ID, pid); err != nil {
				t.Fatalf("IndexTurnText: %v", err)
			}
		}
		return sess
	}
	parser := mk("Fix the parser", []string{"the banana test is flaky", "I found the race in tokenizer.go"})
	docs := mk("", []string{"write the README"}, []string{"now the changelog", "Done: CHANGELOG.md has a section for 0.2"})
	empty := mk("Untouched")
	archived := mk("Archived banana bread")
	if err := s.SetSessionArchived(ctx, archived.ID, true); err != nil {
		t.Fatal(err)
	}
	_ = empty
	tests := []struct {
		name     string
		q        string
		archived bool
		want     []session.Session
	}{
		{"a word of the title", "parser", false, []session.Session{parser}},
		{"case does not matter", "PARSER", false, []session.Session{parser}},
		{"a word the user said", "banana", false, []session.Session{parser}},
		{"a word the agent said", "tokenizer", false, []session.Session{parser}},
		{"every word, from two turns", "readme changelog", false, []session.Session{docs}},
		{"the last word as a prefix", "change", false, []session.Session{docs}},
		{"only the last word is a prefix", "chang section", false, nil},
		{"a word nobody said", "kiwi", false, nil},
		{"words from the title and the text apart do not mix", "fix tokenizer", false, nil},
		{"punctuation is no operator", `"banana" -flaky* (`, false, []session.Session{parser}},
		{"no word at all", `*** "" ()`, false, nil},
		{"archived ones only with archived", "banana", true, []session.Session{archived}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := s.ListSessions(ctx, store.SessionFilter{Query: tc.q, Archived: tc.archived})
			if err != nil {
				t.Fatalf("ListSessions(q=%q): %v", tc.q, err)
			}
			if g, w := ids(got), ids(tc.want); !slices.Equal(g, w) {
				t.Errorf("q=%q: got %v, want %v", tc.q, g, w)
			}
		})
	}
}

// ids are the sessions' ids, in order.
func ids(list []session.Session) []string {
	var out []string
	for _, x := range list {
		out = append(out, x.ID)
	}
	return out
}

// TestSessionTitleArchiveAndActivity checks the projections of
// session.title_changed and session.archived and the list's last
// activity: the time of the session's latest event.
func TestSessionTitleArchiveAndActivity(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	if err := s.SetSessionTitle(ctx, sess.ID, "Named", session.TitleUser); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSessionArchived(ctx, sess.ID, true); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "Named" || got.TitleSource != session.TitleUser || !got.Archived {
		t.Errorf("got title %q from %q, archived %v; want Named from user, archived", got.Title, got.TitleSource, got.Archived)
	}
	list, _, err := s.ListSessions(ctx, store.SessionFilter{Archived: true})
	if err != nil || len(list) != 1 || list[0].LastActivityAt != nil {
		t.Fatalf("before any event: got %+v (%v), want the session with no last activity", list, err)
	}
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	for i, when := range []time.Time{at, at.Add(time.Minute)} {
		err := s.Tx(ctx, func(tx *store.Store) error {
			return tx.AppendEvents(ctx, []store.Event{{ID: int64(100 + i), SessionID: sess.ID, Seq: int64(i + 1), Type: "session.archived",
				Payload: []byte(`{"archived":true}`), Time: when}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	list, _, err = s.ListSessions(ctx, store.SessionFilter{Archived: true})
	if err != nil || len(list) != 1 || list[0].LastActivityAt == nil || !list[0].LastActivityAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("got %+v (%v), want last activity %v", list, err, at.Add(time.Minute))
	}
}
