package sessions

import (
	"context"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Typed changes: the writes a session hands to the event writer as values
// (events.Change). Each is built on the actor (or by a request) with every
// id it needs already chosen, holds only copies, and writes the same rows
// however often the writer runs it: when another change of its batch fails,
// the batch is rolled back and each change redone alone. None reads or
// changes the actor, which learns the outcome from the Pending (see
// write.go). New writes follow this pattern; the Apply closures still in
// use (events.Func) are to be turned into changes like these.

// sessionCreated creates a session, its task when the request named none,
// and the queued initial turn, in one change: all of it exists or none.
type sessionCreated struct {
	// Task is the task to create with the session (ID chosen), or nil
	// when Session.TaskID names an existing one.
	Task     *session.Task
	Session  session.Session
	Executor session.Executor
	// Initial is the initial prompt's turn (PromptID chosen), or nil.
	Initial *session.Turn
}

func (c sessionCreated) SessionID() string { return c.Session.ID }

func (c sessionCreated) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	if c.Task != nil {
		t, err := tx.CreateTask(ctx, *c.Task)
		if err != nil {
			return err
		}
		emitTaskCreated(emit, t)
	}
	sess, err := tx.CreateSession(ctx, c.Session, c.Executor)
	if err != nil {
		return err
	}
	emit(sessionDraft(sess.ID, sess.TaskID, events.SessionCreated, "", &session.SessionCreatedData{
		AgentProfileID: sess.AgentProfileID, Cwd: sess.Cwd, State: sess.State, Title: sess.Title, EventEpoch: sess.EventEpoch}))
	if c.Initial == nil {
		return nil
	}
	emit(queuedDraft(sess, *c.Initial))
	return nil
}

// recoveryPushed emits session.recovery_changed with the plan the
// transcript implies as the session's earlier changes left it. The event
// is marked Latest: the writer drops it when the plan equals the last one
// committed, deciding inside the transaction, so a redone batch decides the
// same and no push is lost.
type recoveryPushed struct {
	Session, TaskID string
	// Closing and AgentAvailable are the plan inputs the store lacks.
	Closing, AgentAvailable bool
	// Always emits even an unchanged plan (start-up reconciliation).
	Always bool
	// history keeps each session's whole-history check (nil: check now).
	history *historyChecks
}

func (c recoveryPushed) SessionID() string { return c.Session }

func (c recoveryPushed) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	in, err := readPlanInput(ctx, tx, c.Session, c.history)
	if err != nil {
		return err
	}
	in.Closing, in.AgentAvailable = c.Closing, c.AgentAvailable
	d := sessionDraft(c.Session, c.TaskID, events.SessionRecoveryChanged, "", &session.RecoveryChangedData{Recovery: session.Plan(in)})
	d.Latest = !c.Always
	emit(d)
	return nil
}

// turnEnded records a turn's terminal outcome and emits its terminal event.
type turnEnded struct {
	TaskID string
	Turn   session.Turn
}

func (c turnEnded) SessionID() string { return c.Turn.SessionID }

func (c turnEnded) Apply(_ context.Context, _ *store.Store, emit events.Emit) error {
	emit(turnEndedDraft(c.Turn.SessionID, c.TaskID, c.Turn, nil))
	return nil
}

// permissionResolved records a permission request's outcome and emits
// permission.resolved; a request closed already stays as it is (a repair
// after a reload may find its first write stored after all).
type permissionResolved struct {
	Session, TaskID, RequestID string
	End                        permissionEnd
}

func (c permissionResolved) SessionID() string { return c.Session }

func (c permissionResolved) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	row, err := tx.GetPermission(ctx, c.Session, c.RequestID)
	if err != nil {
		return err
	}
	if row.State != session.PermissionPending {
		return nil
	}
	emit(sessionDraft(c.Session, c.TaskID, events.PermissionResolved, row.PromptID,
		&session.PermissionResolvedData{RequestID: c.RequestID, State: c.End.State, OptionID: c.End.OptionID}))
	return nil
}
