package session

// What a session's agent says it used: tokens, its context window, and
// what it cost (ACP usage_update). The agent's word, recorded as it says
// it; nothing here is estimated.

// Cost is an amount of money in a currency (ISO 4217, as the agent says).
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// Usage is what was used: tokens (in, out, cache reads and writes, and
// the total the agent gives), the context window (used of size, tokens),
// and the cost. A zero member was not said.
type Usage struct {
	InputTokens       int64 `json:"inputTokens,omitempty"`
	OutputTokens      int64 `json:"outputTokens,omitempty"`
	CachedReadTokens  int64 `json:"cachedReadTokens,omitempty"`
	CachedWriteTokens int64 `json:"cachedWriteTokens,omitempty"`
	TotalTokens       int64 `json:"totalTokens,omitempty"`
	ContextUsed       int64 `json:"contextUsed,omitempty"`
	ContextSize       int64 `json:"contextSize,omitempty"`
	Cost              *Cost `json:"cost,omitempty"`
}

// IsZero reports whether nothing was said.
func (u Usage) IsZero() bool { return u == Usage{} }

// Add is u with report r taken in: tokens summed (a report counts what
// one exchange used), the context window and the cost replaced when r
// says them (an agent reports its context as it now stands, and its cost
// as the session's total so far, as ACP's usage_update does).
func (u Usage) Add(r Usage) Usage {
	u.InputTokens += r.InputTokens
	u.OutputTokens += r.OutputTokens
	u.CachedReadTokens += r.CachedReadTokens
	u.CachedWriteTokens += r.CachedWriteTokens
	u.TotalTokens += r.TotalTokens
	if r.ContextSize != 0 || r.ContextUsed != 0 {
		u.ContextUsed, u.ContextSize = r.ContextUsed, r.ContextSize
	}
	if r.Cost != nil {
		c := *r.Cost
		u.Cost = &c
	}
	return u
}

// usagePayloads are this file's types (events.go: payloads).
var usagePayloads = []func() EventPayload{
	func() EventPayload { return &UsageUpdatedData{} },
}

// UsageUpdatedData is the payload of usage.updated: one report of the
// agent's (Report), and what the session and, in a turn, the turn have
// used as they now stand (Session, Turn), so a reader needs no sum.
type UsageUpdatedData struct {
	EventCommon
	Report  Usage  `json:"report"`
	Session Usage  `json:"session"`
	Turn    *Usage `json:"turn,omitempty"`
}

// EventType is usage.updated.
func (*UsageUpdatedData) EventType() string { return "usage.updated" }

// evolve folds UsageUpdatedData into s (State.Evolve).
func (p *UsageUpdatedData) evolve(s *State, e Event) error {
	s.Session.Usage = p.Session
	if p.Turn != nil {
		if t := s.Turn(p.PromptID); t != nil {
			t.Usage = *p.Turn
		}
	}
	return nil
}
