package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
	"github.com/tether/tether/internal/testbin"
	"github.com/tether/tether/migrations"
)

// TestToolCallsOfTwoTurnsShareAnID: a tool call is its turn's
// (session.ToolCallKey). Two turns on two ACP sessions of an agent may
// both have a tool-1: each is a call of its own, and an update of one
// leaves the other as it is.
func TestToolCallsOfTwoTurnsShareAnID(t *testing.T) {
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	checkTwoTurnsShareAnID(t, s, sess.ID, nil)
}

// checkTwoTurnsShareAnID records tool-1 in turns p1 and p2 of session sid,
// which holds before the tool calls before (in the order they started),
// and checks that both are kept, each with its own fields.
func checkTwoTurnsShareAnID(t *testing.T, s *store.Store, sid string, before []session.ToolCall) {
	t.Helper()
	ctx := context.Background()
	first := session.ToolCall{SessionID: sid, PromptID: "p1", ToolCallID: "tool-1", Title: "Run failing tool", Kind: "execute",
		Status: session.ToolInProgress}
	second := session.ToolCall{SessionID: sid, PromptID: "p2", ToolCallID: "tool-1", Title: "Read README.md", Kind: "read",
		Status: session.ToolInProgress}
	for _, c := range []session.ToolCall{first, second} {
		if _, err := s.UpsertToolCall(ctx, c); err != nil {
			t.Fatalf("UpsertToolCall %v: %v", c.Key(), err)
		}
	}
	done := session.ToolCall{SessionID: sid, PromptID: "p1", ToolCallID: "tool-1", Status: session.ToolFailed,
		Content: json.RawMessage(`[{"type":"content","content":{"type":"text","text":"simulated error"}}]`)}
	if _, err := s.UpsertToolCall(ctx, done); err != nil {
		t.Fatalf("update p1/tool-1: %v", err)
	}
	first.Status, first.Content = done.Status, done.Content

	calls, err := s.ListToolCalls(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]session.ToolCall{}, before...), first, second)
	if len(calls) != len(want) {
		t.Fatalf("got %d tool calls %+v, want %d", len(calls), calls, len(want))
	}
	for i, w := range want {
		if !sameToolCall(calls[i], w) {
			t.Errorf("tool call %d: got %+v, want %+v", i, calls[i], w)
		}
	}
	for _, w := range []session.ToolCall{first, second} {
		got, err := s.GetToolCall(ctx, sid, w.Key())
		if err != nil {
			t.Fatalf("GetToolCall %v: %v", w.Key(), err)
		}
		if !sameToolCall(got, w) {
			t.Errorf("GetToolCall %v: got %+v, want %+v", w.Key(), got, w)
		}
		turn, err := s.ListTurnToolCalls(ctx, sid, w.PromptID)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(turn); n == 0 || !sameToolCall(turn[n-1], w) {
			t.Errorf("turn %s's tool calls: got %+v, want %+v last", w.PromptID, turn, w)
		}
	}
}

// sameToolCall compares what a tool call records, times aside.
func sameToolCall(got, want session.ToolCall) bool {
	return got.SessionID == want.SessionID && got.Key() == want.Key() && got.Title == want.Title &&
		got.Kind == want.Kind && got.Status == want.Status && got.Interrupted == want.Interrupted &&
		jsonEq(got.Content, want.Content) && jsonEq(got.Locations, want.Locations) &&
		jsonEq(got.RawInput, want.RawInput) && jsonEq(got.RawOutput, want.RawOutput)
}

// jsonEq compares two JSON texts as values (nil and absent are equal).
func jsonEq(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// TestToolCallKeyMigrationKeepsRows: a database a tetherd keyed tool
// calls by session in (the schema before the tool_call_turn_key
// migration) keeps every tool call, each field and the order they
// started in, when this one migrates it; then two turns' calls with the
// same id coexist, and the table's CHECKs still hold. On SQLite, or on
// PostgreSQL with TETHER_TEST_DATABASE=postgres.
func TestToolCallKeyMigrationKeepsRows(t *testing.T) {
	ctx := context.Background()
	db, open := oldToolCallDatabase(t)
	exec := func(q string, args ...any) {
		t.Helper()
		for n := 1; storetest.Postgres() && strings.Contains(q, "?"); n++ {
			q = strings.Replace(q, "?", "$"+strconv.Itoa(n), 1)
		}
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const at = "2026-01-02T03:04:05.000000006Z"
	exec(`INSERT INTO tasks (id, title, created_at, updated_at) VALUES ('t1', 'task', ?, ?)`, at, at)
	exec(`INSERT INTO sessions (id, task_id, agent_profile_id, cwd, event_epoch, created_at, updated_at)
		VALUES ('s1', 't1', 'demo', '/tmp/ws', 'e1', ?, ?)`, at, at)
	old := []session.ToolCall{
		{SessionID: "s1", PromptID: "p0", ToolCallID: "tool-9", Title: "Edit b.go", Kind: "edit", Status: session.ToolFailed,
			Interrupted: true, Content: json.RawMessage(`[{"type":"content","content":{"type":"text","text":"interrupted"}}]`),
			Locations: json.RawMessage(`[{"path":"b.go"}]`), RawInput: json.RawMessage(`{"path":"b.go"}`),
			RawOutput: json.RawMessage(`"no"`)},
		// Same started time: the rowid keeps it after tool-9.
		{SessionID: "s1", PromptID: "p0", ToolCallID: "tool-3", Title: "Read a.go", Kind: "read", Status: session.ToolCompleted},
	}
	for _, c := range old {
		exec(`INSERT INTO tool_calls (session_id, tool_call_id, prompt_id, title, kind, status, interrupted,
			content, locations, raw_input, raw_output, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.SessionID, c.ToolCallID, c.PromptID, c.Title, c.Kind, string(c.Status), flag(c.Interrupted),
			nullJSON(c.Content), nullJSON(c.Locations), nullJSON(c.RawInput), nullJSON(c.RawOutput), at, at)
	}

	s := open()
	calls, err := s.ListToolCalls(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != len(old) {
		t.Fatalf("after the migration: got %d tool calls %+v, want %d", len(calls), calls, len(old))
	}
	for i, w := range old {
		if !sameToolCall(calls[i], w) || calls[i].CreatedAt.Format("2006-01-02T15:04:05.000000000Z07:00") != at {
			t.Errorf("after the migration, tool call %d: got %+v, want %+v created at %s", i, calls[i], w, at)
		}
	}
	checkTwoTurnsShareAnID(t, s, "s1", old)

	for _, bad := range []session.ToolCall{
		{SessionID: "s1", PromptID: "p3", ToolCallID: "tool-1", Status: "done"},
		{SessionID: "s1", PromptID: "p3", ToolCallID: "tool-1", Content: json.RawMessage(`{not json`)},
	} {
		_, err := s.UpsertToolCall(ctx, bad)
		wantCode(t, err, errcode.Internal)
	}
	_, err = s.UpsertToolCall(ctx, session.ToolCall{SessionID: "gone", PromptID: "p1", ToolCallID: "tool-1"})
	wantCode(t, err, errcode.SessionNotFound)
}

// flag is a 0/1 column's value.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// nullJSON is a JSON column's value: NULL when absent.
func nullJSON(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// oldToolCallDatabase makes a database of this run's backend migrated up
// to the version before tool_call_turn_key, and returns a connection to
// it and how to open it with the store (which migrates the rest).
func oldToolCallDatabase(t *testing.T) (*sql.DB, func() *store.Store) {
	t.Helper()
	ctx := context.Background()
	var (
		db      *sql.DB
		fsys    fs.FS
		dialect goose.Dialect
		open    func() (*store.Store, error)
		err     error
	)
	if storetest.Postgres() {
		url := testbin.FreshPostgres(t)
		if db, err = sql.Open("pgx", url); err != nil {
			t.Fatal(err)
		}
		if fsys, err = fs.Sub(migrations.Postgres, "postgres"); err != nil {
			t.Fatal(err)
		}
		dialect = goose.DialectPostgres
		open = func() (*store.Store, error) { return store.OpenPostgres(ctx, url) }
	} else {
		file := filepath.Join(t.TempDir(), "tether.db")
		if db, err = sql.Open("sqlite3", file+"?_foreign_keys=on&_busy_timeout=5000"); err != nil {
			t.Fatal(err)
		}
		fsys, dialect = migrations.FS, goose.DialectSQLite3
		open = func() (*store.Store, error) { return store.Open(ctx, file) }
	}
	t.Cleanup(func() { _ = db.Close() })
	names, err := fs.Glob(fsys, "*_tool_call_turn_key.sql")
	if err != nil || len(names) != 1 {
		t.Fatalf("the tool_call_turn_key migration: got %v, %v, want one file", names, err)
	}
	version, err := strconv.ParseInt(strings.SplitN(path.Base(names[0]), "_", 2)[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(dialect, db, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, version-1); err != nil {
		t.Fatalf("migrate up to %d: %v", version-1, err)
	}
	return db, func() *store.Store {
		t.Helper()
		s, err := open()
		if err != nil {
			t.Fatalf("open the old database: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
}
