package events

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Event types (DESIGN.md section 3). Payloads carry sessionId, taskId and,
// where a turn is involved, promptId.
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
	// Commands run in a session's directory (sessions/commands.go).
	CommandStarted = "command.started"
	CommandOutput  = "command.output"
	// CommandTruncated: output from an offset on is not in the log.
	CommandTruncated = "command.truncated"
	CommandExited    = "command.exited"
)

// payloadOf makes an empty payload of each stored event type: the one
// place that maps a type name of the log to its domain event.
var payloadOf = map[string]func() session.EventPayload{
	SessionCreated:         func() session.EventPayload { return &session.SessionCreatedData{} },
	SessionStateChanged:    func() session.EventPayload { return &session.SessionStateChangedData{} },
	SessionExecutorStatus:  func() session.EventPayload { return &session.ExecutorStatusData{} },
	SessionResumed:         func() session.EventPayload { return &session.SessionResumedData{} },
	SessionRecoveryChanged: func() session.EventPayload { return &session.RecoveryChangedData{} },
	SessionAutoContinued:   func() session.EventPayload { return &session.AutoContinuedData{} },
	SessionClosed:          func() session.EventPayload { return &session.SessionClosedData{} },
	SessionOptionsChanged:  func() session.EventPayload { return &session.SessionOptionsChangedData{} },
	SessionChoicesChanged:  func() session.EventPayload { return &session.SessionChoicesChangedData{} },
	TaskCreated:            func() session.EventPayload { return &session.TaskCreatedData{} },
	TaskUpdated:            func() session.EventPayload { return &session.TaskUpdatedData{} },
	TaskStateChanged:       func() session.EventPayload { return &session.TaskStateChangedData{} },
	TurnQueued:             func() session.EventPayload { return &session.TurnQueuedData{} },
	TurnStarted:            func() session.EventPayload { return &session.TurnStartedData{} },
	TurnCompleted:          func() session.EventPayload { return &session.TurnCompletedData{} },
	TurnFailed:             func() session.EventPayload { return &session.TurnFailedData{} },
	TurnCancelled:          func() session.EventPayload { return &session.TurnCancelledData{} },
	TurnInterrupted:        func() session.EventPayload { return &session.TurnInterruptedData{} },
	TurnDelivered:          func() session.EventPayload { return &session.TurnDeliveredData{} },
	TurnCancelRequested:    func() session.EventPayload { return &session.TurnCancelRequestedData{} },
	TurnWorkspaceChanges:   func() session.EventPayload { return &session.TurnWorkspaceChangesData{} },
	SessionQueueHeld:       func() session.EventPayload { return &session.SessionQueueHeldData{} },
	MessageAdded:           func() session.EventPayload { return &session.MessageAddedData{} },
	MessageChunk:           func() session.EventPayload { return &session.MessageChunkData{} },
	ToolCallStarted:        func() session.EventPayload { return &session.ToolCallData{} },
	ToolCallUpdated:        func() session.EventPayload { return &session.ToolCallData{} },
	PlanUpdated:            func() session.EventPayload { return &session.PlanUpdatedData{} },
	PermissionRequested:    func() session.EventPayload { return &session.PermissionRequestedData{} },
	PermissionResolved:     func() session.EventPayload { return &session.PermissionResolvedData{} },
	CommandStarted:         func() session.EventPayload { return &session.CommandStartedData{} },
	CommandOutput:          func() session.EventPayload { return &session.CommandOutputData{} },
	CommandTruncated:       func() session.EventPayload { return &session.CommandTruncatedData{} },
	CommandExited:          func() session.EventPayload { return &session.CommandExitedData{} },
}

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
