package sessions

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// The budgets and the stall watchdog (budget.go), decided: what stops a
// turn, what only tells, and what is refused while the session is over.

// tokenReport is a usage report of n tokens (qwen's, as acp translates it).
func tokenReport(n int) updateInput {
	data := `{"sessionUpdate":"usage_update","used":0,"size":0,"_meta":{"tether/promptUsage":{"totalTokens":` + itoa(n) + `}}}`
	return updateInput{Kind: acp.UpdateUsage, Data: json.RawMessage(data), Current: true}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// usageRecord is usage.updated of a report of n tokens in turn promptID
// ("" for none), the session at total.
func usageRecord(promptID string, n, total int64) effect {
	p := &session.UsageUpdatedData{EventCommon: session.EventCommon{PromptID: promptID}, Report: session.Usage{TotalTokens: n},
		Session: session.Usage{TotalTokens: total}}
	if promptID != "" {
		p.Turn = &session.Usage{TotalTokens: n}
	}
	return effRecord{Event: p}
}

// stop is what a budget stopping turn p1 records and does.
func stop(b session.Budget, u session.Usage, limit, message string) []effect {
	return []effect{effRecord{Event: &session.BudgetExceededData{EventCommon: session.EventCommon{PromptID: "p1"},
		Limit: limit, Budget: b, Usage: u, Message: message}},
		effAnswerPermissions{PromptID: "p1", State: session.PermissionCancelled}, effCancelAgent{}, effPushRecovery{}}
}

func TestDecideBudget(t *testing.T) {
	tokens := session.Budget{MaxTokens: 1000}
	running := with(inState(session.SessionRunning), func(v *view) { v.Budget, v.Usage = tokens, session.Usage{TotalTokens: 900} })
	idle := with(inState(session.SessionWaitingForInput), func(v *view) { v.Budget, v.Usage = tokens, session.Usage{TotalTokens: 900} })
	over := session.Usage{TotalTokens: 1020}
	reached := "the session used 1020 tokens of its budget of 1000"
	stopping := with(running, func(v *view) { v.Running.BudgetStop, v.Running.BudgetMessage = true, reached })
	budgetEnd := func(stopReason string) []effect {
		return turnEnd("p1", &session.TurnCancelledData{State: session.TurnCancelled, StopReason: stopReason,
			Reason: session.BudgetExceeded, Message: reached})
	}
	usd := func(a float64) *session.Cost { return &session.Cost{Amount: a, Currency: "USD"} }
	costly := with(running, func(v *view) {
		v.Budget = session.Budget{MaxCost: usd(1)}
		v.Usage = session.Usage{Cost: usd(0.5)}
	})
	costReport := func(cur string) updateInput {
		return updateInput{Kind: acp.UpdateUsage, Current: true,
			Data: json.RawMessage(`{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":1.5,"currency":"` + cur + `"}}`)}
	}
	eur := &session.Cost{Amount: 1.5, Currency: "EUR"}
	cases := []decideCase{
		{"a report under the budget", running, tokenReport(50), accepted(usageRecord("p1", 50, 950))},
		{"a report that reaches the budget stops the turn", running, tokenReport(120),
			acc(usageRecord("p1", 120, 1020), stop(tokens, over, session.LimitTokens, reached))},
		{"prompts queued behind it wait for the user", with(running, func(v *view) { v.Queue = queued("q1") }), tokenReport(120),
			acc(usageRecord("p1", 120, 1020), queueHeld(true), stop(tokens, over, session.LimitTokens, reached))},
		{"a turn stopping already is not stopped twice", stopping, tokenReport(120), accepted(usageRecord("p1", 120, 1020))},
		{"a turn the user cancels is not stopped", with(running, func(v *view) { v.Running.CancelRequested = true }), tokenReport(120),
			accepted(usageRecord("p1", 120, 1020))},
		{"a report after the turn stops nothing; the plan changes", idle, tokenReport(120), accepted(usageRecord("", 120, 1020), effPushRecovery{})},
		{"a report after the turn, over already", with(idle, func(v *view) { v.Usage = over }), tokenReport(120), accepted(usageRecord("", 120, 1140))},
		{"no budget, no limit", with(running, func(v *view) { v.Budget = session.Budget{} }), tokenReport(5000),
			accepted(usageRecord("p1", 5000, 5900))},
		{"a cost that reaches the budget", costly, costReport("USD"),
			acc(effRecord{Event: &session.UsageUpdatedData{EventCommon: session.EventCommon{PromptID: "p1"},
				Report: session.Usage{ContextUsed: 10, ContextSize: 100, Cost: usd(1.5)}, Session: session.Usage{ContextUsed: 10, ContextSize: 100, Cost: usd(1.5)},
				Turn: &session.Usage{ContextUsed: 10, ContextSize: 100}}},
				stop(session.Budget{MaxCost: usd(1)}, session.Usage{ContextUsed: 10, ContextSize: 100, Cost: usd(1.5)}, session.LimitCost,
					"the session cost 1.5 USD of its budget of 1 USD"))},
		{"a cost in another currency is not counted", costly, costReport("EUR"),
			accepted(effRecord{Event: &session.UsageUpdatedData{EventCommon: session.EventCommon{PromptID: "p1"},
				Report: session.Usage{ContextUsed: 10, ContextSize: 100, Cost: eur}, Session: session.Usage{ContextUsed: 10, ContextSize: 100, Cost: eur},
				Turn: &session.Usage{ContextUsed: 10, ContextSize: 100}}})},

		// The stopped turn ends cancelled for its budget, whatever its agent answers.
		{"the agent answers the cancel", stopping, turnEndedInput{PromptID: "p1", StopReason: "cancelled"},
			acc(budgetEnd("cancelled"), effAnswerPermissions{PromptID: "p1", State: session.PermissionCancelled}, effTimer{Timer: timerIdle}).then(nextInput{})},
		{"the agent finishes instead", stopping, turnEndedInput{PromptID: "p1", StopReason: "end_turn"},
			acc(budgetEnd("end_turn"), effAnswerPermissions{PromptID: "p1", State: session.PermissionCancelled}, effTimer{Timer: timerIdle}).then(nextInput{})},
		{"the agent is stopped for ignoring it", stopping, agentExitedInput{Exit: exitInfo{Code: -1, Signal: "killed"}},
			acc(effRecord{Event: &session.ExecutorStatusData{Status: session.ExecutorStopped, Error: "agent was stopped by a signal (killed)",
				ExitCode: ptr(-1), ExitSignal: "killed", LastSeenAt: &time.Time{}}},
				effAnswerPermissions{State: session.PermissionExpired}, budgetEnd(""),
				stateChange(session.SessionRunning, session.SessionWaitingForInput))},

		// Nothing new runs while the session is over its budget.
		{"a prompt over the budget", with(idle, func(v *view) { v.Usage = over }), promptCmd{PromptID: "p9", Multitask: MultitaskEnqueue},
			refused(errcode.BudgetExceeded, map[string]any{"limit": session.LimitTokens, "budget": tokens, "usage": over})},
		{"a prompt under the budget", idle, promptCmd{PromptID: "p9", Multitask: MultitaskEnqueue}, accepted(effAdmit{})},
	}
	runDecideCases(t, cases)
}

func ptr[T any](v T) *T { return &v }

func TestDecideBudgetClocks(t *testing.T) {
	b := session.Budget{MaxTurnSeconds: 60, StallSeconds: 30}
	running := with(inState(session.SessionRunning), func(v *view) { v.Budget = b })
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	stalled := effRecord{Event: &session.TurnStalledData{EventCommon: session.EventCommon{PromptID: "p1"}, Since: at.Add(-30 * time.Second),
		Seconds: 30, StalledAt: at}}
	cases := []decideCase{
		{"the turn ran for its time", running, turnBudgetInput{PromptID: "p1", Elapsed: 61 * time.Second},
			accepted(stop(b, session.Usage{}, session.LimitTurnDuration, "the turn ran for 1m1s, past its budget of 1m0s")...)},
		{"queued prompts run after a turn out of time", with(running, func(v *view) { v.Queue = queued("q1") }), turnBudgetInput{PromptID: "p1", Elapsed: time.Minute},
			accepted(stop(b, session.Usage{}, session.LimitTurnDuration, "the turn ran for 1m0s, past its budget of 1m0s")...)},
		{"the clock rang early: armed again", running, turnBudgetInput{PromptID: "p1", Elapsed: 59 * time.Second}, accepted(effArmBudget{})},
		{"the clock of an ended turn", running, turnBudgetInput{PromptID: "p0", Elapsed: time.Hour}, accepted()},
		{"the limit was taken away", with(running, func(v *view) { v.Budget.MaxTurnSeconds = 0 }), turnBudgetInput{PromptID: "p1", Elapsed: time.Hour}, accepted()},

		{"silent for the stall limit", running, stallInput{PromptID: "p1", Since: at.Add(-30 * time.Second), At: at}, accepted(stalled)},
		{"heard from since: armed again", running, stallInput{PromptID: "p1", Since: at.Add(-10 * time.Second), At: at}, accepted(effArmBudget{})},
		{"stalled already", with(running, func(v *view) { v.Running.Stalled = true }), stallInput{PromptID: "p1", Since: at.Add(-time.Hour), At: at}, accepted()},
		{"a turn being cancelled is not stalled", with(running, func(v *view) { v.Running.CancelRequested = true }),
			stallInput{PromptID: "p1", Since: at.Add(-time.Hour), At: at}, accepted()},
		{"no watchdog", with(running, func(v *view) { v.Budget.StallSeconds = 0 }), stallInput{PromptID: "p1", Since: at.Add(-time.Hour), At: at}, accepted()},

		// Output of a stalled turn ends the stall, then is recorded as ever.
		{"a stalled turn speaks", with(running, func(v *view) { v.Running.Stalled = true }),
			updateInput{Kind: acp.UpdateAgentMessage, Text: "back", Current: true},
			accepted(effRecord{Event: &session.TurnStallEndedData{EventCommon: session.EventCommon{PromptID: "p1"}}}, effArmBudget{},
				effRecord{Event: &session.MessageAddedData{EventCommon: session.EventCommon{PromptID: "p1"}, Role: session.RoleAgent, Text: "back"}})},
		{"a previous agent's output ends no stall", with(running, func(v *view) { v.Running.Stalled = true }),
			updateInput{Kind: acp.UpdateAgentMessage, Text: "old"}, accepted()},
	}
	runDecideCases(t, cases)
}

func TestDecideSetBudget(t *testing.T) {
	running := with(inState(session.SessionRunning), func(v *view) { v.Usage = session.Usage{TotalTokens: 500} })
	raised := session.Budget{MaxTokens: 2000}
	changed := func(b session.Budget) effect { return effRecord{Event: &session.SessionBudgetChangedData{Budget: b}} }
	cases := []decideCase{
		{"a new budget", running, setBudgetCmd{Budget: raised}, accepted(changed(raised), effArmBudget{}, effPushRecovery{})},
		{"the same budget", with(running, func(v *view) { v.Budget = raised }), setBudgetCmd{Budget: raised}, accepted()},
		{"a budget the session used already stops its turn", running, setBudgetCmd{Budget: session.Budget{MaxTokens: 400}},
			acc(changed(session.Budget{MaxTokens: 400}),
				stop(session.Budget{MaxTokens: 400}, session.Usage{TotalTokens: 500}, session.LimitTokens, "the session used 500 tokens of its budget of 400"),
				effArmBudget{}, effPushRecovery{})},
		{"a budget taken away", with(running, func(v *view) { v.Budget = raised }), setBudgetCmd{}, accepted(changed(session.Budget{}), effArmBudget{}, effPushRecovery{})},
		{"a negative limit", running, setBudgetCmd{Budget: session.Budget{MaxTokens: -1}},
			refused(errcode.InvalidRequest, map[string]any{"field": "budget"})},
		{"a cost without its currency", running, setBudgetCmd{Budget: session.Budget{MaxCost: &session.Cost{Amount: 1}}},
			refused(errcode.InvalidRequest, map[string]any{"field": "budget"})},
	}
	runDecideCases(t, cases)
}
