package events

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Event types (DESIGN.md section 3) that code outside the session package
// names; every stored type is a session payload's EventType (payloadOf), so
// a new event type needs no constant here. Payloads carry sessionId,
// taskId and, where a turn is involved, promptId.
const (
	SessionCreated         = "session.created"
	SessionStateChanged    = "session.state_changed"
	SessionExecutorStatus  = "session.executor_status"
	SessionResumed         = "session.resumed"
	SessionRecoveryChanged = "session.recovery_changed"
	// SessionAutoContinued audits a continuation tetherd made by itself.
	SessionAutoContinued = "session.auto_continued"
	SessionClosed        = "session.closed"
	TaskStateChanged     = "task.state_changed"
	// TaskCreated carries a new task whole; TaskUpdated its new title.
	TaskCreated     = "task.created"
	TaskUpdated     = "task.updated"
	TurnQueued      = "turn.queued"
	TurnStarted     = "turn.started"
	TurnCompleted   = "turn.completed"
	TurnFailed      = "turn.failed"
	TurnCancelled   = "turn.cancelled"
	TurnInterrupted = "turn.interrupted"
	// TurnDelivered records whether a turn's prompt reached the agent.
	TurnDelivered = "turn.delivered"
	// TurnCancelRequested records the user's cancel of a running turn.
	TurnCancelRequested = "turn.cancel_requested"
	// TurnWorkspaceChanges records what an interrupted turn changed.
	TurnWorkspaceChanges = "turn.workspace_changes"
	// SessionQueueHeld records whether the queued turns wait for the user.
	SessionQueueHeld    = "session.queue_held"
	MessageAdded        = "message.added"
	MessageChunk        = "message.chunk"
	ToolCallStarted     = "tool_call.started"
	ToolCallUpdated     = "tool_call.updated"
	PlanUpdated         = "plan.updated"
	PermissionRequested = "permission.requested"
	PermissionResolved  = "permission.resolved"
	// SessionOptionsChanged carries the session's modes, current mode,
	// config options and available commands whenever one of them changes.
	SessionOptionsChanged = "session.options_changed"
	// SessionChoicesChanged carries the mode and config option values the
	// user chose, applied again at every start of the agent.
	SessionChoicesChanged = "session.choices_changed"
	// Commands run in a session's directory (package commands).
	CommandStarted = "command.started"
	CommandOutput  = "command.output"
	// CommandTruncated: output from an offset on is not in the log.
	CommandTruncated = "command.truncated"
	CommandExited    = "command.exited"
)

// payloadOf makes an empty payload of each stored event type: the one
// place that maps a type name of the log to its domain event.
var payloadOf = func() map[string]func() session.EventPayload {
	m := map[string]func() session.EventPayload{}
	for _, p := range session.Payloads() {
		typ := reflect.TypeOf(p).Elem()
		m[p.EventType()] = func() session.EventPayload { return reflect.New(typ).Interface().(session.EventPayload) }
	}
	return m
}()

// Types are the event types the log stores, sorted.
func Types() []string {
	out := make([]string, 0, len(payloadOf))
	for t := range payloadOf {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// NewPayload returns an empty payload of stored event type typ.
func NewPayload(typ string) (session.EventPayload, bool) {
	mk, ok := payloadOf[typ]
	if !ok {
		return nil, false
	}
	return mk(), true
}

// Decode turns a stored event back into the domain event it was made
// from. An unknown type or a payload that does not decode is an error: the
// log holds only what the writer wrote.
func Decode(e store.Event) (session.Event, error) {
	p, ok := NewPayload(e.Type)
	if !ok {
		return session.Event{}, fmt.Errorf("event %d: unknown type %q", e.Seq, e.Type)
	}
	if err := json.Unmarshal(e.Payload, p); err != nil {
		return session.Event{}, fmt.Errorf("event %d (%s): %w", e.Seq, e.Type, err)
	}
	return session.Event{Seq: e.Seq, At: e.Time, Payload: p}, nil
}

// FoldSession reads session sessionID's whole stored log and folds it:
// the state the log alone implies (see session.State).
func FoldSession(ctx context.Context, st *store.Store, sessionID string) (*session.State, error) {
	s := &session.State{}
	const page = 5000
	for after := int64(0); ; {
		evs, err := st.ListSessionEvents(ctx, sessionID, after, page)
		if err != nil {
			return s, err
		}
		for _, se := range evs {
			e, err := Decode(se)
			if err != nil {
				return s, err
			}
			if err := s.Evolve(e); err != nil {
				return s, err
			}
			after = se.Seq
		}
		if len(evs) < page {
			return s, nil
		}
	}
}
