package workspace

import (
	"context"
	"testing"
	"time"
)

// TestRequestBound holds requests in op (as a read stuck in the kernel
// would) and checks the connection's bound: Concurrency run, Queue wait,
// the rest are refused at once, and a timed-out request keeps its slot
// until its op really returns.
func TestRequestBound(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenRoot(dir, FileLimits{Concurrency: 2, Queue: 1, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	stuck := func(context.Context) (string, error) {
		started <- struct{}{}
		<-release
		return "done", nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan error, 3)
	for i := 0; i < 2; i++ {
		go func() { _, err := r.do(ctx, "p", stuck); results <- err }()
	}
	<-started
	<-started
	// The third waits for a slot; wait until it is admitted.
	go func() { _, err := r.do(ctx, "p", stuck); results <- err }()
	for r.admitted.Load() != 3 {
		time.Sleep(time.Millisecond)
	}
	if _, err := r.do(context.Background(), "p", stuck); kindOf(err) != FileBusy {
		t.Fatalf("fourth request: got %v, want busy", err)
	}
	// The callers give up (their agent went away); the ops are still stuck
	// and keep their slots.
	cancel()
	for i := 0; i < 3; i++ {
		if err := <-results; err != context.Canceled {
			t.Fatalf("cancelled request: got %v, want context.Canceled", err)
		}
	}
	if got := r.admitted.Load(); got != 2 {
		t.Fatalf("admitted after the callers left: got %d, want 2 (the stuck ops)", got)
	}
	close(release)
	for r.admitted.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
	if text, err := r.do(context.Background(), "p", func(context.Context) (string, error) { return "ok", nil }); err != nil || text != "ok" {
		t.Fatalf("after the stuck ops returned: got (%q, %v), want (ok, nil)", text, err)
	}
}

func TestRequestTimeout(t *testing.T) {
	r, err := OpenRoot(t.TempDir(), FileLimits{Concurrency: 1, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	release := make(chan struct{})
	defer close(release)
	_, err = r.do(context.Background(), "p", func(context.Context) (string, error) { <-release; return "", nil })
	if kindOf(err) != FileTimeout {
		t.Fatalf("stuck request: got %v, want a timeout", err)
	}
	// The slot is still held by the stuck op: the next request waits and
	// times out too instead of piling another stuck op on the kernel.
	_, err = r.do(context.Background(), "p", func(context.Context) (string, error) { return "", nil })
	if kindOf(err) != FileTimeout {
		t.Fatalf("request behind a stuck one: got %v, want a timeout", err)
	}
}

func kindOf(err error) FileErrorKind {
	if fe, ok := err.(*FileError); ok {
		return fe.Kind
	}
	return ""
}
