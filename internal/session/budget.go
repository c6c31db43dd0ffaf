package session

import (
	"fmt"
	"time"
)

// Budgets and the stall watchdog (issue 33): what a session may use
// before tetherd stops its turn, and how long a turn may go without a
// word from its agent before a person is told. A session takes its
// profile's budget when it is created (agents.yaml), overlaid by its
// own; PATCH /session/{id} changes it later (session.budget_changed).

// BudgetExceeded is the reason a turn a budget stopped ended cancelled
// with (TurnCancelledData.Reason; the turn's error code), and the
// refusal of new work while the session is over its budget.
const BudgetExceeded = "budget_exceeded"

// What a budget limits (BudgetExceededData.Limit).
const (
	LimitTokens       = "tokens"
	LimitCost         = "cost"
	LimitTurnDuration = "turnDuration"
)

// Budget is what a session may use; a zero member sets no limit.
// MaxTokens and MaxCost count what the whole session used, as its agent
// says (Usage.Tokens, Usage.Cost); MaxTurnSeconds is how long one turn
// may run. StallSeconds is the watchdog's: how long a running turn may
// go without output from its agent before turn.stalled tells a person
// (it stops nothing).
type Budget struct {
	MaxTokens      int64 `json:"maxTokens,omitempty"`
	MaxCost        *Cost `json:"maxCost,omitempty"`
	MaxTurnSeconds int64 `json:"maxTurnSeconds,omitempty"`
	StallSeconds   int64 `json:"stallSeconds,omitempty"`
}

// IsZero reports whether b limits nothing.
func (b Budget) IsZero() bool { return b == Budget{} }

// Over is b with every member o sets taken from o: a session's own
// budget over its profile's.
func (b Budget) Over(o Budget) Budget {
	if o.MaxTokens != 0 {
		b.MaxTokens = o.MaxTokens
	}
	if o.MaxCost != nil {
		c := *o.MaxCost
		b.MaxCost = &c
	}
	if o.MaxTurnSeconds != 0 {
		b.MaxTurnSeconds = o.MaxTurnSeconds
	}
	if o.StallSeconds != 0 {
		b.StallSeconds = o.StallSeconds
	}
	return b
}

// Check is the budget's fault, if any: a negative member, a cost with no
// currency.
func (b Budget) Check() error {
	switch {
	case b.MaxTokens < 0 || b.MaxTurnSeconds < 0 || b.StallSeconds < 0:
		return fmt.Errorf("a budget's limits cannot be negative")
	case b.MaxCost != nil && (b.MaxCost.Amount <= 0 || len(b.MaxCost.Currency) != 3):
		return fmt.Errorf("a budget's maxCost needs an amount above 0 and a three-letter currency")
	}
	return nil
}

// MaxTurn is how long a turn may run (0: no limit).
func (b Budget) MaxTurn() time.Duration { return time.Duration(b.MaxTurnSeconds) * time.Second }

// Stall is how long a turn may be silent before it is stalled (0: no
// watchdog).
func (b Budget) Stall() time.Duration { return time.Duration(b.StallSeconds) * time.Second }

// Reached is the limit of b the session's usage u has reached ("" for
// none) and what it says, in words: the tokens or the cost (in the
// budget's currency; a cost in another is not counted).
func (b Budget) Reached(u Usage) (limit, message string) {
	if b.MaxTokens > 0 && u.Tokens() >= b.MaxTokens {
		return LimitTokens, fmt.Sprintf("the session used %d tokens of its budget of %d", u.Tokens(), b.MaxTokens)
	}
	if c := b.MaxCost; c != nil && u.Cost != nil && u.Cost.Currency == c.Currency && u.Cost.Amount >= c.Amount {
		return LimitCost, fmt.Sprintf("the session cost %g %s of its budget of %g %s", u.Cost.Amount, c.Currency, c.Amount, c.Currency)
	}
	return "", ""
}

// Tokens is what the usage counts against a token budget: the total the
// agent gave, else the sum of the members it gave.
func (u Usage) Tokens() int64 {
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.InputTokens + u.OutputTokens + u.CachedReadTokens + u.CachedWriteTokens
}

// budgetPayloads are this file's types (events.go: payloads).
var budgetPayloads = []func() EventPayload{
	func() EventPayload { return &SessionBudgetChangedData{} },
	func() EventPayload { return &BudgetExceededData{} },
	func() EventPayload { return &TurnStalledData{} },
	func() EventPayload { return &TurnStallEndedData{} },
}

// SessionBudgetChangedData is the payload of session.budget_changed: the
// session's budget as it now is, whole.
type SessionBudgetChangedData struct {
	EventCommon
	Budget Budget `json:"budget"`
}

// EventType is session.budget_changed.
func (*SessionBudgetChangedData) EventType() string { return "session.budget_changed" }

func (p *SessionBudgetChangedData) applyTo(sess *Session, _ time.Time) { sess.Budget = p.Budget }

// evolve folds SessionBudgetChangedData into s (State.Evolve).
func (p *SessionBudgetChangedData) evolve(s *State, e Event) error {
	p.applyTo(&s.Session, e.At)
	return nil
}

// BudgetExceededData is the payload of budget.exceeded: the running turn
// (PromptID) reached Limit of the session's Budget, and tetherd stops it;
// it ends cancelled with reason budget_exceeded. Message says what was
// used, in words.
type BudgetExceededData struct {
	EventCommon
	Limit   string `json:"limit"`
	Budget  Budget `json:"budget"`
	Usage   Usage  `json:"usage"`
	Message string `json:"message"`
}

// EventType is budget.exceeded.
func (*BudgetExceededData) EventType() string { return "budget.exceeded" }

// OnGlobalStream: budget.exceeded also goes to GET /events (webhooks).
func (*BudgetExceededData) OnGlobalStream() {}

// evolve: the turn's end records the outcome; nothing to fold.
func (p *BudgetExceededData) evolve(*State, Event) error { return nil }

// TurnStalledData is the payload of turn.stalled: at StalledAt the
// running turn had had no output from its agent since Since, for the
// session's stall limit (Seconds). Once per stall: output ends it
// (turn.stall_ended).
type TurnStalledData struct {
	EventCommon
	Since     time.Time `json:"since"`
	Seconds   int64     `json:"seconds"`
	StalledAt time.Time `json:"stalledAt"`
}

// EventType is turn.stalled.
func (*TurnStalledData) EventType() string { return "turn.stalled" }

// OnGlobalStream: turn.stalled also goes to GET /events, where the inbox
// and webhooks follow it.
func (*TurnStalledData) OnGlobalStream() {}

// evolve folds TurnStalledData into s (State.Evolve).
func (p *TurnStalledData) evolve(s *State, e Event) error {
	t, err := s.knownTurn(p.PromptID)
	if err != nil {
		return err
	}
	StallTurn(t, p)
	return nil
}

// StallTurn sets on t what turn.stalled or turn.stall_ended (p) says; the
// fold and a live session's record both take a stall here.
func StallTurn(t *Turn, p EventPayload) {
	switch p := p.(type) {
	case *TurnStalledData:
		at := p.StalledAt
		t.StalledAt = &at
	case *TurnStallEndedData:
		t.StalledAt = nil
	}
}

// TurnStallEndedData is the payload of turn.stall_ended: the stalled turn
// had output again.
type TurnStallEndedData struct {
	EventCommon
}

// EventType is turn.stall_ended.
func (*TurnStallEndedData) EventType() string { return "turn.stall_ended" }

// OnGlobalStream: turn.stall_ended also goes to GET /events, so the inbox
// drops the stalled turn.
func (*TurnStallEndedData) OnGlobalStream() {}

// evolve folds TurnStallEndedData into s (State.Evolve).
func (p *TurnStallEndedData) evolve(s *State, e Event) error {
	t, err := s.knownTurn(p.PromptID)
	if err != nil {
		return err
	}
	StallTurn(t, p)
	return nil
}
