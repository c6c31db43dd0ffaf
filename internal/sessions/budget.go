package sessions

import (
	"fmt"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// Budgets and the stall watchdog (session.Budget). A usage report that
// reaches the session's token or cost budget, or a turn that runs past
// its time, stops the running turn as a cancel does: budget.exceeded is
// recorded, the agent is asked to cancel, and the turn ends cancelled
// with reason budget_exceeded whatever the agent answers. Nothing new
// runs while the session is over its token or cost budget; raising it
// (PATCH /session/{id}) lets the user continue the stopped turn. The
// watchdog only tells: turn.stalled once the running turn has been
// silent for the stall limit, turn.stall_ended when its agent speaks
// again.

type (
	// setBudgetCmd sets the session's budget, whole (PATCH /session/{id}).
	setBudgetCmd struct{ Budget session.Budget }
	// turnBudgetInput: the turn-duration clock of PromptID rang, Elapsed
	// after the turn started.
	turnBudgetInput struct {
		PromptID string
		Elapsed  time.Duration
	}
	// stallInput: the stall clock of PromptID rang at At; its agent was
	// last heard from at Since.
	stallInput struct {
		PromptID  string
		Since, At time.Time
	}
)

func (setBudgetCmd) isInput()    {}
func (turnBudgetInput) isInput() {}
func (stallInput) isInput()      {}

// effArmBudget (re)arms the running turn's budget clocks, as the
// session's budget now says: the turn's duration and the stall watchdog.
type effArmBudget struct{}

func (effArmBudget) isEffect() {}

// overBudget is the refusal of new work while the session's usage has
// reached its token or cost budget; nil when it has not.
func overBudget(v view) *errcode.Error {
	limit, msg := v.Budget.Reached(v.Usage)
	if limit == "" {
		return nil
	}
	return errcode.New(errcode.BudgetExceeded, "%s: raise the session's budget to go on", msg).
		With("limit", limit).With("budget", v.Budget).With("usage", v.Usage)
}

// decideSetBudget records the session's new budget; one the session's
// usage has reached already stops the running turn, and new clocks
// apply to it.
func decideSetBudget(v view, c setBudgetCmd) decision {
	if err := c.Budget.Check(); err != nil {
		return refuse(errcode.New(errcode.InvalidRequest, "%v", err).With("field", "budget"))
	}
	if c.Budget == v.Budget {
		return accept()
	}
	effs := []effect{record("", &session.SessionBudgetChangedData{Budget: c.Budget})}
	v.Budget = c.Budget
	if limit, msg := v.Budget.Reached(v.Usage); limit != "" {
		effs = append(effs, budgetStop(v, limit, msg)...)
	}
	// What the plan allows may change with it (over the budget or not).
	return accept(append(effs, effArmBudget{}, effPushRecovery{})...)
}

// decideTurnBudget stops the running turn when it ran for its time;
// a clock that rang early (the budget was raised since) is armed again.
func decideTurnBudget(v view, in turnBudgetInput) decision {
	r, limit := v.Running, v.Budget.MaxTurn()
	if r == nil || r.PromptID != in.PromptID || limit <= 0 {
		return accept()
	}
	if in.Elapsed < limit {
		return accept(effArmBudget{})
	}
	return accept(budgetStop(v, session.LimitTurnDuration,
		fmt.Sprintf("the turn ran for %s, past its budget of %s", in.Elapsed.Round(time.Second), limit))...)
}

// decideStall records turn.stalled when the running turn has been silent
// for the stall limit, once per stall; a clock that rang early (its
// agent spoke since it was armed) is armed again.
func decideStall(v view, in stallInput) decision {
	r, limit := v.Running, v.Budget.Stall()
	if r == nil || r.PromptID != in.PromptID || r.Stalled || limit <= 0 || r.CancelRequested || r.BudgetStop {
		return accept()
	}
	if in.At.Sub(in.Since) < limit {
		return accept(effArmBudget{})
	}
	return accept(record(r.PromptID, &session.TurnStalledData{Since: in.Since, Seconds: v.Budget.StallSeconds, StalledAt: in.At}))
}

// budgetStop stops the running turn for the budget's limit: recorded,
// its permission requests answered cancelled, its agent asked to cancel.
// Queued prompts wait for the user behind it when the session is over
// its token or cost budget (a continue or a prompt takes them up once
// the budget allows). Nothing when no turn runs or one stops already.
func budgetStop(v view, limit, message string) []effect {
	r := v.Running
	if r == nil || r.CancelRequested || r.BudgetStop {
		return nil
	}
	var effs []effect
	if limit != session.LimitTurnDuration && len(v.Queue) > 0 && !v.QueueHeld {
		effs = append(effs, holdQueue(true))
	}
	return append(effs, record(r.PromptID, &session.BudgetExceededData{Limit: limit, Budget: v.Budget, Usage: v.Usage, Message: message}),
		effAnswerPermissions{PromptID: r.PromptID, State: session.PermissionCancelled}, effCancelAgent{}, effPushRecovery{})
}

// budgetCancelled is the end of a turn a budget stopped: cancelled with
// reason budget_exceeded, whatever its agent answered.
func budgetCancelled(r *runningView, stopReason string) *session.TurnCancelledData {
	c := cancelled(stopReason, false)
	c.Reason, c.Message = session.BudgetExceeded, r.BudgetMessage
	return c
}

// stallEnded is what output of a stalled running turn records first: the
// stall is over.
func stallEnded(v view, in updateInput) []effect {
	if r := v.Running; r != nil && r.Stalled && in.Current && !in.Late {
		return []effect{record(r.PromptID, &session.TurnStallEndedData{}), effArmBudget{}}
	}
	return nil
}

// armBudget arms the running turn's clocks as its session's budget says
// (effArmBudget): the turn's duration from its start, the watchdog from
// the last output of its agent (or its start), unless it is stalled now.
func (a *actor) armBudget() {
	r := a.running
	if r == nil || r.turn.StartedAt == nil {
		return
	}
	b := a.sess.Budget
	if limit := b.MaxTurn(); limit > 0 {
		a.arm(effTimer{Timer: timerTurnBudget, After: max(limit-time.Since(*r.turn.StartedAt), 0)})
	}
	if limit := b.Stall(); limit > 0 && r.turn.StalledAt == nil {
		a.arm(effTimer{Timer: timerStall, After: max(limit-time.Since(r.lastHeard()), 0)})
	}
}

// lastHeard is when the turn's agent was last heard from: its last
// output, else the turn's start.
func (r *turnRun) lastHeard() time.Time {
	if r.heard.After(*r.turn.StartedAt) {
		return r.heard
	}
	return *r.turn.StartedAt
}

// checkTurnBudget is the turn-duration clock ringing (timerTurnBudget).
func (a *actor) checkTurnBudget() {
	if r := a.running; r != nil && r.turn.StartedAt != nil {
		_ = a.perform(decide(a.view(), turnBudgetInput{PromptID: r.turn.PromptID, Elapsed: time.Since(*r.turn.StartedAt)}), nil)
	}
}

// checkStall is the watchdog's clock ringing (timerStall).
func (a *actor) checkStall() {
	if r := a.running; r != nil && r.turn.StartedAt != nil {
		_ = a.perform(decide(a.view(), stallInput{PromptID: r.turn.PromptID, Since: r.lastHeard(), At: time.Now().UTC()}), nil)
	}
}
