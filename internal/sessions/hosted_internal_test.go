package sessions

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// fakeHost is a HostRuntime over the fake runtime: its agents "live on a
// host", so a daemon restart finds them again by attaching.
type fakeHost struct {
	*fakeRuntime
	// attaches receives each attach, with the agent it returned.
	attaches chan fakeAttach
	// onAttach, if set, runs in Attach before it returns, with the new
	// handler (the host replays its outbox then).
	onAttach func(h acp.Handler)
	// live is the agent a restart attaches to.
	live *fakeAgent
}

type fakeAttach struct {
	req   runtimes.AttachRequest
	agent *fakeAgent
}

func (h *fakeHost) Attach(_ context.Context, req runtimes.AttachRequest) (runtimes.Agent, error) {
	a := h.live
	a.h = req.Handler
	if h.onAttach != nil {
		h.onAttach(req.Handler)
	}
	h.attaches <- fakeAttach{req: req, agent: a}
	return &turnAgent{a}, nil
}

// Unavailable: the fake host is always there.
func (h *fakeHost) Unavailable() error { return nil }

// Start wraps the started agent so that it prompts by turn, as a host's
// agent does.
func (h *fakeHost) Start(ctx context.Context, req runtimes.StartRequest) (runtimes.Agent, error) {
	a, err := h.fakeRuntime.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	return &turnAgent{a.(*fakeAgent)}, nil
}

// turnAgent is a fake agent that prompts by turn id and, after a restart,
// answers the same turn again instead of starting a second one.
type turnAgent struct{ *fakeAgent }

func (a *turnAgent) PromptTurn(ctx context.Context, sessionID, turnID string, prompt json.RawMessage, sent func()) (string, error) {
	a.record("prompt " + turnID)
	return a.PromptNotify(ctx, sessionID, prompt, sent)
}

// fakeExecutors runs every session on the fake host.
type fakeExecutors struct{ host *fakeHost }

func (x fakeExecutors) Choose(string, string) (session.Runtime, string, error) {
	return session.RuntimeDetached, "local", nil
}
func (x fakeExecutors) Runtime(session.Runtime, string) (runtimes.Runtime, error) { return x.host, nil }
func (x fakeExecutors) Hosts(context.Context) []runtimes.ExecutorHost             { return nil }

// TestHostedRestartResumesTheTurn: a hosted agent's turn survives a daemon
// restart. Each record's offset is committed with its chunk; the restart
// attaches from the last committed one; what the host replays before the
// attach even answers belongs to the running turn; the prompt goes again
// under the same turn id, and the turn completes with every chunk once.
func TestHostedRestartResumesTheTurn(t *testing.T) {
	r := newFakeRig(t)
	host := &fakeHost{fakeRuntime: r.rt, attaches: make(chan fakeAttach, 4)}
	r.mgr = New(r.st, r.w, fakeProfiles{}, Config{Runtime: r.rt, Executors: fakeExecutors{host}, Logger: slog.New(slog.DiscardHandler)})
	s := r.readySession(t)
	host.live = s.agent
	res := s.prompt(t, "stream")
	p := s.agent.prompt(t)
	for i, text := range []string{"one ", "two "} {
		u := chunk(text, "")
		u.Offset = uint64(i + 1)
		s.agent.update(t, u)
	}
	ex, err := r.st.GetExecutor(context.Background(), s.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ex.HostOffset != 2 || ex.Runtime != session.RuntimeDetached {
		t.Fatalf("executor after two records: got offset %d runtime %s, want 2 detached", ex.HostOffset, ex.Runtime)
	}

	// The daemon goes away: a hosted agent is not stopped.
	r.mgr.Shutdown(context.Background())
	if n := s.agent.stopped(); n != 0 {
		t.Fatalf("shutdown stopped the hosted agent %d times, want 0", n)
	}
	p.answer("") // the first daemon's wait is gone; nobody reads this
	host.onAttach = func(h acp.Handler) {
		// Replayed from the outbox before the attach is answered.
		u := chunk("three", "")
		u.Offset = 3
		h.Update(u, func() {})
	}
	r.mgr = New(r.st, r.w, fakeProfiles{}, Config{Runtime: r.rt, Executors: fakeExecutors{host}, Logger: slog.New(slog.DiscardHandler)})
	rec, err := r.mgr.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.InterruptedTurns != 0 || rec.Reattached != 1 {
		t.Fatalf("reconcile: got %+v, want nothing interrupted and one session reattached", rec)
	}
	at := recv(t, host.attaches, "the restart did not attach")
	if at.req.From != 2 {
		t.Errorf("attach from: got %d, want 2 (the last committed record)", at.req.From)
	}
	again := s.agent.prompt(t)
	again.answer("end_turn")
	s.subscribe(t)
	waitTurnState(t, r, s.sess.ID, res.Turn.PromptID, session.TurnCompleted)

	if calls := strings.Join(s.agent.called(), ","); strings.Count(calls, "prompt "+res.Turn.PromptID) != 2 {
		t.Errorf("calls: got %s, want the turn prompted twice under its id (once per daemon)", calls)
	}
	msgs, err := r.st.ListMessages(context.Background(), s.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, m := range msgs {
		if m.Role == session.RoleAgent {
			text.WriteString(m.Text)
		}
	}
	if got := text.String(); got != "one two three" {
		t.Errorf("agent text: got %q, want every chunk once, in order", got)
	}
	evs, err := r.st.ListSessionEvents(context.Background(), s.sess.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == events.TurnInterrupted {
			t.Errorf("got %s, want no interruption", e.Type)
		}
	}
}

// waitTurnState waits until the turn is in state want.
func waitTurnState(t *testing.T, r *fakeRig, sessionID, promptID string, want session.TurnState) {
	t.Helper()
	for {
		got, err := r.st.GetTurn(context.Background(), sessionID, promptID)
		if err == nil && got.State == want {
			return
		}
		select {
		case <-testDeadline(t):
			t.Fatalf("turn %s: got %s, want %s", promptID, got.State, want)
		default:
		}
		syncWriter(t, r)
	}
}

// syncWriter waits for the writer to commit what it has.
func syncWriter(t *testing.T, r *fakeRig) {
	t.Helper()
	if _, err := r.w.Do(context.Background(), func(*store.Store, events.Emit) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestResumeOutput: after a restart the running turn's next chunk goes on
// with the message the log shows it was writing, unless something that
// ends a message came after it.
func TestResumeOutput(t *testing.T) {
	msg := func(typ string, id int64, role session.MessageRole) turnOutput {
		b, _ := json.Marshal(map[string]any{"messageId": id, "role": role, "text": "x"})
		return turnOutput{typ: typ, payload: b}
	}
	withAdded := func(out turnOutput, id int64, agentID string) turnOutput {
		out.added, _ = json.Marshal(map[string]any{"messageId": id, "role": session.RoleAgent, "agentMessageId": agentID})
		return out
	}
	tests := []struct {
		name      string
		out       turnOutput
		wantOpen  int64
		wantRole  session.MessageRole
		wantSplit bool
		wantMsgID string
	}{
		{name: "no output yet", out: turnOutput{}},
		{name: "an agent message's chunk", out: msg(events.MessageChunk, 7, session.RoleAgent), wantOpen: 7, wantRole: session.RoleAgent},
		{name: "a thought started", out: msg(events.MessageAdded, 8, session.RoleThought), wantOpen: 8, wantRole: session.RoleThought},
		{name: "the user's prompt is not reopened", out: msg(events.MessageAdded, 9, session.RoleUser)},
		{name: "a tool call after the message", out: turnOutput{typ: events.ToolCallStarted, payload: json.RawMessage(`{}`)}, wantSplit: true},
		{name: "a permission request after it", out: turnOutput{typ: events.PermissionRequested, payload: json.RawMessage(`{}`)}, wantSplit: true},
		{name: "a payload that does not decode", out: turnOutput{typ: events.MessageChunk, payload: json.RawMessage(`[`)}},
		{name: "the agent's messageId of the open message", out: withAdded(msg(events.MessageChunk, 7, session.RoleAgent), 7, "m-1"),
			wantOpen: 7, wantRole: session.RoleAgent, wantMsgID: "m-1"},
		{name: "the messageId of another message is not taken", out: withAdded(msg(events.MessageChunk, 7, session.RoleAgent), 6, "m-0"),
			wantOpen: 7, wantRole: session.RoleAgent},
		{name: "no messageId of a tool call's turn", out: withAdded(turnOutput{typ: events.ToolCallStarted, payload: json.RawMessage(`{}`)}, 7, "m-1"),
			wantSplit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &turnRun{}
			r.resumeOutput(tt.out)
			if r.openMsg != tt.wantOpen || r.openRole != tt.wantRole || r.split != tt.wantSplit || r.msgID != tt.wantMsgID {
				t.Errorf("got open %d %q, split %v, messageId %q; want %d %q, %v, %q",
					r.openMsg, r.openRole, r.split, r.msgID, tt.wantOpen, tt.wantRole, tt.wantSplit, tt.wantMsgID)
			}
		})
	}
}

// TestHostedRecordsWithoutEffectCommitted: a hosted agent's records that
// change nothing in the store (usage updates, output after the turn, a
// record that brings no update at all) have their offsets committed all
// the same, each before its done: the host drops what done acknowledges,
// and a restart attaches after the offset the store holds, so a record
// acknowledged and not committed left a gap ("executor host skipped
// records", issue 28).
func TestHostedRecordsWithoutEffectCommitted(t *testing.T) {
	r := newFakeRig(t)
	host := &fakeHost{fakeRuntime: r.rt, attaches: make(chan fakeAttach, 4)}
	r.mgr = New(r.st, r.w, fakeProfiles{}, Config{Runtime: r.rt, Executors: fakeExecutors{host}, Logger: slog.New(slog.DiscardHandler)})
	s := r.readySession(t)
	res := s.prompt(t, "usage")
	p := s.agent.prompt(t)
	offset := func() uint64 {
		t.Helper()
		ex, err := r.st.GetExecutor(context.Background(), s.sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		return ex.HostOffset
	}
	u := chunk("reply", "")
	u.Offset = 1
	s.agent.update(t, u)
	for off := uint64(2); off <= 3; off++ {
		s.agent.update(t, acp.Update{Kind: acp.UpdateUsage, Offset: off, Data: json.RawMessage(`{"used":1,"size":2}`)})
		if got := offset(); got != off {
			t.Fatalf("after usage update %d was done: got committed offset %d, want %d", off, got, off)
		}
	}
	p.answer("end_turn")
	waitTurnState(t, r, s.sess.ID, res.Turn.PromptID, session.TurnCompleted)
	late := chunk("after the turn", "")
	late.Offset = 4
	s.agent.update(t, late)
	if got := offset(); got != 4 {
		t.Fatalf("after output past its turn was done: got committed offset %d, want 4", got)
	}
	done := make(chan struct{})
	s.agent.h.(interface{ Record(uint64, func()) }).Record(5, func() { close(done) })
	recv(t, done, "the record was never done")
	if got := offset(); got != 5 {
		t.Fatalf("after a record without an update was done: got committed offset %d, want 5", got)
	}
}
