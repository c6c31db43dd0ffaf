package sessions

import (
	"context"
	"sync"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Recovery plan input. A plan is made 2–3 times per turn boundary inside
// the single writer's transaction (recoveryPushed) and on every /context
// and /continue, so it must not read the transcript: it reads the recent
// turns and the output of the one turn that matters by index seeks
// (store.RecentTurns, ListTurnMessages, ListTurnToolCalls) and takes the
// whole-history check from historyChecks. The store stays the one source
// of truth, so a plan made inside a write sees exactly what the session's
// earlier writes left, and a redone batch plans the same.

// planInput reads what the planner needs in one snapshot.
func (m *Manager) planInput(ctx context.Context, sessionID string) (session.PlanInput, error) {
	var in session.PlanInput
	err := m.store.Snapshot(ctx, func(r *store.Store) error {
		var err error
		in, err = readPlanInput(ctx, r, sessionID, m.history)
		return err
	})
	return in, err
}

// readPlanInput reads the plan input from r: the session's flags, its
// recent turns, the messages and tool calls of the turn a continuation
// would pick up, the pending permissions and the history check (from h,
// or made now when h is nil). Its cost does not grow with the transcript.
func readPlanInput(ctx context.Context, r *store.Store, sessionID string, h *historyChecks) (session.PlanInput, error) {
	var in session.PlanInput
	s, err := r.GetSessionFlags(ctx, sessionID)
	if err != nil {
		return in, err
	}
	in.State, in.ContextLost, in.QueueHeld, in.OverBudget = s.State, s.ContextLost, s.QueueHeld, s.OverBudget
	if in.Turns, in.Earlier, err = r.RecentTurns(ctx, sessionID); err != nil {
		return in, err
	}
	if in.Gap, err = h.check(ctx, r, sessionID); err != nil {
		return in, err
	}
	if last := session.LastRun(in.Turns); last != nil {
		if in.Messages, err = r.ListTurnMessages(ctx, sessionID, last.PromptID); err != nil {
			return in, err
		}
		if in.ToolCalls, err = r.ListTurnToolCalls(ctx, sessionID, last.PromptID); err != nil {
			return in, err
		}
	}
	in.Permissions, err = r.ListPendingPermissions(ctx, sessionID)
	return in, err
}

// historyChecks keeps, per session, the answer of the planner's
// whole-history check (session.HistoryGap: no missing turn number, no
// output of an unknown turn). tetherd's own writes never make a gap: a
// turn's seq is one more than the highest (store.CreateTurn), turns are
// never deleted, and output is recorded for turns the actor created before
// it. Only the database changing under a stopped tetherd can, so a
// session's history is checked once per process, at its first plan (from
// ids alone, store.HistoryRefs), and the answer kept.
type historyChecks struct {
	mu  sync.Mutex
	gap map[string]string
}

func newHistoryChecks() *historyChecks { return &historyChecks{gap: map[string]string{}} }

// check returns the session's history gap ("" when none), checking it on
// first use. A nil h checks every time.
func (h *historyChecks) check(ctx context.Context, r *store.Store, sessionID string) (string, error) {
	if h != nil {
		h.mu.Lock()
		gap, ok := h.gap[sessionID]
		h.mu.Unlock()
		if ok {
			return gap, nil
		}
	}
	refs, err := r.HistoryRefs(ctx, sessionID)
	if err != nil {
		return "", err
	}
	in := session.PlanInput{Turns: make([]session.Turn, 0, len(refs.Turns))}
	for _, t := range refs.Turns {
		in.Turns = append(in.Turns, session.Turn{Seq: t.Seq, PromptID: t.PromptID})
	}
	for _, p := range refs.MessageTurns {
		in.Messages = append(in.Messages, session.Message{PromptID: p})
	}
	for _, p := range refs.ToolCallTurns {
		in.ToolCalls = append(in.ToolCalls, session.ToolCall{PromptID: p})
	}
	gap := session.HistoryGap(in)
	if h != nil {
		h.mu.Lock()
		h.gap[sessionID] = gap
		h.mu.Unlock()
	}
	return gap, nil
}
