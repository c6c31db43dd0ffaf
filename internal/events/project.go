package events

import (
	"context"
	"encoding/json"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// project writes the rows a committed event implies, in the transaction
// that stores the event, before the writer numbers and encodes it: the
// event is the change, the rows are its projection, so neither exists
// without the other. A change that emits the event writes nothing of its
// own. Event types listed here are projected only here (issue 29: every
// type moves here from the write closures of package sessions).
//
// A projection may complete its event's payload with what only the rows
// know, before the event is encoded: a new message's id when its emitter
// left it 0, and a tool call update merged into the whole tool call (ACP
// updates name only what changed; the event carries the call whole).
//
// A projection may also emit what the event implies elsewhere (a policy):
// a session's state change moves its task (followTask). Those events are
// numbered and projected after it, in the same transaction.
func project(ctx context.Context, tx *store.Store, d Draft, emit Emit) error {
	switch p := d.Payload.(type) {
	case *session.MessageAddedData:
		return projectMessage(ctx, tx, p)
	case *session.MessageChunkData:
		return tx.AppendChunk(ctx, p.MessageID, p.Text)
	case *session.ToolCallData:
		return projectToolCall(ctx, tx, p)
	case *session.ToolCallStartedData:
		return projectToolCall(ctx, tx, &p.ToolCallData)
	case *session.PermissionRequestedData:
		_, err := tx.CreatePermission(ctx, session.Permission{ID: p.RequestID, SessionID: p.SessionID, PromptID: p.PromptID,
			ToolCallID: p.ToolCallID, Title: p.Title, Options: p.Options, State: session.PermissionPending})
		return err
	case *session.PermissionResolvedData:
		_, err := tx.ResolvePermission(ctx, p.SessionID, p.RequestID, p.State, p.OptionID)
		return err
	case *session.TurnQueuedData:
		t, err := tx.CreateTurn(ctx, session.Turn{SessionID: p.SessionID, PromptID: p.PromptID, Kind: p.Kind, State: session.TurnQueued,
			Prompt: p.Prompt, ContinuesPromptID: p.ContinuesPromptID, Interruption: p.Interruption})
		if err != nil {
			return err
		}
		p.Seq = t.Seq // numbered by the session's turns
		// Every admission marks the session prompted: whichever commits
		// first records it, whatever failed before.
		return tx.MarkSessionPrompted(ctx, p.SessionID)
	case *session.TurnStartedData:
		if err := tx.StartTurn(ctx, p.SessionID, p.PromptID, p.StartedAt, p.ContextInjected); err != nil {
			return err
		}
		if p.ContextInjected {
			return tx.SetSessionInjectContext(ctx, p.SessionID, false)
		}
		return nil
	case *session.TurnCompletedData, *session.TurnFailedData, *session.TurnCancelledData, *session.TurnInterruptedData:
		c := p.(session.EventPayload).Base()
		t := session.Turn{SessionID: c.SessionID, PromptID: c.PromptID}
		session.EndTurn(&t, p.(session.EventPayload))
		if err := tx.EndTurn(ctx, t); err != nil {
			return err
		}
		if d.Copied {
			return nil // session.forked indexes the copy whole
		}
		return tx.IndexTurnText(ctx, t.SessionID, t.PromptID) // searchable once ended

	case *session.CommandStartedData:
		_, err := tx.CreateCommand(ctx, store.Command{SessionID: p.SessionID, ID: p.CommandID, Command: p.Command})
		return err
	case *session.CommandExitedData:
		return tx.EndCommand(ctx, p.SessionID, p.CommandID, store.CommandState(p.State), p.ExitCode, p.OutputBytes, p.DroppedBytes)
	case *session.ExecutorStatusData:
		return tx.UpdateExecutor(ctx, p.Executor())
	case *session.SessionStateChangedData:
		if err := tx.UpdateSessionState(ctx, p.SessionID, p.State); err != nil {
			return err
		}
		return followTask(ctx, tx, emit, p.SessionID, p.TaskID, p.State)
	case *session.TaskCreatedData:
		t, err := tx.CreateTask(ctx, session.Task{ID: p.TaskID, Title: p.Title, Workspace: p.Workspace, State: p.State, CreatedAt: p.CreatedAt})
		if err != nil {
			return err
		}
		p.State, p.CreatedAt = t.State, t.CreatedAt
		return nil
	case *session.TaskUpdatedData:
		_, err := tx.UpdateTask(ctx, p.TaskID, &p.Title, nil)
		return err
	case *session.TaskStateChangedData:
		return tx.SetTaskState(ctx, p.TaskID, p.State)
	case *session.SessionClosedData:
		return tx.UpdateSessionState(ctx, p.SessionID, p.State)
	case *session.TurnDeliveredData:
		return tx.SetTurnDelivered(ctx, p.SessionID, p.PromptID, p.DeliveredAt)
	case *session.TurnCancelRequestedData:
		return tx.SetTurnCancelRequested(ctx, p.SessionID, p.PromptID)
	case *session.TurnWorkspaceChangesData:
		b, err := json.Marshal(p.Changes)
		if err != nil {
			return err
		}
		return tx.SetTurnWorkspaceChanges(ctx, p.SessionID, p.PromptID, b)
	case *session.SessionResumedData:
		inject, lost := p.Context()
		if err := tx.SetSessionInjectContext(ctx, p.SessionID, inject); err != nil {
			return err
		}
		return tx.SetSessionContextLost(ctx, p.SessionID, lost)
	case *session.PlanUpdatedData:
		return tx.SetSessionPlan(ctx, p.SessionID, p.Entries)
	case *session.UsageUpdatedData:
		return tx.SetUsage(ctx, p.SessionID, p.Session, p.PromptID, p.Turn)
	case *session.SessionBudgetChangedData:
		return tx.SetSessionBudget(ctx, p.SessionID, p.Budget)
	case *session.TurnStalledData:
		at := p.StalledAt
		return tx.SetTurnStalled(ctx, p.SessionID, p.PromptID, &at)
	case *session.TurnStallEndedData:
		return tx.SetTurnStalled(ctx, p.SessionID, p.PromptID, nil)
	case *session.SessionChoicesChangedData:
		return tx.SetSessionChoices(ctx, p.SessionID, p.ModeChoice, p.ConfigChoices)
	case *session.SessionQueueHeldData:
		return tx.SetSessionQueueHeld(ctx, p.SessionID, p.Held)
	case *session.SessionTitleChangedData:
		return tx.SetSessionTitle(ctx, p.SessionID, p.Title, p.Source)
	case *session.SessionArchivedData:
		return tx.SetSessionArchived(ctx, p.SessionID, p.Archived)
	case *session.SessionForkedData:
		if err := tx.SetSessionForkedFrom(ctx, p.SessionID, *p.Origin()); err != nil {
			return err
		}
		return tx.IndexSessionText(ctx, p.SessionID) // the copied turns, which came before
	case *session.SessionRewoundData:
		return tx.SetSessionRewound(ctx, p.SessionID, *p.Rewind())
	}
	return nil
}

// projectMessage inserts message.added's message, under a fresh id when
// the emitter reserved none, closing the message it names (or, naming
// none, the session's latest).
func projectMessage(ctx context.Context, tx *store.Store, p *session.MessageAddedData) error {
	if p.MessageID == 0 {
		id, err := tx.NewMessageID(ctx)
		if err != nil {
			return err
		}
		p.MessageID = id
	}
	m := session.Message{ID: p.MessageID, SessionID: p.SessionID, PromptID: p.PromptID, Role: p.Role, Text: p.Text,
		Content: p.Content, CreatedAt: p.CreatedAt}
	var err error
	if p.Closes != 0 {
		m, err = tx.StartMessage(ctx, m, p.Closes)
	} else {
		m, err = tx.AddMessage(ctx, m)
	}
	p.CreatedAt = m.CreatedAt
	return err
}

// projectToolCall merges the tool call update p into the tool call its
// turn and id name (session.ToolCallKey; inserting it when new) and makes
// p the merged call.
func projectToolCall(ctx context.Context, tx *store.Store, p *session.ToolCallData) error {
	c := session.ToolCall{SessionID: p.SessionID, PromptID: p.PromptID, ToolCallID: p.ToolCallID,
		Title: p.Title, Kind: p.Kind, Status: p.Status, Interrupted: p.Interrupted, Content: p.Content,
		Locations: p.Locations, RawInput: p.RawInput, RawOutput: p.RawOutput}
	if p.CreatedAt != nil {
		c.CreatedAt = *p.CreatedAt
	}
	row, err := tx.UpsertToolCall(ctx, c)
	if err != nil {
		return err
	}
	*p = session.ToolCallData{EventCommon: p.EventCommon, ToolCallID: row.ToolCallID, Title: row.Title, Kind: row.Kind, Status: row.Status,
		Interrupted: row.Interrupted, Content: row.Content, Locations: row.Locations, RawInput: row.RawInput, RawOutput: row.RawOutput,
		CreatedAt: p.CreatedAt}
	return nil
}

// TaskFollow is the change that moves a session's task to the state the
// session's state implies (followTask) without changing the session:
// start-up repair's, for a session whose state it keeps.
type TaskFollow struct {
	Session, TaskID string
	State           session.SessionState
}

// SessionID is the session whose task follows.
func (c TaskFollow) SessionID() string { return c.Session }

// Apply moves the task (followTask).
func (c TaskFollow) Apply(ctx context.Context, tx *store.Store, emit Emit) error {
	return followTask(ctx, tx, emit, c.Session, c.TaskID, c.State)
}

// followTask moves task taskID to the state its session sessionID's state
// implies, emitting task.state_changed: a running turn makes the task
// IN_PROGRESS; a session waiting for input puts it in REVIEW unless
// another of its sessions is running. Other task states are only set by
// users. It is the policy session.state_changed's projection applies;
// start-up repair applies it to sessions whose state it keeps (TaskFollow).
func followTask(ctx context.Context, tx *store.Store, emit Emit, sessionID, taskID string, state session.SessionState) error {
	if state != session.SessionRunning && state != session.SessionWaitingForInput {
		return nil
	}
	// One read: the task's state and whether another session runs.
	prev, busy, err := tx.TaskFollow(ctx, taskID)
	if err != nil {
		return err
	}
	want := session.TaskInProgress
	if state == session.SessionWaitingForInput {
		if busy {
			return nil
		}
		want = session.TaskReview
	}
	if prev == want {
		return nil
	}
	emit(Draft{TaskID: taskID, Type: TaskStateChanged, Payload: &session.TaskStateChangedData{
		EventCommon: session.EventCommon{SessionID: sessionID}, State: want, PreviousState: prev}})
	return nil
}
