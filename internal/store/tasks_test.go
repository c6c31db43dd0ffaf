package store_test

import (
	"context"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

func TestCreateTaskDefaultsAndRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)

	created, err := s.CreateTask(ctx, session.Task{Title: "fix bug", Workspace: "/src/repo"})
	if err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	if created.ID == "" {
		t.Error("got empty ID, want a generated one")
	}
	if created.State != session.TaskTodo {
		t.Errorf("got state %q, want %q", created.State, session.TaskTodo)
	}
	if created.CreatedAt.IsZero() || !created.UpdatedAt.Equal(created.CreatedAt) {
		t.Errorf("got CreatedAt %v UpdatedAt %v, want both set and equal", created.CreatedAt, created.UpdatedAt)
	}

	got, err := s.GetTask(ctx, created.ID)
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if got != created {
		t.Errorf("GetTask: got %+v, want %+v", got, created)
	}

	explicit, err := s.CreateTask(ctx, session.Task{ID: "t-1", State: session.TaskReview})
	if err != nil {
		t.Fatalf("CreateTask with ID: %v", err)
	}
	if explicit.ID != "t-1" || explicit.State != session.TaskReview {
		t.Errorf("got %q/%q, want t-1/REVIEW", explicit.ID, explicit.State)
	}
}

func TestGetTaskNotFound(t *testing.T) {
	_, err := openStore(t).GetTask(context.Background(), "missing")
	wantCode(t, err, errcode.TaskNotFound)
}

func TestListTasksNewestFirst(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	var ids []string
	for range 3 {
		ids = append(ids, mustTask(t, s).ID)
	}
	got, err := s.ListTasks(ctx)
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d tasks, want 3", len(got))
	}
	for i, task := range got {
		if want := ids[len(ids)-1-i]; task.ID != want {
			t.Errorf("position %d: got %s, want %s", i, task.ID, want)
		}
	}
}

func TestUpdateTask(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)
	title := "renamed"
	state := session.TaskInProgress

	tests := []struct {
		name      string
		title     *string
		state     *session.TaskState
		wantTitle string
		wantState session.TaskState
	}{
		{"nothing", nil, nil, task.Title, session.TaskTodo},
		{"title only", &title, nil, "renamed", session.TaskTodo},
		{"state only", nil, &state, "renamed", session.TaskInProgress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.UpdateTask(ctx, task.ID, tc.title, tc.state)
			if err != nil {
				t.Fatalf("UpdateTask: %v", err)
			}
			if got.Title != tc.wantTitle || got.State != tc.wantState {
				t.Errorf("got %q/%q, want %q/%q", got.Title, got.State, tc.wantTitle, tc.wantState)
			}
			if got.UpdatedAt.Before(task.UpdatedAt) {
				t.Errorf("got UpdatedAt %v before creation %v", got.UpdatedAt, task.UpdatedAt)
			}
		})
	}

	_, err := s.UpdateTask(ctx, "missing", &title, nil)
	wantCode(t, err, errcode.TaskNotFound)
}

func TestSetTaskState(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	task := mustTask(t, s)
	if err := s.SetTaskState(ctx, task.ID, session.TaskReview); err != nil {
		t.Fatalf("SetTaskState: %v", err)
	}
	got, err := s.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != session.TaskReview {
		t.Errorf("got state %q, want %q", got.State, session.TaskReview)
	}
	wantCode(t, s.SetTaskState(ctx, "missing", session.TaskReview), errcode.TaskNotFound)
}
