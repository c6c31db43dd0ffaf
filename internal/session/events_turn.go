package session

import (
	"encoding/json"
	"fmt"
	"time"
)

// turnPayloads are this file's types (events.go: payloads).
var turnPayloads = []func() EventPayload{
	func() EventPayload { return &TurnQueuedData{} },
	func() EventPayload { return &TurnStartedData{} },
	func() EventPayload { return &TurnCompletedData{} },
	func() EventPayload { return &TurnFailedData{} },
	func() EventPayload { return &TurnCancelledData{} },
	func() EventPayload { return &TurnInterruptedData{} },
	func() EventPayload { return &TurnDeliveredData{} },
	func() EventPayload { return &TurnCancelRequestedData{} },
	func() EventPayload { return &TurnWorkspaceChangesData{} },
	func() EventPayload { return &SessionQueueHeldData{} },
}

// The turn events (see events.go for what a domain event is).

// Turn family: a turn's promptId is the Draft's PromptID.

// TurnQueuedData is the payload of turn.queued.
type TurnQueuedData struct {
	EventCommon
	Kind              TurnKind        `json:"kind"`
	Seq               int64           `json:"seq"`
	Prompt            json.RawMessage `json:"prompt"`
	ContinuesPromptID string          `json:"continuesPromptId,omitempty"`
	// Interruption is a continue turn's recovery summary (JSON) as it was
	// admitted.
	Interruption json.RawMessage `json:"interruption,omitempty"`
}

// EventType is turn.queued.
func (*TurnQueuedData) EventType() string { return "turn.queued" }

// evolve folds TurnQueuedData into s (State.Evolve).
func (p *TurnQueuedData) evolve(s *State, e Event) error {
	if _, dup := s.turn[p.PromptID]; dup {
		return fmt.Errorf("turn %s queued twice", p.PromptID)
	}
	s.turn[p.PromptID] = len(s.Turns)
	s.Turns = append(s.Turns, Turn{SessionID: p.SessionID, PromptID: p.PromptID, Seq: p.Seq, Kind: p.Kind,
		State: TurnQueued, Prompt: p.Prompt, ContinuesPromptID: p.ContinuesPromptID, Interruption: p.Interruption, CreatedAt: e.At})
	return nil
}

// TurnStartedData is the payload of turn.started.
type TurnStartedData struct {
	EventCommon
	Kind      TurnKind  `json:"kind"`
	StartedAt time.Time `json:"startedAt"`
	// ContextInjected: the prompt carries the resume context (history
	// injection), which the session owed its agent once.
	ContextInjected bool `json:"contextInjected,omitempty"`
}

// EventType is turn.started.
func (*TurnStartedData) EventType() string { return "turn.started" }

// OnGlobalStream: turn.started also goes to GET /events, where the inbox and
// webhooks follow what waits for a person and how turns end.
func (*TurnStartedData) OnGlobalStream() {}

// evolve folds TurnStartedData into s (State.Evolve).
func (p *TurnStartedData) evolve(s *State, e Event) error {
	t, err := s.knownTurn(p.PromptID)
	if err != nil {
		return err
	}
	started := p.StartedAt
	t.State, t.StartedAt = TurnRunning, &started
	if p.ContextInjected {
		t.ContextInjected, s.Session.InjectContext = true, false
	}
	s.lastStarted = p.PromptID
	s.trimOutput()
	return nil
}

// TurnCompletedData is the payload of turn.completed.
type TurnCompletedData struct {
	EventCommon
	State      TurnState  `json:"state"`
	EndedAt    *time.Time `json:"endedAt"`
	StopReason string     `json:"stopReason"`
}

// EventType is turn.completed.
func (*TurnCompletedData) EventType() string { return "turn.completed" }

// OnGlobalStream: turn.completed also goes to GET /events, where the inbox and
// webhooks follow what waits for a person and how turns end.
func (*TurnCompletedData) OnGlobalStream() {}

// evolve folds TurnCompletedData into s (State.Evolve).
func (p *TurnCompletedData) evolve(s *State, _ Event) error { return s.endTurn(p.PromptID, p) }

// TurnFailedData is the payload of turn.failed.
type TurnFailedData struct {
	EventCommon
	State   TurnState  `json:"state"`
	EndedAt *time.Time `json:"endedAt"`
	Code    string     `json:"code"`
	Message string     `json:"message"`
}

// EventType is turn.failed.
func (*TurnFailedData) EventType() string { return "turn.failed" }

// OnGlobalStream: turn.failed also goes to GET /events, where the inbox and
// webhooks follow what waits for a person and how turns end.
func (*TurnFailedData) OnGlobalStream() {}

// evolve folds TurnFailedData into s (State.Evolve).
func (p *TurnFailedData) evolve(s *State, _ Event) error { return s.endTurn(p.PromptID, p) }

// TurnCancelledData is the payload of turn.cancelled. Reason "withdrawn"
// marks a queued prompt its client withdrew.
type TurnCancelledData struct {
	EventCommon
	State      TurnState  `json:"state"`
	EndedAt    *time.Time `json:"endedAt"`
	StopReason string     `json:"stopReason,omitempty"`
	// Reason is why it was cancelled when not by its agent or its user:
	// withdrawn (from the queue), budget_exceeded (a budget stopped it;
	// Message says which, and the turn keeps both as its error).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// CancelRequested: the user's cancel ended it (a queued turn the
	// cancel dropped).
	CancelRequested bool `json:"cancelRequested,omitempty"`
}

// EventType is turn.cancelled.
func (*TurnCancelledData) EventType() string { return "turn.cancelled" }

// OnGlobalStream: turn.cancelled also goes to GET /events, where the inbox and
// webhooks follow what waits for a person and how turns end.
func (*TurnCancelledData) OnGlobalStream() {}

// evolve folds TurnCancelledData into s (State.Evolve).
func (p *TurnCancelledData) evolve(s *State, _ Event) error { return s.endTurn(p.PromptID, p) }

// TurnInterruptedData is the payload of turn.interrupted.
type TurnInterruptedData struct {
	EventCommon
	State             TurnState          `json:"state"`
	EndedAt           *time.Time         `json:"endedAt"`
	Reason            string             `json:"reason"`
	DanglingToolCalls []DanglingToolCall `json:"danglingToolCalls"`
	ExitCode          *int               `json:"exitCode,omitempty"`
	ExitSignal        string             `json:"exitSignal,omitempty"`
	// Code and Message say what else is known of the interruption:
	// host_outbox_damaged when the executor host found the session's
	// outbox damaged (some of the turn's output is lost).
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Notice is the system message written just before the event that
	// tells the transcript why (none for a turn still queued when tetherd
	// restarted). decide words it; the write adds the message.
	Notice string `json:"notice,omitempty"`
}

// EventType is turn.interrupted.
func (*TurnInterruptedData) EventType() string { return "turn.interrupted" }

// OnGlobalStream: turn.interrupted also goes to GET /events, where the inbox and
// webhooks follow what waits for a person and how turns end.
func (*TurnInterruptedData) OnGlobalStream() {}

// evolve folds TurnInterruptedData into s (State.Evolve).
func (p *TurnInterruptedData) evolve(s *State, _ Event) error { return s.endTurn(p.PromptID, p) }

// TurnDeliveredData is the payload of turn.delivered: whether the turn's
// prompt reached the agent (DeliveredAt nil: a native load showed it did
// not, correcting an earlier record).
type TurnDeliveredData struct {
	EventCommon
	DeliveredAt *time.Time `json:"deliveredAt"`
}

// EventType is turn.delivered.
func (*TurnDeliveredData) EventType() string { return "turn.delivered" }

// evolve folds TurnDeliveredData into s (State.Evolve).
func (p *TurnDeliveredData) evolve(s *State, e Event) error {
	t, err := s.knownTurn(p.PromptID)
	if err != nil {
		return err
	}
	t.DeliveredAt = p.DeliveredAt
	return nil
}

// TurnCancelRequestedData is the payload of turn.cancel_requested: the
// user asked to cancel the running turn.
type TurnCancelRequestedData struct {
	EventCommon
}

// EventType is turn.cancel_requested.
func (*TurnCancelRequestedData) EventType() string { return "turn.cancel_requested" }

// evolve folds TurnCancelRequestedData into s (State.Evolve).
func (p *TurnCancelRequestedData) evolve(s *State, e Event) error {
	t, err := s.knownTurn(p.PromptID)
	if err != nil {
		return err
	}
	t.CancelRequested = true
	return nil
}

// TurnWorkspaceChangesData is the payload of turn.workspace_changes: what
// the executor found changed since the interrupted turn's checkpoint.
type TurnWorkspaceChangesData struct {
	EventCommon
	Changes WorkspaceChanges `json:"changes"`
}

// EventType is turn.workspace_changes.
func (*TurnWorkspaceChangesData) EventType() string { return "turn.workspace_changes" }

// evolve folds TurnWorkspaceChangesData into s (State.Evolve).
func (p *TurnWorkspaceChangesData) evolve(s *State, e Event) error {
	t, err := s.knownTurn(p.PromptID)
	if err != nil {
		return err
	}
	b, err := json.Marshal(p.Changes)
	if err != nil {
		return err
	}
	t.WorkspaceChanges = b
	return nil
}

// SessionQueueHeldData is the payload of session.queue_held: whether the
// queued turns wait for the user (see PlanInput.QueueHeld).
type SessionQueueHeldData struct {
	EventCommon
	Held bool `json:"held"`
}

// EventType is session.queue_held.
func (*SessionQueueHeldData) EventType() string { return "session.queue_held" }

// evolve folds SessionQueueHeldData into s (State.Evolve).
func (p *SessionQueueHeldData) evolve(s *State, e Event) error {
	p.applyTo(&s.Session, e.At)
	return nil
}

func (p *SessionQueueHeldData) applyTo(sess *Session, _ time.Time) { sess.QueueHeld = p.Held }
