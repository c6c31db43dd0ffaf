package session_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/session"
)

// ev numbers payloads as a log would, from 1.
func ev(ps ...session.EventPayload) []session.Event {
	out := make([]session.Event, len(ps))
	for i, p := range ps {
		out[i] = session.Event{Seq: int64(i + 1), At: time.Unix(int64(i), 0), Payload: p}
	}
	return out
}

func common(promptID string) session.EventCommon {
	return session.EventCommon{SessionID: "s", TaskID: "t", PromptID: promptID}
}

func TestFoldATurn(t *testing.T) {
	end := time.Unix(100, 0)
	st, err := session.Fold(ev(
		&session.SessionCreatedData{EventCommon: common(""), AgentProfileID: "demo", Cwd: "/w", State: session.SessionCreated},
		&session.TurnQueuedData{EventCommon: common("p1"), Kind: session.TurnPrompt, Seq: 1, Prompt: json.RawMessage(`[]`)},
		&session.TurnQueuedData{EventCommon: common("p2"), Kind: session.TurnPrompt, Seq: 2, Prompt: json.RawMessage(`[]`)},
		&session.SessionStateChangedData{EventCommon: common(""), State: session.SessionRunning},
		&session.TurnStartedData{EventCommon: common("p1"), Kind: session.TurnPrompt},
		&session.TurnDeliveredData{EventCommon: common("p1"), DeliveredAt: &end},
		&session.MessageAddedData{EventCommon: common("p1"), MessageID: 7, Role: session.RoleAgent, Text: "Hel", AgentMessageID: "m1"},
		&session.MessageChunkData{EventCommon: common("p1"), MessageID: 7, Role: session.RoleAgent, Text: "lo"},
		&session.ToolCallData{EventCommon: common("p1"), ToolCallID: "c1", Title: "read", Status: session.ToolPending},
		&session.PermissionRequestedData{EventCommon: common("p1"), RequestID: "r1", ToolCallID: "c1"},
		&session.PermissionRequestedData{EventCommon: common("p1"), RequestID: "r2", ToolCallID: "c1"},
		&session.PermissionResolvedData{EventCommon: common("p1"), RequestID: "r1", State: session.PermissionSelected, OptionID: "allow"},
		&session.ToolCallData{EventCommon: common("p1"), ToolCallID: "c1", Title: "read", Status: session.ToolCompleted},
		// Another ACP session's c1 (the agent numbers from the start
		// again): another call, p2's.
		&session.ToolCallStartedData{ToolCallData: session.ToolCallData{EventCommon: common("p2"), ToolCallID: "c1", Title: "edit",
			Status: session.ToolPending}},
		&session.PlanUpdatedData{EventCommon: common("p1"), Entries: json.RawMessage(`[{"content":"x"}]`)},
		&session.TurnCancelRequestedData{EventCommon: common("p1")},
		&session.TurnInterruptedData{EventCommon: common("p1"), State: session.TurnInterrupted, EndedAt: &end, Reason: "agent_exited", Code: "c", Message: "m"},
		&session.TurnCancelledData{EventCommon: common("p2"), State: session.TurnCancelled, EndedAt: &end, StopReason: session.Withdrawn, Reason: session.Withdrawn},
		&session.SessionQueueHeldData{EventCommon: common(""), Held: true},
		&session.TurnWorkspaceChangesData{EventCommon: common("p1"), Changes: session.WorkspaceChanges{Files: []session.ChangedFile{{Path: "a.go", Status: "modified"}}}},
		&session.SessionResumedData{EventCommon: common(""), Strategy: session.StrategyFresh},
	))
	if err != nil {
		t.Fatalf("fold: %v", err)
	}
	if got, want := st.Seq, int64(21); got != want {
		t.Errorf("seq: got %d, want %d", got, want)
	}
	if got, want := st.Session.State, session.SessionRunning; got != want {
		t.Errorf("session state: got %s, want %s", got, want)
	}
	if len(st.Turns) != 2 || st.Turns[0].PromptID != "p1" || st.Turns[1].PromptID != "p2" {
		t.Fatalf("turns: got %+v, want p1 then p2", st.Turns)
	}
	p1 := st.Turn("p1")
	if p1.State != session.TurnInterrupted || p1.InterruptReason != "agent_exited" || p1.ErrorCode != "c" || p1.StartedAt == nil {
		t.Errorf("p1: got %+v, want interrupted by agent_exited with code c, started", *p1)
	}
	if !p1.CancelRequested || !strings.Contains(string(p1.WorkspaceChanges), `"a.go"`) {
		t.Errorf("p1: got cancel requested %v, workspace changes %s; want the cancel and a.go", p1.CancelRequested, p1.WorkspaceChanges)
	}
	if p1.DeliveredAt == nil || !p1.DeliveredAt.Equal(end) {
		t.Errorf("p1 delivered at: got %v, want %v", p1.DeliveredAt, end)
	}
	if !st.Session.QueueHeld || !st.Session.ContextLost || st.Session.InjectContext {
		t.Errorf("session flags: got held %v, context lost %v, inject %v; want held, lost, no injection",
			st.Session.QueueHeld, st.Session.ContextLost, st.Session.InjectContext)
	}
	if p2 := st.Turn("p2"); p2.State != session.TurnCancelled || p2.StopReason != session.Withdrawn || p2.StartedAt != nil {
		t.Errorf("p2: got %+v, want withdrawn, never started", *p2)
	}
	if len(st.Messages) != 1 || st.Messages[0].Text != "Hello" || st.AgentMessageIDs[7] != "m1" {
		t.Errorf("messages: got %+v (agent ids %v), want one Hello with agent id m1", st.Messages, st.AgentMessageIDs)
	}
	wantCalls := []session.ToolCallKey{{PromptID: "p1", ToolCallID: "c1"}, {PromptID: "p2", ToolCallID: "c1"}}
	if len(st.ToolCalls) != 2 || st.ToolCalls[0].Key() != wantCalls[0] || st.ToolCalls[1].Key() != wantCalls[1] ||
		st.ToolCalls[0].Status != session.ToolCompleted || st.ToolCalls[0].Title != "read" ||
		st.ToolCalls[1].Status != session.ToolPending || st.ToolCalls[1].Title != "edit" {
		t.Errorf("tool calls: got %+v, want p1's c1 read completed, then p2's c1 edit pending", st.ToolCalls)
	}
	if pend := st.PendingPermissions(); len(pend) != 1 || pend[0].ID != "r2" {
		t.Errorf("pending permissions: got %+v, want r2", pend)
	}
	if got, want := string(st.Plan), `[{"content":"x"}]`; got != want {
		t.Errorf("plan: got %s, want %s", got, want)
	}
}

func TestFoldRefusesWhatNoLogHolds(t *testing.T) {
	cases := []struct {
		name   string
		events []session.Event
		want   string
	}{
		{"turn never queued", ev(&session.TurnStartedData{EventCommon: common("p")}), "never queued"},
		{"turn queued twice", ev(&session.TurnQueuedData{EventCommon: common("p")}, &session.TurnQueuedData{EventCommon: common("p")}), "queued twice"},
		{"chunk without message", ev(&session.MessageChunkData{EventCommon: common("p"), MessageID: 3}), "no message.added"},
		{"message added twice", ev(&session.MessageAddedData{MessageID: 3}, &session.MessageAddedData{MessageID: 3}), "added twice"},
		{"permission resolved, never asked", ev(&session.PermissionResolvedData{RequestID: "r"}), "never requested"},
		{"event repeated", []session.Event{{Seq: 1, Payload: &session.PlanUpdatedData{}}, {Seq: 1, Payload: &session.PlanUpdatedData{}}}, "folded after"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := session.Fold(tc.events)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestFoldSessionContext(t *testing.T) {
	cases := []struct {
		name                 string
		events               []session.Event
		wantInject, wantLost bool
		wantInjected         bool
	}{
		{"native resume restores the context", ev(&session.SessionResumedData{Strategy: session.StrategyNativeResume, ContextRestored: true}), false, false, false},
		{"a fresh session lost it", ev(&session.SessionResumedData{Strategy: session.StrategyFresh}), false, true, false},
		{"history injection owes it once", ev(&session.SessionResumedData{Strategy: session.StrategyHistoryInjection}), true, false, false},
		{"the next prompt carries it", ev(&session.SessionResumedData{Strategy: session.StrategyHistoryInjection},
			&session.TurnQueuedData{EventCommon: common("p")},
			&session.TurnStartedData{EventCommon: common("p"), ContextInjected: true}), false, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := session.Fold(tc.events)
			if err != nil {
				t.Fatalf("fold: %v", err)
			}
			if st.Session.InjectContext != tc.wantInject || st.Session.ContextLost != tc.wantLost {
				t.Errorf("got inject %v lost %v, want inject %v lost %v", st.Session.InjectContext, st.Session.ContextLost, tc.wantInject, tc.wantLost)
			}
			if got := st.Turn("p") != nil && st.Turn("p").ContextInjected; got != tc.wantInjected {
				t.Errorf("turn context injected: got %v, want %v", got, tc.wantInjected)
			}
		})
	}
}

// A message streams in thousands of chunks: folding one must not copy the
// message so far (a string append would, making a fold quadratic in the
// message's length). Counted in allocations, which do not depend on the
// machine's speed: a copy per chunk is an allocation per chunk.
func TestFoldAppendsChunksInPlace(t *testing.T) {
	const chunks = 10000
	ps := []session.EventPayload{&session.TurnQueuedData{EventCommon: common("p")}, &session.TurnStartedData{EventCommon: common("p")},
		&session.MessageAddedData{EventCommon: common("p"), MessageID: 1, Role: session.RoleAgent}}
	for range chunks {
		ps = append(ps, &session.MessageChunkData{EventCommon: common("p"), MessageID: 1, Text: "0123456789"})
	}
	evs := ev(ps...)
	var st *session.State
	allocs := testing.AllocsPerRun(1, func() {
		var err error
		if st, err = session.Fold(evs); err != nil {
			t.Fatal(err)
		}
	})
	if got := len(st.Messages[0].Text); got != chunks*10 {
		t.Fatalf("text: got %d bytes, want %d", got, chunks*10)
	}
	if allocs > chunks/10 {
		t.Errorf("folding %d chunks of one message: got %.0f allocations, want far fewer than one per chunk", chunks, allocs)
	}
}

// TestRecentKeepsEachTurnsToolCalls: a Recent state (the session actor's)
// keeps the latest started turn's tool calls. An older turn's call with
// the same id (its agent's ACP session numbered from tool-1 too), updated
// late, is that turn's: it neither replaces nor joins the latest turn's.
func TestRecentKeepsEachTurnsToolCalls(t *testing.T) {
	started := func(sec int64) *time.Time { at := time.Unix(sec, 0); return &at }
	turns := []session.Turn{
		{SessionID: "s", PromptID: "p1", Seq: 1, State: session.TurnInterrupted, StartedAt: started(1)},
		{SessionID: "s", PromptID: "p2", Seq: 2, State: session.TurnRunning, StartedAt: started(2)},
	}
	mine := session.ToolCall{SessionID: "s", PromptID: "p2", ToolCallID: "tool-1", Title: "Read README.md", Status: session.ToolInProgress}
	st := session.Seed(session.Session{ID: "s", State: session.SessionRunning}, turns, nil, []session.ToolCall{mine}, nil, 10)
	for i, p := range []session.EventPayload{
		&session.ToolCallData{EventCommon: common("p2"), ToolCallID: "tool-1", Title: "Read README.md", Status: session.ToolCompleted},
		// p1's tool-1, late: left out (not the latest turn's).
		&session.ToolCallData{EventCommon: common("p1"), ToolCallID: "tool-1", Title: "Run failing tool", Status: session.ToolFailed},
	} {
		if err := st.Evolve(session.Event{Seq: int64(11 + i), At: time.Unix(int64(20+i), 0), Payload: p}); err != nil {
			t.Fatalf("evolve: %v", err)
		}
	}
	in := st.PlanInput()
	if len(in.ToolCalls) != 1 || in.ToolCalls[0].Key() != mine.Key() || in.ToolCalls[0].Status != session.ToolCompleted ||
		in.ToolCalls[0].Title != "Read README.md" {
		t.Errorf("plan input tool calls: got %+v, want p2's tool-1 only, completed", in.ToolCalls)
	}
}
