package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Event is one committed event of a session's log: its sequence number in
// the session, when it was committed, and its domain payload (events.go).
// The payload's EventCommon names the session, task and turn it belongs to.
type Event struct {
	Seq     int64
	At      time.Time
	Payload EventPayload
}

// State is a session as its log tells it: the fold of its events, in
// order, by Evolve. It is what every view of the session (rows,
// transcript, status, recovery plan) must agree with; nothing in it is
// read from anywhere but the events. Its records keep the order the log
// gave them: turns by turn.queued, messages by message.added, tool calls
// by their first event.
type State struct {
	Session Session
	// Executor is the session's executor as its latest
	// session.executor_status tells it (host offsets are not in the log).
	Executor    Executor
	Turns       []Turn
	Messages    []Message
	ToolCalls   []ToolCall
	Permissions []Permission
	// Plan is the agent's latest plan entries (JSON), nil before any.
	Plan json.RawMessage
	// AgentMessageIDs maps a message to the ACP messageId its agent gave
	// it (message.added's agentMessageId), where it gave one.
	AgentMessageIDs map[int64]string
	// Seq is the sequence number of the last event folded (0: none).
	Seq int64

	turn map[string]int
	msg  map[int64]int
	tool map[ToolCallKey]int
	perm map[string]int
	// recent: keep only what PlanInput reads (see Recent); lastStarted
	// is the turn that started last, whose output a Recent state keeps.
	// text holds the streamed text of the messages chunks went to.
	text        map[int64]*strings.Builder
	recent      bool
	lastStarted string
}

// Fold returns the state events imply, folded in order from the empty one.
func Fold(events []Event) (*State, error) {
	s := &State{}
	for _, e := range events {
		if err := s.Evolve(e); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Turn returns the turn promptID, or nil when the log has none.
func (s *State) Turn(promptID string) *Turn {
	if i, ok := s.turn[promptID]; ok {
		return &s.Turns[i]
	}
	return nil
}

// PendingPermissions are the permission requests the log leaves open, in
// the order they were asked.
func (s *State) PendingPermissions() []Permission {
	var out []Permission
	for _, p := range s.Permissions {
		if p.State == PermissionPending {
			out = append(out, p)
		}
	}
	return out
}

// Evolve folds one event into s. Events must come in log order, each once:
// an event at or below s.Seq is an error (a log that repeats or reorders
// itself is not a log), as is an event about a turn or message the log
// never introduced. Event types with no part in a session's state (task
// events, commands, executor status, recovery pushes) only advance Seq.
func (s *State) Evolve(e Event) error {
	if e.Seq <= s.Seq {
		return fmt.Errorf("event %d folded after event %d", e.Seq, s.Seq)
	}
	if s.turn == nil {
		s.turn, s.msg, s.tool, s.perm = map[string]int{}, map[int64]int{}, map[ToolCallKey]int{}, map[string]int{}
		s.text = map[int64]*strings.Builder{}
		s.AgentMessageIDs = map[int64]string{}
	}
	if err := s.evolve(e); err != nil {
		return fmt.Errorf("event %d (%T): %w", e.Seq, e.Payload, err)
	}
	s.Seq = e.Seq
	return nil
}

func (s *State) evolve(e Event) error {
	// Each payload that changes the state folds itself (evolve, next to
	// its type in events.go); the others only advance Seq.
	if p, ok := e.Payload.(interface{ evolve(*State, Event) error }); ok {
		return p.evolve(s, e)
	}
	return nil
}

// EndTurn sets on t what the terminal event p (turn.completed, failed,
// cancelled or interrupted) says of its end; any other event leaves t as
// it is. The fold and the turn row's projection both end a turn here, so
// they cannot disagree on what an end records.
func EndTurn(t *Turn, p EventPayload) {
	switch p.(type) {
	case *TurnCompletedData, *TurnFailedData, *TurnCancelledData, *TurnInterruptedData:
		t.StalledAt = nil // an ended turn waits on no agent
	}
	switch p := p.(type) {
	case *TurnCompletedData:
		t.State, t.EndedAt, t.StopReason = p.State, p.EndedAt, p.StopReason
	case *TurnFailedData:
		t.State, t.EndedAt, t.ErrorCode, t.ErrorMessage = p.State, p.EndedAt, p.Code, p.Message
	case *TurnCancelledData:
		t.State, t.EndedAt, t.StopReason = p.State, p.EndedAt, p.StopReason
		t.CancelRequested = t.CancelRequested || p.CancelRequested
		if p.Reason == BudgetExceeded {
			t.ErrorCode, t.ErrorMessage = p.Reason, p.Message
		}
	case *TurnInterruptedData:
		t.State, t.EndedAt, t.InterruptReason = p.State, p.EndedAt, p.Reason
		t.ExitCode, t.ExitSignal, t.ErrorCode, t.ErrorMessage = p.ExitCode, p.ExitSignal, p.Code, p.Message
	}
}

// endTurn ends turn promptID as its terminal event p says (EndTurn).
func (s *State) endTurn(promptID string, p EventPayload) error {
	t, err := s.knownTurn(promptID)
	if err != nil {
		return err
	}
	EndTurn(t, p)
	return nil
}

// knownTurn is the turn promptID, which an earlier turn.queued introduced.
func (s *State) knownTurn(promptID string) (*Turn, error) {
	if t := s.Turn(promptID); t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("turn %s was never queued", promptID)
}

// Recent keeps a State to what the recovery plan reads (PlanInput), so a
// session actor can hold its state for the whole life of a long session:
// every turn, the session's flags and pending permissions, and the output
// (messages, tool calls) of the latest turn that started only. Output of
// other turns arriving later (late output of an older turn) is left out:
// no plan looks at it.
func (s *State) Recent() *State {
	s.recent = true
	s.trimOutput()
	return s
}

// Seed is the state a session's rows imply, the start of a Recent fold:
// sess and its turns in seq order, the output of the latest turn that ran,
// its pending permissions, and seq the last event the rows include.
func Seed(sess Session, turns []Turn, msgs []Message, calls []ToolCall, pending []Permission, seq int64) *State {
	s := &State{Session: sess, Seq: seq, recent: true, AgentMessageIDs: map[int64]string{},
		turn: map[string]int{}, msg: map[int64]int{}, tool: map[ToolCallKey]int{}, perm: map[string]int{},
		text: map[int64]*strings.Builder{}}
	for _, t := range turns {
		s.turn[t.PromptID] = len(s.Turns)
		s.Turns = append(s.Turns, t)
		if t.StartedAt != nil && (s.lastStarted == "" || t.StartedAt.After(*s.Turn(s.lastStarted).StartedAt)) {
			s.lastStarted = t.PromptID
		}
	}
	for _, m := range msgs {
		s.msg[m.ID] = len(s.Messages)
		s.Messages = append(s.Messages, m)
	}
	for _, c := range calls {
		s.tool[c.Key()] = len(s.ToolCalls)
		s.ToolCalls = append(s.ToolCalls, c)
	}
	for _, p := range pending {
		s.perm[p.ID] = len(s.Permissions)
		s.Permissions = append(s.Permissions, p)
	}
	return s
}

// trimOutput drops, in a Recent state, the output of every turn but the
// latest that started, and the answered permissions.
func (s *State) trimOutput() {
	if !s.recent {
		return
	}
	s.Messages = keep(s.Messages, s.msg, func(m Message) int64 { return m.ID },
		func(m Message) bool { return m.PromptID == s.lastStarted },
		func(m Message) { delete(s.AgentMessageIDs, m.ID); delete(s.text, m.ID) })
	s.ToolCalls = keep(s.ToolCalls, s.tool, ToolCall.Key,
		func(c ToolCall) bool { return c.PromptID == s.lastStarted }, func(ToolCall) {})
	s.trimPermissions()
}

// trimPermissions drops, in a Recent state, the answered permissions.
func (s *State) trimPermissions() {
	s.Permissions = keep(s.Permissions, s.perm, func(p Permission) string { return p.ID },
		func(p Permission) bool { return p.State == PermissionPending }, func(Permission) {})
}

// keep filters list in place to the records wanted says to keep, indexes
// them by key in index (rebuilt), and tells dropped of each other one.
func keep[T any, K comparable](list []T, index map[K]int, key func(T) K, wanted func(T) bool, dropped func(T)) []T {
	out := list[:0]
	clear(index)
	for _, r := range list {
		if wanted(r) {
			index[key(r)] = len(out)
			out = append(out, r)
		} else {
			dropped(r)
		}
	}
	clear(list[len(out):])
	return out
}

// PlanInput is what the recovery planner reads of s: the recent turns
// (from the oldest running or queued one, the last started by seq and the
// one started last; Earlier counts the ones before), the output of the
// latest turn that ran, the pending permissions and the session's flags.
// The caller adds what only a live session knows (Closing,
// AgentAvailable) and the history check (Gap).
func (s *State) PlanInput() PlanInput {
	in := PlanInput{State: s.Session.State, ContextLost: s.Session.ContextLost, QueueHeld: s.Session.QueueHeld,
		Permissions: s.PendingPermissions()}
	in.OverBudget, _ = s.Session.Budget.Reached(s.Session.Usage)
	from := -1
	lastBySeq, lastStarted := -1, -1
	for i, t := range s.Turns {
		if t.State == TurnRunning || t.State == TurnQueued {
			if from < 0 || t.Seq < s.Turns[from].Seq {
				from = i
			}
		}
		if t.StartedAt != nil {
			if lastBySeq < 0 || t.Seq > s.Turns[lastBySeq].Seq {
				lastBySeq = i
			}
			if lastStarted < 0 || t.StartedAt.After(*s.Turns[lastStarted].StartedAt) {
				lastStarted = i
			}
		}
	}
	start := int64(-1) // every turn, when none runs, waits or started
	for _, i := range []int{from, lastBySeq, lastStarted} {
		if i >= 0 && (start < 0 || s.Turns[i].Seq < start) {
			start = s.Turns[i].Seq
		}
	}
	for _, t := range s.Turns {
		if t.Seq >= start {
			in.Turns = append(in.Turns, t)
		} else {
			in.Earlier++
		}
	}
	if last := LastRun(in.Turns); last != nil {
		for _, m := range s.Messages {
			if m.PromptID == last.PromptID {
				in.Messages = append(in.Messages, m)
			}
		}
		for _, c := range s.ToolCalls {
			if c.PromptID == last.PromptID {
				in.ToolCalls = append(in.ToolCalls, c)
			}
		}
	}
	return in
}
