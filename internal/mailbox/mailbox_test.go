package mailbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/mailbox"
)

// run starts m's loop and stops it with the test.
func run(t *testing.T, m *mailbox.Mailbox) {
	t.Helper()
	done := make(chan struct{})
	go func() { m.Run(); close(done) }()
	t.Cleanup(func() { m.Close(); <-done })
}

func TestRunsInOrder(t *testing.T) {
	m := mailbox.New(4, time.Second)
	var got []int
	for i := range 100 {
		m.Post(func() { got = append(got, i) })
	}
	if q, p := m.Queued(), m.Peak(); q != 100 || p != 100 {
		t.Errorf("before the loop runs: got %d queued, peak %d; want 100, 100", q, p)
	}
	run(t, m)
	n, err := mailbox.Call(context.Background(), m, func() (int, error) { return len(got), nil })
	if err != nil || n != 100 {
		t.Fatalf("Call: got %d, %v; want 100, nil", n, err)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("closure %d ran as %d: got %v", i, v, got)
		}
	}
}

func TestCallOnABusyMailboxIsOverloadedAndNeverRuns(t *testing.T) {
	m := mailbox.New(4, 50*time.Millisecond)
	run(t, m)
	release := make(chan struct{})
	m.Post(func() { <-release }) // the actor is stuck on something slow
	ran := false
	_, err := mailbox.Call(context.Background(), m, func() (struct{}, error) { ran = true; return struct{}{}, nil })
	close(release)
	if got := errcode.CodeOf(err); got != errcode.SessionOverloaded {
		t.Errorf("Call on a busy mailbox: got %v (%s), want %s", err, got, errcode.SessionOverloaded)
	}
	// Whatever runs after the refused call sees that it did not run.
	if _, err := mailbox.Call(context.Background(), m, func() (struct{}, error) { return struct{}{}, nil }); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Error("a call answered session_overloaded ran after all")
	}
}

func TestClosed(t *testing.T) {
	m := mailbox.New(1, time.Second)
	run(t, m)
	m.Close()
	if m.Post(func() {}) {
		t.Error("Post on a closed mailbox: got true, want false")
	}
	if err := m.PostWait(context.Background(), func() {}); !errors.Is(err, mailbox.ErrClosed) {
		t.Errorf("PostWait on a closed mailbox: got %v, want ErrClosed", err)
	}
	select {
	case <-m.Done():
	default:
		t.Error("Done is open after Close")
	}
}
