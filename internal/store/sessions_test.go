package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

func TestCreateSessionDefaultsAndRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)

	created, err := s.CreateSession(ctx, session.Session{
		TaskID: task.ID, AgentProfileID: "demo", Cwd: "/src/repo", Title: "first",
		AdditionalDirectories: []string{"/src/lib"},
	}, session.Executor{})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if created.ID == "" || len(created.EventEpoch) != 32 {
		t.Errorf("got ID %q epoch %q, want generated id and 32-hex-digit epoch", created.ID, created.EventEpoch)
	}
	if created.State != session.SessionCreated {
		t.Errorf("got state %q, want %q", created.State, session.SessionCreated)
	}
	if string(created.MCPServers) != "[]" {
		t.Errorf("got MCPServers %s, want []", created.MCPServers)
	}
	if created.ClosedAt != nil || created.Plan != nil || created.Prompted || created.ContextLost {
		t.Errorf("got %+v, want no closedAt, no plan, not prompted, context kept", created)
	}

	got, err := s.GetSession(ctx, created.ID)
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	if !reflect.DeepEqual(got, created) {
		t.Errorf("GetSession:\n got %+v\nwant %+v", got, created)
	}

	exec, err := s.GetExecutor(ctx, created.ID)
	if err != nil {
		t.Fatalf("GetExecutor: %v", err)
	}
	want := session.Executor{SessionID: created.ID, Runtime: session.RuntimeStandalone,
		Status: session.ExecutorStopped, UpdatedAt: created.CreatedAt}
	if !reflect.DeepEqual(exec, want) {
		t.Errorf("executor:\n got %+v\nwant %+v", exec, want)
	}
}

func TestCreateSessionMissingTask(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	_, err := s.CreateSession(ctx, session.Session{TaskID: "nope", AgentProfileID: "demo", Cwd: "/"}, session.Executor{})
	wantCode(t, err, errcode.TaskNotFound)

	// The transaction must not leave a half-created session behind.
	all, err := s.ListSessionsByState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 {
		t.Errorf("got %d sessions after failed create, want 0", len(all))
	}
}

func TestGetSessionNotFound(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	_, err := s.GetSession(ctx, "missing")
	wantCode(t, err, errcode.SessionNotFound)
	_, err = s.GetExecutor(ctx, "missing")
	wantCode(t, err, errcode.SessionNotFound)
	wantCode(t, s.UpdateSessionState(ctx, "missing", session.SessionRunning), errcode.SessionNotFound)
	wantCode(t, s.UpdateExecutor(ctx, session.Executor{SessionID: "missing",
		Runtime: session.RuntimeStandalone, Status: session.ExecutorReady}), errcode.SessionNotFound)
}

func TestUpdateSessionStateClosedAt(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)

	var firstClose *time.Time
	steps := []struct {
		state      session.SessionState
		wantClosed bool
	}{
		{session.SessionRunning, false},
		{session.SessionWaitingForInput, false},
		{session.SessionCompleted, true},
		{session.SessionCancelled, true}, // keeps the first close time
	}
	for _, st := range steps {
		if err := s.UpdateSessionState(ctx, sess.ID, st.state); err != nil {
			t.Fatalf("UpdateSessionState(%s): %v", st.state, err)
		}
		got, err := s.GetSession(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != st.state {
			t.Errorf("got state %q, want %q", got.State, st.state)
		}
		if (got.ClosedAt != nil) != st.wantClosed {
			t.Errorf("%s: got ClosedAt %v, want set=%v", st.state, got.ClosedAt, st.wantClosed)
		}
		if got.ClosedAt != nil {
			if firstClose == nil {
				firstClose = got.ClosedAt
			} else if !got.ClosedAt.Equal(*firstClose) {
				t.Errorf("%s: got ClosedAt %v, want first close %v", st.state, got.ClosedAt, firstClose)
			}
		}
	}
}

func TestSessionFlags(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	plan := json.RawMessage(`[{"content":"step","status":"pending","priority":"high"}]`)

	if err := s.SetSessionPlan(ctx, sess.ID, plan); err != nil {
		t.Fatalf("SetSessionPlan: %v", err)
	}
	if err := s.MarkSessionPrompted(ctx, sess.ID); err != nil {
		t.Fatalf("MarkSessionPrompted: %v", err)
	}
	if err := s.SetSessionContextLost(ctx, sess.ID, true); err != nil {
		t.Fatalf("SetSessionContextLost: %v", err)
	}
	got, err := s.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Plan) != string(plan) || !got.Prompted || !got.ContextLost {
		t.Errorf("got plan %s prompted %v contextLost %v, want %s true true", got.Plan, got.Prompted, got.ContextLost, plan)
	}

	if err := s.SetSessionPlan(ctx, sess.ID, nil); err != nil {
		t.Fatalf("SetSessionPlan(nil): %v", err)
	}
	if err := s.SetSessionContextLost(ctx, sess.ID, false); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Plan != nil || got.ContextLost {
		t.Errorf("got plan %s contextLost %v, want nil false", got.Plan, got.ContextLost)
	}
	wantCode(t, s.MarkSessionPrompted(ctx, "missing"), errcode.SessionNotFound)
}

func TestListSessionsFiltersAndPagination(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	taskA, taskB := mustTask(t, s), mustTask(t, s)

	var all []session.Session // creation order
	for i := range 7 {
		task := taskA
		if i%2 == 1 {
			task = taskB
		}
		sess := mustSession(t, s, task.ID)
		if i%3 == 0 {
			if err := s.UpdateSessionState(ctx, sess.ID, session.SessionRunning); err != nil {
				t.Fatal(err)
			}
			sess.State = session.SessionRunning
		}
		all = append(all, sess)
	}
	newestFirst := func(keep func(session.Session) bool) []string {
		var ids []string
		for i := len(all) - 1; i >= 0; i-- {
			if keep(all[i]) {
				ids = append(ids, all[i].ID)
			}
		}
		return ids
	}

	tests := []struct {
		name   string
		filter store.SessionFilter
		want   []string
	}{
		{"all", store.SessionFilter{Limit: 3},
			newestFirst(func(session.Session) bool { return true })},
		{"by task", store.SessionFilter{TaskID: taskB.ID, Limit: 2},
			newestFirst(func(x session.Session) bool { return x.TaskID == taskB.ID })},
		{"by state", store.SessionFilter{States: []session.SessionState{session.SessionRunning}, Limit: 1},
			newestFirst(func(x session.Session) bool { return x.State == session.SessionRunning })},
		{"by task and states", store.SessionFilter{TaskID: taskA.ID,
			States: []session.SessionState{session.SessionCreated, session.SessionFailed}},
			newestFirst(func(x session.Session) bool { return x.TaskID == taskA.ID && x.State == session.SessionCreated })},
		{"no match", store.SessionFilter{TaskID: "other"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			f := tc.filter
			for pages := 0; ; pages++ {
				if pages > len(all) {
					t.Fatal("pagination does not terminate")
				}
				page, next, err := s.ListSessions(ctx, f)
				if err != nil {
					t.Fatalf("ListSessions: %v", err)
				}
				if f.Limit > 0 && len(page) > f.Limit {
					t.Fatalf("got page of %d, want at most %d", len(page), f.Limit)
				}
				for _, sess := range page {
					got = append(got, sess.ID)
				}
				if next == "" {
					break
				}
				f.After = next
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestListSessionsLimits(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)
	for range store.DefaultSessionPageSize + 1 {
		mustSession(t, s, task.ID)
	}
	page, next, err := s.ListSessions(ctx, store.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != store.DefaultSessionPageSize || next == "" {
		t.Errorf("default limit: got %d sessions, next %q; want %d and a token", len(page), next, store.DefaultSessionPageSize)
	}
	page, next, err = s.ListSessions(ctx, store.SessionFilter{Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != store.DefaultSessionPageSize+1 || next != "" {
		t.Errorf("large limit: got %d sessions, next %q; want %d and no token", len(page), next, store.DefaultSessionPageSize+1)
	}

	for _, bad := range []string{"!!!", "e30", strings.Repeat("A", 12)} {
		_, _, err := s.ListSessions(ctx, store.SessionFilter{After: bad})
		wantCode(t, err, errcode.InvalidRequest)
	}
}

func TestListSessionsByState(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)
	a, b, c := mustSession(t, s, task.ID), mustSession(t, s, task.ID), mustSession(t, s, task.ID)
	for id, st := range map[string]session.SessionState{a.ID: session.SessionRunning, c.ID: session.SessionWaitingForInput, b.ID: session.SessionFailed} {
		if err := s.UpdateSessionState(ctx, id, st); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ListSessionsByState(ctx, session.SessionRunning, session.SessionWaitingForInput)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range got {
		ids = append(ids, x.ID)
	}
	if want := []string{a.ID, c.ID}; !slices.Equal(ids, want) {
		t.Errorf("got %v, want %v (oldest first)", ids, want)
	}
}

func TestExecutorRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)
	sess := mustSession(t, s, task.ID)
	other := mustSession(t, s, task.ID)

	seen := time.Date(2026, 11, 3, 10, 4, 5, 123000000, time.UTC)
	code := 0
	want := session.Executor{
		SessionID: sess.ID, Runtime: session.RuntimeDetached, Status: session.ExecutorReady,
		AgentExecutionID: "exec-1", PID: 4242, Host: "gpu-1", HostOffset: 0,
		ResumeToken: "acp-session-1", SupportsSessionResume: true, SupportsLoad: true,
		SupportsWorkspaceOnly: true, WorktreePath: "/wt/a", WorktreeBranch: "tether/a",
		LastSeenAt: &seen, ErrorMessage: "none", ExitCode: &code, ExitSignal: "SIGTERM",
	}
	if err := s.UpdateExecutor(ctx, want); err != nil {
		t.Fatalf("UpdateExecutor: %v", err)
	}
	got, err := s.GetExecutor(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.UpdatedAt.IsZero() {
		t.Error("got zero UpdatedAt, want it stamped")
	}
	want.UpdatedAt = got.UpdatedAt
	if !reflect.DeepEqual(got, want) {
		t.Errorf("executor:\n got %+v\nwant %+v", got, want)
	}

	// A full update clears what the new value leaves empty.
	cleared := session.Executor{SessionID: sess.ID, Runtime: session.RuntimeStandalone, Status: session.ExecutorStopped}
	if err := s.UpdateExecutor(ctx, cleared); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetExecutor(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastSeenAt != nil || got.ExitCode != nil || got.ResumeToken != "" || got.SupportsLoad {
		t.Errorf("got %+v, want optional fields cleared", got)
	}

	if err := s.UpdateExecutor(ctx, session.Executor{SessionID: other.ID,
		Runtime: session.RuntimeStandalone, Status: session.ExecutorError}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListExecutorsByStatus(ctx, session.ExecutorError, session.ExecutorReady)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].SessionID != other.ID {
		t.Errorf("ListExecutorsByStatus(error, ready): got %+v, want only %s", list, other.ID)
	}
	list, err = s.ListExecutorsByStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Errorf("ListExecutorsByStatus(): got %d rows, want 2", len(list))
	}
}

func TestExecutorOffset(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	offset := func() uint64 {
		t.Helper()
		e, err := s.GetExecutor(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		return e.HostOffset
	}
	if err := s.SetExecutorOffset(ctx, sess.ID, 41); err != nil {
		t.Fatalf("SetExecutorOffset: %v", err)
	}
	if got := offset(); got != 41 {
		t.Fatalf("got offset %d, want 41", got)
	}
	// A full update written from an older copy keeps the offset: only the
	// record's own transaction moves it.
	if err := s.UpdateExecutor(ctx, session.Executor{SessionID: sess.ID, Runtime: session.RuntimeDetached,
		Status: session.ExecutorReconnecting, Host: "local", HostOffset: 3}); err != nil {
		t.Fatal(err)
	}
	if got := offset(); got != 41 {
		t.Errorf("after UpdateExecutor: got offset %d, want 41", got)
	}
	// Offsets only grow: a late, smaller one changes nothing.
	if err := s.SetExecutorOffset(ctx, sess.ID, 7); err != nil {
		t.Fatal(err)
	}
	if got := offset(); got != 41 {
		t.Errorf("after a smaller offset: got %d, want 41", got)
	}
	// A new agent's numbering starts at the base.
	if err := s.ResetExecutorOffset(ctx, sess.ID, 50); err != nil {
		t.Fatal(err)
	}
	if e, err := s.GetExecutor(ctx, sess.ID); err != nil || e.HostOffset != 50 || e.HostOffsetBase != 50 {
		t.Errorf("after reset to 50: got offset %d base %d (%v), want 50 50", e.HostOffset, e.HostOffsetBase, err)
	}
	if err := s.SetExecutorOffset(ctx, "no-such-session", 1); !errcode.Is(err, errcode.SessionNotFound) {
		t.Errorf("unknown session: got %v, want %s", err, errcode.SessionNotFound)
	}
}

// TestExecutorOffsetInTx: in a transaction the offsets are written once
// per session, the latest winning, when it ends; a read of executor rows
// in it sees them first; an unknown session fails the transaction, and a
// failed transaction leaves the offsets as they were.
func TestExecutorOffsetInTx(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s).ID
	a, b := mustSession(t, s, task), mustSession(t, s, task)
	offsets := func() [2]uint64 {
		t.Helper()
		var got [2]uint64
		for i, id := range []string{a.ID, b.ID} {
			e, err := s.GetExecutor(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			got[i] = e.HostOffset
		}
		return got
	}
	before := s.Statements()
	err := s.Tx(ctx, func(tx *store.Store) error {
		for _, o := range []struct {
			id  string
			off uint64
		}{{a.ID, 5}, {b.ID, 2}, {a.ID, 6}, {a.ID, 7}, {b.ID, 3}} {
			if err := tx.SetExecutorOffset(ctx, o.id, o.off); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Statements() - before; n != 2 { // the store counts its UPDATEs, not BEGIN and COMMIT
		t.Errorf("five offsets of two sessions: got %d statements, want 2 (one per session)", n)
	}
	if got := offsets(); got != [2]uint64{7, 3} {
		t.Fatalf("after the transaction: got %v, want [7 3]", got)
	}

	err = s.Tx(ctx, func(tx *store.Store) error {
		if err := tx.SetExecutorOffset(ctx, a.ID, 9); err != nil {
			return err
		}
		e, err := tx.GetExecutor(ctx, a.ID)
		if err != nil {
			return err
		}
		if e.HostOffset != 9 {
			t.Errorf("read in the transaction: got offset %d, want the queued 9", e.HostOffset)
		}
		return tx.SetExecutorOffset(ctx, "no-such-session", 1)
	})
	if !errcode.Is(err, errcode.SessionNotFound) {
		t.Fatalf("unknown session in a transaction: got %v, want %s", err, errcode.SessionNotFound)
	}
	if got := offsets(); got != [2]uint64{7, 3} {
		t.Fatalf("after the failed transaction: got %v, want [7 3] still", got)
	}
}

// TestExecutorReadsConcurrently: executor reads outside a transaction
// share the Store (every API request does them), so they must not touch
// the offsets a transaction queues (go test -race).
func TestExecutorReadsConcurrently(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.GetExecutor(ctx, sess.ID); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("GetExecutor: %v", err)
	}
}

// TestCommittedOffsetFromEvents: a hosted session's committed offset is
// the larger of its executor row's and the one its last event after the
// row's own write carries; resets start a new agent's numbering above
// both, in or across transactions; every read of executor rows agrees.
func TestCommittedOffsetFromEvents(t *testing.T) {
	ctx := context.Background()
	type step struct {
		events []uint64 // events appended in one transaction, with these offsets (0: none)
		row    uint64   // then SetExecutorOffset in the same transaction, if not 0
		reset  uint64   // then ResetExecutorOffset in the same transaction, if not 0
		after  []uint64 // then more events in the same transaction
	}
	cases := []struct {
		name       string
		steps      []step
		want, base uint64
	}{
		{"events only", []step{{events: []uint64{1, 2, 3}}, {events: []uint64{4, 0}}}, 4, 0},
		{"events without offsets after them", []step{{events: []uint64{5}}, {events: []uint64{0, 0, 0}}}, 5, 0},
		{"row offset after events", []step{{events: []uint64{1, 2}, row: 3}}, 3, 0},
		{"events after a row offset", []step{{row: 3}, {events: []uint64{4, 5}}}, 5, 0},
		{"row offset older than the batch's events", []step{{events: []uint64{8}, row: 6}}, 8, 0},
		{"reset above the events", []step{{events: []uint64{1, 2, 9}}, {reset: 9}}, 9, 9},
		{"reset then the new agent's events, one transaction", []step{{events: []uint64{1, 2}, reset: 2, after: []uint64{3, 4}}}, 4, 2},
		{"reset then the new agent's events", []step{{events: []uint64{7}}, {reset: 7}, {events: []uint64{8}}}, 8, 7},
		{"two resets", []step{{events: []uint64{3}, reset: 3}, {events: []uint64{4}, reset: 4}, {events: []uint64{5, 6}}}, 6, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t)
			sess, err := s.CreateSession(ctx, session.Session{TaskID: mustTask(t, s).ID, AgentProfileID: "demo", Cwd: "/tmp/ws"},
				session.Executor{Runtime: session.RuntimeDetached, Host: "local"})
			if err != nil {
				t.Fatal(err)
			}
			seq, id := int64(0), int64(0)
			events := func(offs []uint64) []store.Event {
				var evs []store.Event
				for _, off := range offs {
					seq++
					id++
					evs = append(evs, store.Event{ID: id, SessionID: sess.ID, Seq: seq, Type: "message.chunk",
						Payload: []byte(`{}`), Time: time.Now(), HostOffset: off})
				}
				return evs
			}
			for _, st := range c.steps {
				err := s.Tx(ctx, func(tx *store.Store) error {
					if err := tx.AppendEvents(ctx, events(st.events)); err != nil {
						return err
					}
					if st.row != 0 {
						if err := tx.SetExecutorOffset(ctx, sess.ID, st.row); err != nil {
							return err
						}
					}
					if st.reset != 0 {
						if err := tx.ResetExecutorOffset(ctx, sess.ID, st.reset); err != nil {
							return err
						}
					}
					return tx.AppendEvents(ctx, events(st.after))
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			check := func(how string, e session.Executor) {
				t.Helper()
				if e.HostOffset != c.want || e.HostOffsetBase != c.base {
					t.Errorf("%s: got offset %d base %d, want %d %d", how, e.HostOffset, e.HostOffsetBase, c.want, c.base)
				}
			}
			e, err := s.GetExecutor(ctx, sess.ID)
			if err != nil {
				t.Fatal(err)
			}
			check("GetExecutor", e)
			m, err := s.ExecutorsOf(ctx, []string{sess.ID})
			if err != nil {
				t.Fatal(err)
			}
			check("ExecutorsOf", m[sess.ID])
			all, err := s.ListExecutorsByStatus(ctx)
			if err != nil || len(all) != 1 {
				t.Fatalf("ListExecutorsByStatus: got %d rows, %v, want 1", len(all), err)
			}
			check("ListExecutorsByStatus", all[0])
		})
	}
}
