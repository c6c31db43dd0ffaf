package sessions

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/onetruth"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// The comparisons of the replay test. Each folds the session's stored
// log (events.FoldSession) and compares the fold with one view of the
// session, read at a moment the fold is consistent with:
//
//   - the rows the store serves (GetSession, ListTurns, ListMessages,
//     ListToolCalls, ListPermissions and the session's plan: what GET
//     /session/{id}/transcript serves), read with the log in one
//     snapshot;
//   - what the Manager serves: Status's session, and Context's recovery
//     plan, which must be the plan of the folded state (up to the cursor
//     Context says it is consistent with);
//   - the actor's live state: its session (state, plan), every turn it
//     indexes, its running turn, its queue and its open permission
//     requests, read on the actor once its writes have committed.
//
// What the log does not carry is left out, each with its reason: see
// onetruth.Diff for the records' fields; planInput below for the plan's
// inputs; and the actor holds no messages or tool calls (the fold's stand
// in for them), no permission details beyond the open requests' turns.

// check compares session s's log with every view of it. When load is set
// (after a restart or at the end) an actor is loaded for it, as any
// request would, so that a fresh actor's state is compared too.
func (p *replay) check(s *replaySession, load bool) {
	p.t.Helper()
	ctx := context.Background()
	if load {
		_, _ = p.r.mgr.actor(ctx, s.id) // a closed session may refuse: fine
	}
	p.checkRows(s)
	p.checkServed(s)
	p.checkActor(s)
}

// checkRows compares the log with the rows, read in one snapshot.
func (p *replay) checkRows(s *replaySession) {
	p.t.Helper()
	ctx := context.Background()
	var fold, rows *session.State
	var exec session.Executor
	err := p.r.st.Snapshot(ctx, func(r *store.Store) error {
		var err error
		if fold, err = events.FoldSession(ctx, r, s.id); err != nil {
			return err
		}
		if rows, err = rowsState(ctx, r, s.id); err != nil {
			return err
		}
		exec, err = r.GetExecutor(ctx, s.id)
		return err
	})
	if err != nil {
		p.fail("session %s: fold and rows: %v", s.id, err)
	}
	if d := append(onetruth.Diff(fold, rows), onetruth.DiffExecutor(fold.Executor, exec)...); d != nil {
		p.fail("session %s: the rows differ from the log:\n  %s", s.id, joinLines(d))
	}
}

// rowsState is the session as its rows tell it.
func rowsState(ctx context.Context, r *store.Store, id string) (*session.State, error) {
	var st session.State
	var err error
	if st.Session, err = r.GetSession(ctx, id); err != nil {
		return nil, err
	}
	st.Plan = st.Session.Plan
	if st.Turns, err = r.ListTurns(ctx, id); err != nil {
		return nil, err
	}
	if st.Messages, err = r.ListMessages(ctx, id); err != nil {
		return nil, err
	}
	if st.ToolCalls, err = r.ListToolCalls(ctx, id); err != nil {
		return nil, err
	}
	st.Permissions, err = r.ListPermissions(ctx, id)
	return &st, err
}

// checkServed compares the log with what the Manager serves: Status's
// session and Context's recovery plan.
func (p *replay) checkServed(s *replaySession) {
	p.t.Helper()
	ctx := context.Background()
	status, err := p.r.mgr.Status(ctx, s.id)
	if err != nil {
		p.fail("session %s: status: %v", s.id, err)
	}
	fold, err := events.FoldSession(ctx, p.r.st, s.id)
	if err != nil {
		p.fail("session %s: fold: %v", s.id, err)
	}
	if d := onetruth.Diff(fold, withSession(fold, status.Session)); d != nil {
		p.fail("session %s: Status differs from the log:\n  %s", s.id, joinLines(d))
	}

	// The served plan and the log's, at one point of the log: should a
	// write the settle did not wait for land between the two reads (the
	// log moved on), the session settles again and both are read again.
	var served SessionContext
	var in session.PlanInput
	for attempt := 1; ; attempt++ {
		closing := false
		p.onActor(s, func(a *actor) { closing = a.stopping })
		served, err = p.r.mgr.Context(ctx, s.id)
		if err != nil {
			p.fail("session %s: context: %v", s.id, err)
		}
		var moved []string
		err = p.r.st.Snapshot(ctx, func(r *store.Store) error {
			head, err := r.SessionEventBounds(ctx, s.id)
			if err != nil {
				return err
			}
			if head.Head != served.Cursor.N {
				evs, err := r.ListSessionEvents(ctx, s.id, served.Cursor.N, 20)
				if err != nil {
					return err
				}
				for _, e := range evs {
					moved = append(moved, e.Type)
				}
				return nil
			}
			in, err = planInput(ctx, r, s.id, closing)
			return err
		})
		if err != nil {
			p.fail("session %s: plan input: %v", s.id, err)
		}
		if moved == nil {
			break
		}
		if attempt == 3 {
			p.fail("session %s: the log kept moving on after the session settled (%v)", s.id, moved)
		}
		p.t.Logf("session %s: the log moved on after the session settled (%v): settling again", s.id, moved)
		p.settle(s)
	}
	want, _ := json.Marshal(session.Plan(in))
	got, _ := json.Marshal(served.Recovery)
	if string(got) != string(want) {
		var evs []string
		all, _ := p.r.st.ListSessionEvents(ctx, s.id, 0, 100000)
		for _, e := range all {
			if strings.HasPrefix(e.Type, "tool_call") || strings.HasPrefix(e.Type, "turn.") || strings.HasPrefix(e.Type, "permission") {
				evs = append(evs, fmt.Sprintf("%d %s %s %s", e.Seq, e.Type, e.PromptID, e.Payload))
			}
		}
		p.fail("session %s: Context's recovery plan differs from the log's:\n  served %s\n  log    %s\n  the log's turn, tool call and permission events:\n%s", s.id, got, want, strings.Join(evs, "\n"))
	}
}

// planInput is the recovery planner's input as the log implies it (in
// r's snapshot): the whole fold (Earlier 0, so the planner checks it for
// a gap itself), with Closing (the actor's) and AgentAvailable (the
// profile's; the fake one always is).
func planInput(ctx context.Context, r *store.Store, id string, closing bool) (session.PlanInput, error) {
	fold, err := events.FoldSession(ctx, r, id)
	if err != nil {
		return session.PlanInput{}, err
	}
	return session.PlanInput{State: fold.Session.State, ContextLost: fold.Session.ContextLost, QueueHeld: fold.Session.QueueHeld,
		Closing: closing, AgentAvailable: true, Turns: fold.Turns, Messages: fold.Messages, ToolCalls: fold.ToolCalls,
		Permissions: fold.PendingPermissions()}, nil
}

// withSession is log with its session as sess: for a view that serves
// only the session.
func withSession(log *session.State, sess session.Session) *session.State {
	out := *log
	out.Session, out.Plan = sess, sess.Plan
	return &out
}

// checkActor compares the log with s's live actor, if it has one, once
// every write it submitted has committed.
func (p *replay) checkActor(s *replaySession) {
	p.t.Helper()
	ctx := context.Background()
	var diffs []string
	var foldErr error
	p.onActor(s, func(a *actor) {
		a.atCommit(ctx)
		fold, err := events.FoldSession(ctx, a.m.store, a.id)
		if err != nil {
			foldErr = err
			return
		}
		diffs = actorDiff(a, fold)
	})
	if foldErr != nil {
		p.fail("session %s: fold: %v", s.id, foldErr)
	}
	if diffs != nil {
		p.fail("session %s: the actor's live state differs from the log:\n  %s", s.id, joinLines(diffs))
	}
}

// actorDiff compares what actor a holds with fold (on the actor).
func actorDiff(a *actor, fold *session.State) []string {
	live := withSession(fold, a.sess)
	live.Turns = slices.SortedFunc(maps.Values(a.turns), func(x, y session.Turn) int { return cmp.Compare(x.Seq, y.Seq) })
	d := onetruth.Diff(fold, live)
	exec := a.exec
	if exec.Status == session.ExecutorReconnecting {
		// Its latest reason for waiting stays on the actor (HostUnreachable).
		exec.ErrorMessage, exec.ErrorCode = fold.Executor.ErrorMessage, fold.Executor.ErrorCode
	}
	d = append(d, onetruth.DiffExecutor(fold.Executor, exec)...)

	var logRunning, logQueued []string
	for _, t := range fold.Turns {
		switch t.State {
		case session.TurnRunning:
			logRunning = append(logRunning, t.PromptID)
		case session.TurnQueued:
			logQueued = append(logQueued, t.PromptID)
		}
	}
	var running, queued []string
	if a.running != nil {
		running = []string{a.running.turn.PromptID}
	}
	for _, t := range a.queue {
		queued = append(queued, t.PromptID)
	}
	if !slices.Equal(logRunning, running) {
		d = append(d, fmt.Sprintf("running turn: log %v, actor %v", logRunning, running))
	}
	if !slices.Equal(logQueued, queued) {
		d = append(d, fmt.Sprintf("queue: log %v, actor %v", logQueued, queued))
	}
	var logPerms, perms []string
	for _, pm := range fold.PendingPermissions() {
		logPerms = append(logPerms, pm.ID+" of "+pm.PromptID)
	}
	for id, pm := range a.perms {
		perms = append(perms, id+" of "+pm.promptID)
	}
	slices.Sort(logPerms)
	slices.Sort(perms)
	if !slices.Equal(logPerms, perms) {
		d = append(d, fmt.Sprintf("open permission requests: log %v, actor %v", logPerms, perms))
	}
	return d
}

func joinLines(lines []string) string {
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}
