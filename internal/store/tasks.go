package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// CreateTask inserts a task. An empty ID gets a fresh UUID and an empty State
// becomes TODO. CreatedAt is the task.created event's when it carries one,
// else the store's now (the writer's, so ordering reflects commit order,
// not caller clocks); UpdatedAt starts equal to it.
func (s *Store) CreateTask(ctx context.Context, t session.Task) (session.Task, error) {
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	if t.State == "" {
		t.State = session.TaskTodo
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now()
	}
	t.UpdatedAt = t.CreatedAt
	row := fromTask(t)
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return session.Task{}, internal(err, "create task")
	}
	return toTask(row), nil
}

// GetTask returns one task or errcode.TaskNotFound.
func (s *Store) GetTask(ctx context.Context, id string) (session.Task, error) {
	row, err := getTask(s.db.WithContext(ctx), id)
	if err != nil {
		return session.Task{}, err
	}
	return toTask(row), nil
}

func getTask(db *gorm.DB, id string) (taskRow, error) {
	var row taskRow
	if err := db.Where("id = ?", id).Take(&row).Error; err != nil {
		if isNotFound(err) {
			return taskRow{}, notFound(errcode.TaskNotFound, "task", id)
		}
		return taskRow{}, internal(err, "get task")
	}
	return row, nil
}

// ListTasks returns every task, newest first.
func (s *Store) ListTasks(ctx context.Context) ([]session.Task, error) {
	var rows []taskRow
	if err := s.db.WithContext(ctx).Order("created_at DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, internal(err, "list tasks")
	}
	out := make([]session.Task, 0, len(rows))
	for _, r := range rows {
		out = append(out, toTask(r))
	}
	return out, nil
}

// UpdateTask changes the fields given (nil means "leave as is") and returns
// the task as stored afterwards, read in the same transaction.
func (s *Store) UpdateTask(ctx context.Context, id string, title *string, state *session.TaskState) (session.Task, error) {
	var out taskRow
	err := s.transaction(ctx, "update task", func(tx *gorm.DB) error {
		set := map[string]any{}
		if title != nil {
			set["title"] = *title
		}
		if state != nil {
			set["state"] = string(*state)
		}
		if len(set) > 0 {
			set["updated_at"] = toDBTime(now())
			if err := updateByID(tx, "tasks", id, set, errcode.TaskNotFound, "task"); err != nil {
				return err
			}
		}
		row, err := getTask(tx, id)
		out = row
		return err
	})
	if err != nil {
		return session.Task{}, err
	}
	return toTask(out), nil
}

// SetTaskState moves a task to state; the session layer derives task state
// from its sessions (DESIGN.md section 2).
func (s *Store) SetTaskState(ctx context.Context, id string, state session.TaskState) error {
	return updateRow(s.db.WithContext(ctx), "update task", func() error { return notFound(errcode.TaskNotFound, "task", id) },
		taskStateSQL, string(state), toDBTime(now()), id)
}

// TaskFollow returns what a task following its sessions' states needs:
// its state and whether one of its sessions is running a turn.
func (s *Store) TaskFollow(ctx context.Context, id string) (state session.TaskState, running bool, err error) {
	db := s.db.WithContext(ctx)
	defer traced(db, time.Now(), taskFollowSQL, func() int64 { return 1 })
	var st string
	err = db.Statement.ConnPool.QueryRowContext(db.Statement.Context, bindFor(db, taskFollowSQL), id).Scan(&st, &running)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, notFound(errcode.TaskNotFound, "task", id)
	case err != nil:
		return "", false, internal(err, "get task")
	}
	return session.TaskState(st), running, nil
}

// updateByID updates columns of the row with primary key id in table and
// reports the table's not-found code when no row matched.
func updateByID(db *gorm.DB, table, id string, set map[string]any, code errcode.Code, what string) error {
	res := db.Table(table).Where("id = ?", id).Updates(set)
	if res.Error != nil {
		return internal(res.Error, "update "+what)
	}
	if res.RowsAffected == 0 {
		return notFound(code, what, id)
	}
	return nil
}
