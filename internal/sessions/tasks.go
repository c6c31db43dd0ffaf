package sessions

import (
	"context"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Tasks are written like everything else a client may follow: through the
// event writer, with their rows and the events that describe them in one
// transaction, so that a list read with its cursor and the global stream
// from that cursor never disagree.

// TaskInput is a request to create a task.
type TaskInput struct {
	Title string
	// Workspace is the directory the task works in, checked against the
	// cwd policy; empty for none.
	Workspace string
}

// TaskPatch names the fields of a task to change; nil leaves one as is.
type TaskPatch struct {
	Title *string
	State *session.TaskState
}

// emitTaskCreated records task.created for t, inside the op that created it.
func emitTaskCreated(emit events.Emit, t session.Task) {
	emit(events.Draft{TaskID: t.ID, Type: events.TaskCreated, Payload: &session.TaskCreatedData{
		Title: t.Title, Workspace: t.Workspace, State: t.State, CreatedAt: t.CreatedAt}})
}

// CreateTask creates a task and emits task.created on the global stream.
// The id is chosen before the write, so the op is a value: re-running it
// after a rolled-back batch writes the same task.
func (m *Manager) CreateTask(ctx context.Context, in TaskInput) (session.Task, error) {
	t := session.Task{ID: uuid.NewString(), Title: in.Title}
	if in.Workspace != "" {
		dir, err := m.ResolveCwd(in.Workspace)
		if err != nil {
			return session.Task{}, err
		}
		t.Workspace = dir
	}
	// The transaction is shared with other ops of the batch: a client
	// going away must not cancel it.
	wctx := context.WithoutCancel(ctx)
	var out session.Task
	_, err := m.w.Do(ctx, func(tx *store.Store, emit events.Emit) error {
		created, err := tx.CreateTask(wctx, t)
		if err != nil {
			return err
		}
		out = created
		emitTaskCreated(emit, created)
		return nil
	})
	if err != nil {
		return session.Task{}, err
	}
	return out, nil
}

// UpdateTask renames a task or sets its state and emits what changed:
// task.updated for a new title, task.state_changed for a new state. A
// patch that changes nothing emits nothing.
func (m *Manager) UpdateTask(ctx context.Context, id string, p TaskPatch) (session.Task, error) {
	wctx := context.WithoutCancel(ctx)
	var out session.Task
	_, err := m.w.Do(ctx, func(tx *store.Store, emit events.Emit) error {
		prev, err := tx.GetTask(wctx, id)
		if err != nil {
			return err
		}
		t, err := tx.UpdateTask(wctx, id, p.Title, p.State)
		if err != nil {
			return err
		}
		out = t
		if t.Title != prev.Title {
			emit(events.Draft{TaskID: id, Type: events.TaskUpdated, Payload: &session.TaskUpdatedData{Title: t.Title}})
		}
		if t.State != prev.State {
			emit(events.Draft{TaskID: id, Type: events.TaskStateChanged, Payload: &session.TaskStateChangedData{State: t.State, PreviousState: prev.State}})
		}
		return nil
	})
	if err != nil {
		return session.Task{}, err
	}
	return out, nil
}
