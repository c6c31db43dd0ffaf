// Package tasks creates and changes tasks, the aggregate a session
// belongs to (DESIGN.md section 2): its own events (task.*) on the global
// stream, no part of any session's log.
package tasks

import (
	"context"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/workspace"
)

// Writer is the event log as tasks write to it (events.Writer).
type Writer interface {
	SubmitContext(ctx context.Context, c events.Change) *events.Pending
}

// Service creates and changes tasks.
type Service struct {
	store *store.Store
	w     Writer
	cwd   workspace.CwdPolicy
}

// New returns a Service that writes through w and checks a task's
// workspace against cwd (the sessions' cwd policy).
func New(st *store.Store, w Writer, cwd workspace.CwdPolicy) *Service {
	return &Service{store: st, w: w, cwd: cwd}
}

// Tasks are written like everything else a client may follow: through the
// event writer, with their rows and the events that describe them in one
// transaction, so that a list read with its cursor and the global stream
// from that cursor never disagree.

// Input is a request to create a task.
type Input struct {
	Title string
	// Workspace is the directory the task works in, checked against the
	// cwd policy; empty for none.
	Workspace string
}

// Patch names the fields of a task to change; nil leaves one as is.
type Patch struct {
	Title *string
	State *session.TaskState
}

// CreatedDraft is task.created of the new task t: its row is the
// event's projection (the projection sets its state and time when t
// leaves them unset).
func CreatedDraft(t session.Task) events.Draft {
	return events.Draft{TaskID: t.ID, Type: events.TaskCreated, Payload: &session.TaskCreatedData{
		Title: t.Title, Workspace: t.Workspace, State: t.State, CreatedAt: t.CreatedAt}}
}

// Create creates a task and emits task.created on the global stream.
// The id is chosen before the write, so the op is a value: re-running it
// after a rolled-back batch writes the same task.
func (s *Service) Create(ctx context.Context, in Input) (session.Task, error) {
	t := session.Task{ID: uuid.NewString(), Title: in.Title}
	if in.Workspace != "" {
		dir, err := s.cwd.ResolveDir(in.Workspace)
		if err != nil {
			return session.Task{}, err
		}
		t.Workspace = dir
	}
	if _, err := s.w.SubmitContext(ctx, events.Emitted("", CreatedDraft(t))).Wait(ctx); err != nil {
		return session.Task{}, err
	}
	return s.store.GetTask(context.WithoutCancel(ctx), t.ID)
}

// Update renames a task or sets its state and emits what changed:
// task.updated for a new title, task.state_changed for a new state. A
// patch that changes nothing emits nothing. The task as it stands after
// the change is read back once it committed.
func (s *Service) Update(ctx context.Context, id string, p Patch) (session.Task, error) {
	if _, err := s.w.SubmitContext(ctx, taskPatched{ID: id, Patch: p}).Wait(ctx); err != nil {
		return session.Task{}, err
	}
	return s.store.GetTask(context.WithoutCancel(ctx), id)
}

// taskPatched applies a Patch: it compares the patch with the task as
// the transaction finds it and emits what changed, whose projections
// change the row.
type taskPatched struct {
	ID    string
	Patch Patch
}

func (c taskPatched) SessionID() string { return "" }

func (c taskPatched) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	prev, err := tx.GetTask(ctx, c.ID)
	if err != nil {
		return err
	}
	if t := c.Patch.Title; t != nil && *t != prev.Title {
		emit(events.Draft{TaskID: c.ID, Type: events.TaskUpdated, Payload: &session.TaskUpdatedData{Title: *t}})
	}
	if st := c.Patch.State; st != nil && *st != prev.State {
		emit(events.Draft{TaskID: c.ID, Type: events.TaskStateChanged, Payload: &session.TaskStateChangedData{State: *st, PreviousState: prev.State}})
	}
	return nil
}
