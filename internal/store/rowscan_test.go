package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// seedDistinct records a session whose every column holds a value of its
// own (so a positional scan reading one column into another's field shows):
// a completed turn, a running one with messages (one streamed into chunk
// rows), tool calls and permissions, and a queued turn; an executor row with
// every field set.
func seedDistinct(t *testing.T, s *store.Store) session.Session {
	t.Helper()
	ctx := context.Background()
	sess := mustSession(t, s, mustTask(t, s).ID)
	at := func(m int) *time.Time {
		v := time.Date(2025, 3, 4, 5, m, 7, 8, time.UTC)
		return &v
	}
	code := 3
	for i, tr := range []session.Turn{
		{PromptID: "done", State: session.TurnCompleted, StartedAt: at(1), DeliveredAt: at(2), EndedAt: at(3), StopReason: "end_turn"},
		{PromptID: "run", State: session.TurnRunning, StartedAt: at(4), DeliveredAt: at(5), EndedAt: at(6),
			StopReason: "sr", ErrorCode: "ec", ErrorMessage: "em", InterruptReason: "ir", ExitCode: &code, ExitSignal: "sig",
			ContinuesPromptID: "done", CancelRequested: true, ContextInjected: true, Interruption: json.RawMessage(`{"a":1}`)},
		{PromptID: "queued", State: session.TurnQueued},
	} {
		tr.SessionID, tr.Kind, tr.Prompt = sess.ID, session.TurnPrompt, json.RawMessage(`[{"type":"text","text":"p`+string(rune('0'+i))+`"}]`)
		if _, err := s.CreateTurn(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []session.Message{
		{PromptID: "done", Role: session.RoleUser, Text: "u0"},
		{PromptID: "run", Role: session.RoleUser, Text: "u1", Content: json.RawMessage(`[{"type":"text","text":"u1"}]`)},
	} {
		m.SessionID = sess.ID
		if _, err := s.AddMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, chunk := range []string{"a", "b"} {
		if _, _, err := s.AppendMessageChunk(ctx, sess.ID, "run", session.RoleAgent, chunk); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []session.ToolCall{
		{PromptID: "done", ToolCallID: "t0", Title: "t0", Status: session.ToolCompleted},
		{PromptID: "run", ToolCallID: "t1", Title: "title", Kind: "kind", Status: session.ToolInProgress, Interrupted: true,
			Content: json.RawMessage(`["c"]`), Locations: json.RawMessage(`["l"]`), RawInput: json.RawMessage(`{"i":1}`), RawOutput: json.RawMessage(`{"o":1}`)},
	} {
		c.SessionID = sess.ID
		if _, err := s.UpsertToolCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []session.Permission{
		{ID: "old", PromptID: "done", ToolCallID: "t0", Title: "x"},
		{ID: "asked", PromptID: "run", ToolCallID: "t1", Title: "title", Options: json.RawMessage(`[{"optionId":"o"}]`)},
	} {
		p.SessionID = sess.ID
		if _, err := s.CreatePermission(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ResolvePermission(ctx, sess.ID, "old", session.PermissionSelected, "o"); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateExecutor(ctx, session.Executor{SessionID: sess.ID, Runtime: session.RuntimeStandalone, Status: session.ExecutorReady,
		AgentExecutionID: "ae", PID: 42, Host: "hu", HostOffset: 7, ResumeToken: "rt", SupportsSessionResume: true, SupportsLoad: true,
		SupportsWorkspaceOnly: true, WorktreePath: "wp", WorktreeBranch: "wb", LastSeenAt: at(9), ErrorMessage: "em",
		ErrorCode: "ec", ErrorProfile: "ep", ExitCode: &code, ExitSignal: "sig"}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateSessionState(ctx, sess.ID, session.SessionRunning); err != nil {
		t.Fatal(err)
	}
	return sess
}

// TestRowScansMatchGorm: the hand-written reads of the recovery plan and
// of start-up reconciliation return the records gorm's reads return.
func TestRowScansMatchGorm(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := seedDistinct(t, s)
	closed := seedDistinct(t, s)
	if err := s.UpdateSessionState(ctx, closed.ID, session.SessionCompleted); err != nil {
		t.Fatal(err)
	}
	// At rest: waiting for input, agent stopped, only a completed turn
	// and an answered permission.
	rest := mustSession(t, s, mustTask(t, s).ID)
	for _, err := range []error{
		s.UpdateSessionState(ctx, rest.ID, session.SessionWaitingForInput),
		s.UpdateExecutor(ctx, session.Executor{SessionID: rest.ID, Runtime: session.RuntimeStandalone, Status: session.ExecutorStopped}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateTurn(ctx, session.Turn{SessionID: rest.ID, PromptID: "p", Kind: session.TurnPrompt, State: session.TurnCompleted}); err != nil {
		t.Fatal(err)
	}
	allTurns, err := s.ListTurns(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	openTurns, err := s.ListTurnsByState(ctx, sess.ID, session.TurnRunning, session.TurnQueued)
	if err != nil {
		t.Fatal(err)
	}
	allMessages, err := s.ListMessages(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	allCalls, err := s.ListToolCalls(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	pending, err := s.ListPermissions(ctx, sess.ID, session.PermissionPending)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := s.GetExecutor(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	full, err := s.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	ofRun := func(all any) any {
		v := reflect.ValueOf(all)
		out := reflect.MakeSlice(v.Type(), 0, v.Len())
		for i := range v.Len() {
			if v.Index(i).FieldByName("PromptID").String() == "run" {
				out = reflect.Append(out, v.Index(i))
			}
		}
		return out.Interface()
	}

	check := func(t *testing.T, name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
	t.Run("plan reads", func(t *testing.T) {
		err := s.Tx(ctx, func(tx *store.Store) error {
			flags, err := tx.GetSessionFlags(ctx, sess.ID)
			if err != nil {
				return err
			}
			check(t, "session flags", flags, store.SessionFlags{State: full.State, ContextLost: full.ContextLost, QueueHeld: full.QueueHeld})
			// "run" started last: the recent turns are it and the queue.
			recent, earlier, err := tx.RecentTurns(ctx, sess.ID)
			if err != nil {
				return err
			}
			check(t, "recent turns", recent, allTurns[1:])
			check(t, "earlier", earlier, int64(1))
			msgs, err := tx.ListTurnMessages(ctx, sess.ID, "run")
			if err != nil {
				return err
			}
			check(t, "turn messages", msgs, ofRun(allMessages))
			calls, err := tx.ListTurnToolCalls(ctx, sess.ID, "run")
			if err != nil {
				return err
			}
			check(t, "turn tool calls", calls, ofRun(allCalls))
			perms, err := tx.ListPendingPermissions(ctx, sess.ID)
			if err != nil {
				return err
			}
			check(t, "pending permissions", perms, pending)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("active sessions", func(t *testing.T) {
		active, err := s.ListActiveSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The closed session was left open (a running turn, a pending
		// permission, a live executor): start-up closes it too.
		left := store.ActiveSession{}
		if left.Session, err = s.GetSession(ctx, closed.ID); err != nil {
			t.Fatal(err)
		}
		if left.Executor, err = s.GetExecutor(ctx, closed.ID); err != nil {
			t.Fatal(err)
		}
		if left.OpenTurns, err = s.ListTurnsByState(ctx, closed.ID, session.TurnRunning, session.TurnQueued); err != nil {
			t.Fatal(err)
		}
		if left.Permissions, err = s.ListPermissions(ctx, closed.ID, session.PermissionPending); err != nil {
			t.Fatal(err)
		}
		want := store.ActiveSessions{
			AtRest:   []store.SessionRef{{ID: rest.ID, TaskID: rest.TaskID, AgentProfileID: rest.AgentProfileID}},
			ToRepair: []store.ActiveSession{{Session: full, Executor: ex, OpenTurns: openTurns, Permissions: pending}, left},
		}
		check(t, "active sessions", active, want)
	})
}

// TestListActiveSessionsIsFiveQueries: start-up reconciliation reads every
// active session in a fixed number of statements, not three per session.
func TestListActiveSessionsIsFiveQueries(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 5} {
		s := openStore(t)
		for range n {
			seedDistinct(t, s)
		}
		before := s.Statements()
		active, err := s.ListActiveSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(active.ToRepair) != n {
			t.Fatalf("got %d sessions to repair, want %d", len(active.ToRepair), n)
		}
		// BEGIN and COMMIT of the snapshot are not counted.
		if got := s.Statements() - before; got > 5 {
			t.Errorf("%d sessions: got %d statements, want at most 5", n, got)
		}
	}
}
