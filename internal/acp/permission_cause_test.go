package acp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/sandbox"
)

// blockingHandler holds every permission request until its context ends and
// reports why it ended.
type blockingHandler struct {
	asked chan struct{}
	cause chan error
}

func (h *blockingHandler) Update(_ acp.Update, done func()) { done() }

func (h *blockingHandler) RequestPermission(ctx context.Context, _ acp.PermissionRequest) (acp.PermissionOutcome, error) {
	h.asked <- struct{}{}
	<-ctx.Done()
	h.cause <- context.Cause(ctx)
	return acp.PermissionOutcome{Cancelled: true}, nil
}

// TestPermissionContextWhenAgentGoes: a permission request still open when
// the agent goes away ends with the cause ErrAgentGone, so the daemon can
// tell it from the agent withdrawing the request (then the permission
// expires rather than being cancelled).
func TestPermissionContextWhenAgentGoes(t *testing.T) {
	cwd := newCwd(t, "demo")
	h := &blockingHandler{asked: make(chan struct{}, 1), cause: make(chan error, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	state := t.TempDir()
	conn, err := acp.Start(ctx, acp.Options{Spec: acp.Spec{Command: tetherdBinary(t), Args: []string{"demo-agent", "--state-dir", state}, Dir: cwd,
		Sandbox: sandbox.Spec{Policy: sandbox.Policy{Writable: []string{state}}}},
		Handler: h, InitTimeout: waitTimeout, StopGrace: time.Second})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { conn.Stop() })
	sid, err := conn.NewSession(ctx, acp.SessionParams{Cwd: cwd})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	prompted := make(chan error, 1)
	go func() {
		_, err := conn.Prompt(context.Background(), sid, textPrompt(t, "/permission"))
		prompted <- err
	}()
	select {
	case <-h.asked:
	case <-ctx.Done():
		t.Fatal("the agent asked no permission")
	}
	conn.Stop()
	select {
	case cause := <-h.cause:
		if !errors.Is(cause, acp.ErrAgentGone) {
			t.Errorf("got cause %v, want %v", cause, acp.ErrAgentGone)
		}
	case <-ctx.Done():
		t.Fatal("the permission request's context did not end with the agent")
	}
	<-prompted
}
