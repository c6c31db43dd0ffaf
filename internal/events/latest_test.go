package events_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// TestLatestDraftsSurviveARedoneBatch: a Latest draft (the recovery
// summary) is dropped only when it equals the last one committed. The
// writer decides that inside the transaction, so when a batch is rolled
// back because another op failed and each op is redone alone, the redo
// emits what the first run would have: no push is lost, none doubled.
func TestLatestDraftsSurviveARedoneBatch(t *testing.T) {
	ctx := context.Background()
	st, w, _ := openWriter(t)
	task, err := st.CreateTask(ctx, session.Task{Title: "t", Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: t.TempDir(), State: session.SessionCreated,
		EventEpoch: store.NewEpoch()}, session.Executor{Runtime: session.RuntimeStandalone, Status: session.ExecutorStopped})
	if err != nil {
		t.Fatal(err)
	}
	push := func(plan string) events.Apply {
		return func(_ *store.Store, emit events.Emit) error {
			emit(events.Draft{SessionID: sess.ID, Type: events.SessionRecoveryChanged, Latest: true, Payload: map[string]any{"recovery": plan}})
			return nil
		}
	}
	cases := []struct {
		name string
		plan string
		want int // events the push commits
	}{
		{"a new plan is pushed", "a", 1},
		{"an unchanged plan is not", "a", 0},
		{"a changed plan is", "b", 1},
		{"back to an earlier plan is a change", "a", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			held, release := make(chan struct{}), make(chan struct{})
			w.Submit(func(*store.Store, events.Emit) error { close(held); <-release; return nil })
			<-held
			pushed := w.Submit(push(tc.plan))
			failing := w.Submit(func(*store.Store, events.Emit) error { return errors.New("injected failure") })
			close(release)
			if _, err := failing.Wait(ctx); err == nil {
				t.Fatal("injected failing op: got nil error")
			}
			evs, err := pushed.Wait(ctx)
			if err != nil {
				t.Fatalf("push beside a failed op: %v", err)
			}
			if len(evs) != tc.want {
				t.Fatalf("push of plan %q after a redone batch: got %d events, want %d", tc.plan, len(evs), tc.want)
			}
		})
	}
}
