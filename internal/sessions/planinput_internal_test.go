package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
)

// planStore is a real SQLite store with one session, for plan input tests.
type planStore struct {
	st  *store.Store
	dir string
	sid string
	t0  time.Time
}

func openPlanStore(tb testing.TB) *planStore {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	st := storetest.Open(tb, dir)
	task, err := st.CreateTask(ctx, session.Task{Title: "t", Workspace: "/"})
	if err != nil {
		tb.Fatal(err)
	}
	sess, err := st.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: "/",
		State: session.SessionWaitingForInput}, session.Executor{})
	if err != nil {
		tb.Fatal(err)
	}
	return &planStore{st: st, dir: dir, sid: sess.ID, t0: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// turn records a turn; started is its start in minutes after t0 (0: never
// started). Ran turns get a user message, an agent reply and a tool call.
func (p *planStore) turn(tb testing.TB, id string, state session.TurnState, started int, edit func(*session.Turn)) {
	tb.Helper()
	ctx := context.Background()
	prompt, _ := json.Marshal([]map[string]any{{"type": "text", "text": "do " + id}})
	t := session.Turn{SessionID: p.sid, PromptID: id, Kind: session.TurnPrompt, State: state, Prompt: prompt}
	if started > 0 {
		at := p.t0.Add(time.Duration(started) * time.Minute)
		t.StartedAt = &at
	}
	if edit != nil {
		edit(&t)
	}
	if _, err := p.st.CreateTurn(ctx, t); err != nil {
		tb.Fatal(err)
	}
	if started == 0 {
		return
	}
	p.message(tb, id, session.RoleUser, "do "+id)
	p.message(tb, id, session.RoleAgent, "working on "+id)
	if _, err := p.st.UpsertToolCall(ctx, session.ToolCall{SessionID: p.sid, PromptID: id, ToolCallID: "tc-" + id,
		Title: "read " + id, Kind: "read", Status: session.ToolCompleted}); err != nil {
		tb.Fatal(err)
	}
}

func (p *planStore) message(tb testing.TB, promptID string, role session.MessageRole, text string) {
	tb.Helper()
	if _, err := p.st.AddMessage(context.Background(), session.Message{SessionID: p.sid, PromptID: promptID, Role: role, Text: text}); err != nil {
		tb.Fatal(err)
	}
}

// history records n completed turns.
func (p *planStore) history(tb testing.TB, n int) {
	tb.Helper()
	for i := 1; i <= n; i++ {
		p.turn(tb, fmt.Sprintf("h%d", i), session.TurnCompleted, i, nil)
	}
}

// exec runs SQL on the database file behind the store's back, as an edit
// while tetherd is stopped would.
func (p *planStore) exec(tb testing.TB, query string, args ...any) {
	tb.Helper()
	storetest.Exec(tb, p.dir, query, args...)
}

// fullPlanInput is the plan input read from the whole transcript (how
// every plan was read before the bounded reads): the oracle.
func fullPlanInput(tb testing.TB, r *store.Store, sessionID string) session.PlanInput {
	tb.Helper()
	ctx := context.Background()
	var in session.PlanInput
	s, err := r.GetSession(ctx, sessionID)
	if err != nil {
		tb.Fatal(err)
	}
	in.State, in.ContextLost, in.QueueHeld = s.State, s.ContextLost, s.QueueHeld
	if in.Turns, err = r.ListTurns(ctx, sessionID); err != nil {
		tb.Fatal(err)
	}
	if in.Messages, err = r.ListMessages(ctx, sessionID); err != nil {
		tb.Fatal(err)
	}
	if in.ToolCalls, err = r.ListToolCalls(ctx, sessionID); err != nil {
		tb.Fatal(err)
	}
	if in.Permissions, err = r.ListPermissions(ctx, sessionID, session.PermissionPending); err != nil {
		tb.Fatal(err)
	}
	return in
}

func interrupted(reason string) func(*session.Turn) {
	return func(t *session.Turn) { t.InterruptReason = reason }
}

// TestPlanInputPlansAsTheWholeTranscript: the bounded plan input gives the
// same plan and the same continuation prompt as the whole transcript, for
// every shape of session end.
func TestPlanInputPlansAsTheWholeTranscript(t *testing.T) {
	cases := []struct {
		name  string
		build func(t *testing.T, p *planStore)
	}{
		{"empty", func(t *testing.T, p *planStore) {}},
		{"only_queued", func(t *testing.T, p *planStore) {
			p.turn(t, "q1", session.TurnQueued, 0, nil)
			p.turn(t, "q2", session.TurnQueued, 0, nil)
		}},
		{"clean_after_history", func(t *testing.T, p *planStore) { p.history(t, 30) }},
		{"interrupted_turn_with_dangling_tools", func(t *testing.T, p *planStore) {
			p.history(t, 20)
			p.turn(t, "p", session.TurnInterrupted, 21, interrupted("agent_exited"))
			p.message(t, "p", session.RoleAgent, "second part")
			ctx := context.Background()
			for _, st := range []session.ToolCallStatus{session.ToolPending, session.ToolInProgress} {
				if _, err := p.st.UpsertToolCall(ctx, session.ToolCall{SessionID: p.sid, PromptID: "p",
					ToolCallID: "d-" + string(st), Title: "edit", Kind: "edit", Status: st}); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := p.st.AppendMessageChunk(ctx, p.sid, "p", session.RoleAgent, " and a streamed tail"); err != nil {
				t.Fatal(err)
			}
		}},
		{"interrupted_prompt_not_delivered", func(t *testing.T, p *planStore) {
			p.history(t, 5)
			p.turn(t, "p", session.TurnInterrupted, 0, interrupted("daemon_restart"))
		}},
		{"interrupted_prompt_delivered", func(t *testing.T, p *planStore) {
			p.history(t, 5)
			p.turn(t, "p", session.TurnInterrupted, 0, func(tr *session.Turn) {
				tr.InterruptReason = "agent_exited"
				at := p.t0.Add(time.Hour)
				tr.DeliveredAt, tr.StartedAt = &at, &at
			})
		}},
		{"cancel_requested_is_clean", func(t *testing.T, p *planStore) {
			p.history(t, 5)
			p.turn(t, "p", session.TurnInterrupted, 6, func(tr *session.Turn) { tr.CancelRequested = true })
		}},
		{"running_with_queue", func(t *testing.T, p *planStore) {
			p.history(t, 10)
			p.turn(t, "r", session.TurnRunning, 11, nil)
			p.turn(t, "q1", session.TurnQueued, 0, nil)
			p.turn(t, "q2", session.TurnQueued, 0, nil)
		}},
		{"withdrawn_and_cancelled_after_interrupted", func(t *testing.T, p *planStore) {
			p.history(t, 10)
			p.turn(t, "p", session.TurnInterrupted, 11, interrupted("agent_exited"))
			p.turn(t, "w1", session.TurnCancelled, 0, func(tr *session.Turn) { tr.StopReason = session.Withdrawn })
			p.turn(t, "w2", session.TurnCancelled, 0, func(tr *session.Turn) { tr.StopReason = session.Withdrawn })
		}},
		{"cancelled_queued_turn_is_last", func(t *testing.T, p *planStore) {
			p.history(t, 10)
			p.turn(t, "p", session.TurnInterrupted, 11, interrupted("agent_exited"))
			p.turn(t, "c", session.TurnCancelled, 0, nil)
		}},
		{"held_queue_ran_after_continuation", func(t *testing.T, p *planStore) {
			// A continuation (seq 13) ran before the turns held since a
			// restart (11, 12), which started after it: 12 started last.
			p.history(t, 10)
			p.turn(t, "h-a", session.TurnCompleted, 30, nil)
			p.turn(t, "h-b", session.TurnInterrupted, 40, interrupted("agent_exited"))
			p.turn(t, "cont", session.TurnCompleted, 20, func(tr *session.Turn) { tr.Kind = session.TurnContinue })
		}},
		{"held_queue_waiting", func(t *testing.T, p *planStore) {
			p.history(t, 10)
			p.turn(t, "p", session.TurnInterrupted, 11, interrupted("daemon_restart"))
			p.turn(t, "q1", session.TurnQueued, 0, nil)
			p.exec(t, `UPDATE sessions SET queue_held = 1 WHERE id = ?`, p.sid)
		}},
		{"context_lost", func(t *testing.T, p *planStore) {
			p.history(t, 3)
			p.turn(t, "p", session.TurnInterrupted, 4, interrupted("agent_exited"))
			p.exec(t, `UPDATE sessions SET context_lost = 1 WHERE id = ?`, p.sid)
		}},
		{"gap_missing_early_turn", func(t *testing.T, p *planStore) {
			p.history(t, 10)
			p.turn(t, "p", session.TurnInterrupted, 11, interrupted("agent_exited"))
			p.exec(t, `DELETE FROM turns WHERE session_id = ? AND seq = 2`, p.sid)
		}},
		{"gap_missing_turn_before_window", func(t *testing.T, p *planStore) {
			p.history(t, 10)
			p.turn(t, "p", session.TurnInterrupted, 11, interrupted("agent_exited"))
			p.exec(t, `DELETE FROM turns WHERE session_id = ? AND seq = 10`, p.sid)
		}},
		{"gap_message_of_unknown_turn", func(t *testing.T, p *planStore) {
			p.history(t, 10)
			p.message(t, "ghost", session.RoleAgent, "from nowhere")
			p.turn(t, "p", session.TurnInterrupted, 11, interrupted("agent_exited"))
		}},
		{"gap_tool_call_of_unknown_turn", func(t *testing.T, p *planStore) {
			p.history(t, 10)
			if _, err := p.st.UpsertToolCall(context.Background(), session.ToolCall{SessionID: p.sid, PromptID: "ghost",
				ToolCallID: "g", Title: "x", Status: session.ToolCompleted}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := openPlanStore(t)
			tc.build(t, p)
			ctx := context.Background()
			full := fullPlanInput(t, p.st, p.sid)
			bounded, err := readPlanInput(ctx, p.st, p.sid, newHistoryChecks())
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range []*session.PlanInput{&full, &bounded} {
				in.AgentAvailable = true
			}
			want, got := session.Plan(full), session.Plan(bounded)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("plan from the bounded input:\n got %+v\nwant %+v", got, want)
			}
			if g, w := string(session.Continuation(got, bounded)), string(session.Continuation(want, full)); g != w {
				t.Errorf("continuation from the bounded input:\n got %s\nwant %s", g, w)
			}
		})
	}
}

// TestPlanInputIsBounded: the plan input of a long session holds its last
// turn and that turn's output, not the transcript.
func TestPlanInputIsBounded(t *testing.T) {
	p := openPlanStore(t)
	p.history(t, 200)
	p.turn(t, "p", session.TurnInterrupted, 201, interrupted("agent_exited"))
	p.turn(t, "q", session.TurnQueued, 0, nil)
	in, err := readPlanInput(context.Background(), p.st, p.sid, newHistoryChecks())
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Turns) != 2 || in.Earlier != 200 {
		t.Errorf("turns: got %d after %d earlier, want 2 after 200", len(in.Turns), in.Earlier)
	}
	for _, m := range in.Messages {
		if m.PromptID != "p" {
			t.Errorf("got a message of turn %q, want only the last turn's (p)", m.PromptID)
		}
	}
	if len(in.Messages) != 2 || len(in.ToolCalls) != 1 {
		t.Errorf("got %d messages and %d tool calls, want the last turn's 2 and 1", len(in.Messages), len(in.ToolCalls))
	}
}

// TestPlanInsideAWriteCompilesNothing: the plan made in the writer's
// transaction at every turn boundary runs statements prepared once on the
// pool; none of them is compiled again in each transaction.
func TestPlanInsideAWriteCompilesNothing(t *testing.T) {
	p := openPlanStore(t)
	p.history(t, 3)
	p.turn(t, "p", session.TurnInterrupted, 4, interrupted("agent_exited"))
	p.turn(t, "q", session.TurnQueued, 0, nil)
	ctx := context.Background()
	before := p.st.TransactionStatements()
	for range 2 {
		if err := p.st.Tx(ctx, func(tx *store.Store) error {
			_, err := readPlanInput(ctx, tx, p.sid, nil)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.st.TransactionStatements() - before; got != 0 {
		t.Errorf("got %d statements compiled per transaction by the plan, want 0", got)
	}
}
