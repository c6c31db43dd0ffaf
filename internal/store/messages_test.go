package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/session"
)

// walFrames empties the WAL (TRUNCATE checkpoint), runs write and returns
// how many pages write added to the WAL: what the write cost on disk,
// counted by SQLite, not timed.
func walFrames(t *testing.T, db *sql.DB, write func()) int {
	t.Helper()
	var busy, log, done int
	if err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &done); err != nil || busy != 0 {
		t.Fatalf("checkpoint: busy %d, %v", busy, err)
	}
	write()
	if err := db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	return log
}

// TestAppendMessageChunkCostDoesNotGrow checks that a chunk appended to a
// long message writes no more than one appended to a short one. When the
// text was concatenated onto the message row, SQLite rewrote the whole row
// (every overflow page of a 1 MB text) for every chunk: a long reply was
// quadratic.
func TestAppendMessageChunkCostDoesNotGrow(t *testing.T) {
	ctx := context.Background()
	s, path := openStoreAt(t, filepath.Join(t.TempDir(), "tether.db"))
	db := rawDB(t, path)
	sess := mustSession(t, s, mustTask(t, s).ID)
	appendChunk := func(text string) {
		t.Helper()
		if _, _, err := s.AppendMessageChunk(ctx, sess.ID, "p1", session.RoleAgent, text); err != nil {
			t.Fatalf("AppendMessageChunk: %v", err)
		}
	}
	chunk := strings.Repeat("x", 64)
	appendChunk(chunk)
	short := walFrames(t, db, func() { appendChunk(chunk) })

	big := strings.Repeat("y", 16<<10)
	for range 64 { // the message grows to 1 MiB
		appendChunk(big)
	}
	long := walFrames(t, db, func() { appendChunk(chunk) })
	// A few pages of slack: a b-tree page split is not growth.
	if long > short+4 {
		t.Errorf("a chunk at 1 MiB of message wrote %d WAL pages, want at most the %d of a chunk at 64 bytes (+4)", long, short)
	}
	t.Logf("WAL pages per chunk: %d at 64 bytes, %d at 1 MiB", short, long)

	msgs, err := s.ListMessages(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := chunk + chunk + strings.Repeat(big, 64) + chunk
	if len(msgs) != 1 || msgs[0].Text != want {
		t.Fatalf("got %d messages (first %d chars), want one of %d chars", len(msgs), len(firstText(msgs)), len(want))
	}
}

func firstText(msgs []session.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	return msgs[0].Text
}

// TestMessageChunksFold checks that the text of a message stays whole
// wherever it lives: chunks not yet folded are merged into reads, the next
// message folds its predecessor, and FoldMessageChunks folds what a crash
// left open: of the sessions it names (a cluster node's own), or of all.
func TestMessageChunksFold(t *testing.T) {
	ctx := context.Background()
	s, path := openStoreAt(t, filepath.Join(t.TempDir(), "tether.db"))
	db := rawDB(t, path)
	sess := mustSession(t, s, mustTask(t, s).ID)
	other := mustSession(t, s, mustTask(t, s).ID)
	chunks := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM message_chunks`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	texts := func(sessionID string) []string {
		t.Helper()
		msgs, err := s.ListMessages(ctx, sessionID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.Text)
		}
		return out
	}
	for _, c := range []struct{ sid, text string }{{sess.ID, "a"}, {sess.ID, "b"}, {other.ID, "x"}, {sess.ID, "c"}, {other.ID, "y"}} {
		if _, _, err := s.AppendMessageChunk(ctx, c.sid, "p1", session.RoleAgent, c.text); err != nil {
			t.Fatal(err)
		}
	}

	steps := []struct {
		name       string
		do         func() error
		want       []string
		wantChunks int
	}{
		{"open message read whole", func() error { return nil }, []string{"abc"}, 3},
		{"next message folds it", func() error {
			_, err := s.AddMessage(ctx, session.Message{SessionID: sess.ID, PromptID: "p2", Role: session.RoleUser, Text: "next"})
			return err
		}, []string{"abc", "next"}, 1},
		{"a node's fold of its own sessions leaves another's", func() error {
			_, err := s.FoldMessageChunks(ctx, []string{sess.ID})
			return err
		}, []string{"abc", "next"}, 1},
		{"a fold of no session folds nothing", func() error { _, err := s.FoldMessageChunks(ctx, []string{}); return err }, []string{"abc", "next"}, 1},
		{"start-up fold", func() error { _, err := s.FoldMessageChunks(ctx, nil); return err }, []string{"abc", "next"}, 0},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := texts(sess.ID); strings.Join(got, "|") != strings.Join(st.want, "|") {
			t.Errorf("%s: got texts %q, want %q", st.name, got, st.want)
		}
		if got := texts(other.ID); len(got) != 1 || got[0] != "xy" {
			t.Errorf("%s: other session: got %q, want [xy]", st.name, got)
		}
		if got := chunks(); got != st.wantChunks {
			t.Errorf("%s: got %d chunk rows, want %d", st.name, got, st.wantChunks)
		}
	}
}
