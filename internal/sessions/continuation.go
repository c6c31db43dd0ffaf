package sessions

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// ContinueResult is an accepted continuation.
type ContinueResult struct {
	Turn         session.Turn
	Interruption session.Recovery
	EventEpoch   string
	Cursor       string
	pending      *events.Pending
}

// Continue admits a continuation of the session's interrupted turn. The
// decision is the recovery plan, made and admitted in one visit to the
// actor (continueStep), atomically with prompt, cancel, close and resume,
// from the actor's folded log with no read of the store: double clicks,
// two tabs and a racing cancel admit at most one. A session whose agent
// must be restored first takes a second visit, after the restore.
func (m *Manager) Continue(ctx context.Context, sessionID, promptID string) (ContinueResult, error) {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return ContinueResult{}, err
	}
	res, err := m.continueOnce(ctx, a, promptID)
	if err == nil {
		return res, nil
	}
	if promptID != "" {
		// A concurrent request with the same id may have been admitted
		// while this one was planning: it is the same continuation.
		if res, ok, cerr := a.continued(ctx, promptID); ok && cerr == nil {
			return res, nil
		}
	}
	var de *errcode.Error
	if errors.As(err, &de) && de.Details["accepted"] == nil {
		// Every refusal answers in the decline shape, with the plan.
		if plan, perr := m.plan(ctx, a); perr == nil {
			err = de.With("accepted", false).With("reason", string(de.Code)).With("recovery", plan)
		}
	}
	return ContinueResult{}, err
}

func (m *Manager) continueOnce(ctx context.Context, a *actor, promptID string) (ContinueResult, error) {
	res, restore, err := a.continueStep(ctx, promptID, false)
	if err == nil && restore {
		// The agent must be running to take the continuation: restore it
		// first (shared with any concurrent resume), then admit. A failed
		// restore admits nothing; if by then the plan itself says no
		// (closed, cancelled, profile gone), that is the answer.
		if _, err := m.Resume(ctx, a.id); err != nil {
			return ContinueResult{}, m.declineOr(ctx, a, err)
		}
		res, _, err = a.continueStep(ctx, promptID, true)
	}
	if err == errStale {
		// Only a concurrent request with the same id, admitted first, can
		// make the session disagree with a plan made on the actor.
		if res, ok, err := a.continued(ctx, promptID); ok || err != nil {
			return res, err
		}
		return ContinueResult{}, m.declineOr(ctx, a, err)
	}
	if err != nil {
		// Declined by the plan, a promptId of another turn, or an
		// admission the plan allowed that failed: final either way.
		return ContinueResult{}, err
	}
	if res.pending == nil {
		return res, nil // the continuation promptId names was admitted before
	}
	return finishContinue(ctx, a.id, res)
}

// continueStep is a continuation's one visit to the actor: a promptId
// already admitted answers with its turn; else the plan, made from the
// actor's folded log as it stands, declines, asks for the agent to be
// restored first (restore, unless restored says that was done), or admits
// the continuation. Nothing can change between the plan and the
// admission, and nothing is read from the store.
func (a *actor) continueStep(ctx context.Context, promptID string, restored bool) (res ContinueResult, restore bool, err error) {
	type out struct {
		res     ContinueResult
		restore bool
	}
	o, err := mailbox.Call(ctx, a.mb, func() (out, error) {
		if promptID != "" {
			if res, ok, err := a.continuedNow(ctx, promptID); ok || err != nil {
				return out{res: res}, err
			}
		}
		plan, in, err := a.planNow(ctx)
		if err != nil {
			return out{}, err
		}
		if !plan.CanContinue {
			return out{}, declined(plan)
		}
		st := a.m.statusOf(a.sess, a.exec, a.conn != nil && !a.settling, a.starting || a.settling, a.lastErr)
		if !restored && !st.IsAgentRunning && st.AgentAvailable && !st.Session.State.Terminal() {
			return out{restore: true}, nil
		}
		res, err := a.admitContinue(a.version, plan, in, promptID)
		return out{res: res}, err
	})
	return o.res, o.restore, err
}

// plan is the session's current recovery plan, made on the actor (planNow);
// a session whose actor is gone (closed and retired) plans from the store.
func (m *Manager) plan(ctx context.Context, a *actor) (session.Recovery, error) {
	plan, ok, err := query(ctx, a, func() (session.Recovery, error) {
		plan, _, err := a.planNow(ctx)
		return plan, err
	})
	if ok {
		return plan, err
	}
	in, err := m.planInput(ctx, a.id)
	if err != nil {
		return session.Recovery{}, err
	}
	_, _, specErr := m.profiles.Spec(a.sess.AgentProfileID)
	in.Closing, in.AgentAvailable = true, specErr == nil
	return session.Plan(in), nil
}

// planNow plans on the actor from its folded state (folded.go), once every
// write it submitted has committed: the log as the actor's state stands,
// with no read of the store.
func (a *actor) planNow(ctx context.Context) (session.Recovery, session.PlanInput, error) {
	in, err := a.planInput(ctx)
	if err != nil {
		return session.Recovery{}, in, err
	}
	return session.Plan(in), in, nil
}

// declineOr turns an admission failure into a decline when the plan
// explains it (a close or cancel that won the race), else returns err.
func (m *Manager) declineOr(ctx context.Context, a *actor, err error) error {
	if plan, perr := m.plan(ctx, a); perr == nil && !plan.CanContinue {
		return declined(plan)
	}
	return err
}

// declined is the 409 answer: the reason is the code, the plan explains.
func declined(plan session.Recovery) *errcode.Error {
	return errcode.New(errcode.Code(plan.Reason), "continuation declined: %s", plan.Reason).
		With("accepted", false).With("reason", plan.Reason).With("recovery", plan)
}

// continued answers a repeated continuation promptId with the same turn.
func (a *actor) continued(ctx context.Context, promptID string) (ContinueResult, bool, error) {
	type out struct {
		res ContinueResult
		ok  bool
	}
	o, err := mailbox.Call(ctx, a.mb, func() (out, error) {
		res, ok, err := a.continuedNow(ctx, promptID)
		return out{res, ok}, err
	})
	return o.res, o.ok, err
}

// continuedNow is continued on the actor: the turn as the actor holds it,
// and the cursor of the log as folded once the actor's writes committed.
func (a *actor) continuedNow(ctx context.Context, promptID string) (ContinueResult, bool, error) {
	t := a.turns[promptID]
	if t.PromptID == "" {
		return ContinueResult{}, false, nil
	}
	if t.Kind != session.TurnContinue {
		return ContinueResult{}, true, errcode.New(errcode.PromptIDConflict, "promptId %q belongs to a turn that is not a continuation", promptID)
	}
	res := ContinueResult{Turn: t, EventEpoch: a.sess.EventEpoch}
	_ = json.Unmarshal(t.Interruption, &res.Interruption)
	st, err := a.folded(ctx)
	if err != nil {
		return ContinueResult{}, true, err
	}
	res.Cursor = events.Cursor{Epoch: res.EventEpoch, N: st.Seq}.String()
	return res, true, nil
}

// admitContinue creates the continue turn if the session is unchanged since
// it was planned; errStale sends the caller back to planning.
func (a *actor) admitContinue(version uint64, plan session.Recovery, in session.PlanInput, promptID string) (ContinueResult, error) {
	d := decide(a.viewOf(promptID), continueCmd{PromptID: promptID, Version: version, Plan: plan})
	if d.Refusal != nil {
		return ContinueResult{}, d.Refusal
	}
	// The original prompt if the agent never got it, else the
	// continuation prompt (what the user saw, what was cut off); never
	// both.
	of, _ := json.Marshal(plan)
	j := &job{admit: &session.Turn{SessionID: a.id, PromptID: promptID, Kind: session.TurnContinue,
		Prompt: session.Continuation(plan, in), ContinuesPromptID: plan.PromptID, Interruption: of}}
	if err := a.perform(d, j); err != nil {
		return ContinueResult{}, err // the agent stopped since the restore and the cap is full
	}
	return ContinueResult{Turn: j.res.Turn, Interruption: plan, EventEpoch: j.res.EventEpoch, pending: j.res.pending}, nil
}

// finishContinue answers once the accepted turn is durable, with the cursor
// of the event that admitted it and the turn's number from it; the actor
// settles the admission itself when the write reports (awaitAdmission).
func finishContinue(ctx context.Context, sessionID string, res ContinueResult) (ContinueResult, error) {
	evs, err := res.pending.Wait(ctx)
	if err != nil {
		return ContinueResult{}, err
	}
	res.pending.Committed(sessionID, func(e session.Event) {
		if q, ok := e.Payload.(*session.TurnQueuedData); ok && q.PromptID == res.Turn.PromptID {
			res.Turn.Seq = q.Seq
		}
	})
	res.Cursor = events.Cursor{Epoch: res.EventEpoch, N: lastSeq(evs, sessionID)}.String()
	return res, nil
}

// pushRecovery emits session.recovery_changed (session and global streams)
// when the recovery plan differs from the last one pushed, so clients never
// poll for it. The plan is computed inside the write, from the transcript as
// this session's earlier writes left it (see recoveryPushed).
func (a *actor) pushRecovery() { a.announce(false) }

// announce emits session.recovery_changed with the plan as this session's
// earlier writes left it; always, even unchanged (start-up tells every
// client where each session it repaired now stands: effPushRecovery,
// Always), else only when it changed.
func (a *actor) announce(always bool) {
	_, _, err := a.m.profiles.Spec(a.sess.AgentProfileID)
	a.change(recoveryPushed{Session: a.id, TaskID: a.sess.TaskID, Closing: a.stopping, AgentAvailable: err == nil, Always: always, history: a.m.history})
}

// SessionContext is where a session stands, for GET /session/{id}/context.
type SessionContext struct {
	Session        session.Session
	Profile        agents.Profile
	AgentAvailable bool
	Recovery       session.Recovery
	Cursor         events.Cursor
	// Agent-reported facts (nil until the agent sent them). Modes is an
	// ACP SessionModeState; Mode the current mode id as a JSON string.
	Commands, Modes, Mode, ConfigOptions json.RawMessage
}

// Context computes the session's context and recovery plan, with the
// event cursor they are consistent with. A live session answers on its
// actor once its writes have committed, from its own state and folded log
// (no read of the store), so the agent's facts, the plan and the cursor
// are one moment; a session without a live actor answers from one
// snapshot of the store.
func (m *Manager) Context(ctx context.Context, sessionID string) (SessionContext, error) {
	m.mu.Lock()
	a := m.actors[sessionID]
	m.mu.Unlock()
	if a != nil {
		out, ok, err := query(ctx, a, func() (SessionContext, error) {
			in, err := a.planInput(ctx)
			if err != nil {
				return SessionContext{}, err
			}
			out := SessionContext{Session: a.sess, AgentAvailable: in.AgentAvailable, Recovery: session.Plan(in),
				Cursor: events.Cursor{Epoch: a.sess.EventEpoch, N: a.state.Seq}}
			_, out.Profile, _ = m.profiles.Spec(a.sess.AgentProfileID)
			out.Commands, out.Modes, out.Mode, out.ConfigOptions = a.commands, a.modes, a.mode, a.configOptions
			return out, nil
		})
		if ok {
			return out, err
		}
	}
	// No live actor (or it was retired meanwhile): the store is the truth.
	out, in, err := m.readContext(ctx, sessionID)
	if err != nil {
		return out, err
	}
	out.Recovery = session.Plan(in)
	return out, nil
}

// readContext reads a session, its plan input and its event head from one
// snapshot; the caller adds what only a live actor knows.
func (m *Manager) readContext(ctx context.Context, sessionID string) (SessionContext, session.PlanInput, error) {
	var out SessionContext
	var in session.PlanInput
	var head store.EventBounds
	err := m.store.Snapshot(ctx, func(r *store.Store) error {
		var err error
		if out.Session, err = r.GetSession(ctx, sessionID); err != nil {
			return err
		}
		if in, err = readPlanInput(ctx, r, sessionID, m.history); err != nil {
			return err
		}
		head, err = r.SessionEventBounds(ctx, sessionID)
		return err
	})
	if err != nil {
		return out, in, err
	}
	_, out.Profile, err = m.profiles.Spec(out.Session.AgentProfileID)
	out.AgentAvailable = err == nil
	in.AgentAvailable = out.AgentAvailable
	out.Cursor = events.Cursor{Epoch: out.Session.EventEpoch, N: head.Head}
	return out, in, nil
}
