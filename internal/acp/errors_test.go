package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/acp"
)

// wireError decodes a JSON-RPC error object the way the SDK does when it
// reads one off the wire (so Data is a map[string]any, not a Go struct).
func wireError(t *testing.T, obj string) error {
	t.Helper()
	var re sdk.RequestError
	if err := json.Unmarshal([]byte(obj), &re); err != nil {
		t.Fatalf("decode %s: %v", obj, err)
	}
	return &re
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  func(t *testing.T) error
		want acp.ErrorClass
	}{
		{"nil", func(*testing.T) error { return nil }, acp.ClassNone},
		{"-32601 method not found", func(t *testing.T) error {
			return wireError(t, `{"code":-32601,"message":"Method not found","data":{"method":"session/resume"}}`)
		}, acp.ClassUnsupported},
		{"-32002 with data.uri", func(t *testing.T) error {
			return wireError(t, `{"code":-32002,"message":"Resource not found","data":{"uri":"sess-1"}}`)
		}, acp.ClassUnknownSession},
		{"-32603 no rollout found (codex)", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error","data":{"details":"no rollout found for thread id x"}}`)
		}, acp.ClassUnknownSession},
		{"-32603 no previous sessions (claude)", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error","data":{"details":"No previous sessions found for this project."}}`)
		}, acp.ClassUnknownSession},
		{"-32603 OpenCode service failure for an unknown session", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error: OpenCode service failure","data":{"service":"session"}}`)
		}, acp.ClassUnknownSession},
		{"-32603 OpenCode cannot connect to API (APIError) keeps the session", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error: Cannot connect to API: connect ECONNREFUSED 127.0.0.1:9","data":{"errorName":"APIError","service":"session"}}`)
		}, acp.ClassInternal},
		{"-32603 OpenCode service failure naming another error keeps the session", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error: OpenCode service failure","data":{"errorName":"ProviderAuthError","service":"session"}}`)
		}, acp.ClassInternal},
		{"-32603 data.service session without a service failure message", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error","data":{"service":"session"}}`)
		}, acp.ClassInternal},
		{"-32603 no rollout found as a data string", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error","data":"No rollout found for thread id 0199"}`)
		}, acp.ClassUnknownSession},
		{"-32603 no conversation found in the message", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"No conversation found with session ID: abc"}`)
		}, acp.ClassUnknownSession},
		{"-32602 invalid session identifier", func(t *testing.T) error {
			return wireError(t, `{"code":-32602,"message":"Invalid session identifier"}`)
		}, acp.ClassUnknownSession},
		{"-32602 session not found in data string", func(t *testing.T) error {
			return wireError(t, `{"code":-32602,"message":"Invalid params","data":"Session not found: abc"}`)
		}, acp.ClassUnknownSession},
		{"-32602 unrelated invalid params", func(t *testing.T) error {
			return wireError(t, `{"code":-32602,"message":"Invalid params","data":{"path":"x","error":"path must be absolute"}}`)
		}, acp.ClassInternal},
		{"-32603 the agent's backend process died (claude-agent-acp)", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error: The Claude Agent process exited unexpectedly. Please start a new session."}`)
		}, acp.ClassSessionLost},
		{"-32603 the agent's session stream ended (claude-agent-acp)", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error","data":{"details":"The Claude Agent session has ended. Please start a new session."}}`)
		}, acp.ClassSessionLost},
		{"-32602 saying start a new session is not a lost session", func(t *testing.T) error {
			return wireError(t, `{"code":-32602,"message":"Invalid params: please start a new session"}`)
		}, acp.ClassInternal},
		{"-32000 auth required", func(t *testing.T) error {
			return wireError(t, `{"code":-32000,"message":"Authentication required"}`)
		}, acp.ClassAuthRequired},
		{"-32000 auth required with details (demo, qwen)", func(t *testing.T) error {
			return wireError(t, `{"code":-32000,"message":"Authentication required","data":{"details":"Use /auth to set up credentials"}}`)
		}, acp.ClassAuthRequired},
		{"-32000 with another message (claude)", func(t *testing.T) error {
			return wireError(t, `{"code":-32000,"message":"Invalid API key · Please run /login"}`)
		}, acp.ClassAuthRequired},
		{"-32000 mentioning a session is still auth", func(t *testing.T) error {
			return wireError(t, `{"code":-32000,"message":"Authentication required to load session: session not found in cache"}`)
		}, acp.ClassAuthRequired},
		{"-32800 request cancelled", func(t *testing.T) error {
			return wireError(t, `{"code":-32800,"message":"Request cancelled","data":{"error":"context canceled"}}`)
		}, acp.ClassCancelled},
		{"-32800 after a deadline", func(t *testing.T) error {
			return wireError(t, `{"code":-32800,"message":"Request cancelled","data":{"error":"context deadline exceeded"}}`)
		}, acp.ClassTimeout},
		{"plain code 500", func(t *testing.T) error {
			return wireError(t, `{"code":500,"message":"Internal Server Error"}`)
		}, acp.ClassInternal},
		{"code 500 saying session not found", func(t *testing.T) error {
			return wireError(t, `{"code":500,"message":"session not found"}`)
		}, acp.ClassInternal},
		{"-32603 something else", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"something else"}`)
		}, acp.ClassInternal},
		{"-32603 data.service other", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error","data":{"service":"model"}}`)
		}, acp.ClassInternal},
		{"context.DeadlineExceeded", func(*testing.T) error { return context.DeadlineExceeded }, acp.ClassTimeout},
		{"wrapped context.DeadlineExceeded", func(*testing.T) error {
			return fmt.Errorf("prompt: %w", context.DeadlineExceeded)
		}, acp.ClassTimeout},
		{"peer disconnected before response", func(*testing.T) error {
			return sdk.NewInternalError(map[string]any{"error": "peer disconnected before response"})
		}, acp.ClassDisconnected},
		{"peer disconnected waiting for notifications", func(*testing.T) error {
			return sdk.NewInternalError(map[string]any{"error": "peer disconnected while waiting for pre-response notifications"})
		}, acp.ClassDisconnected},
		{"wrapped request error", func(t *testing.T) error {
			return fmt.Errorf("load: %w", wireError(t, `{"code":-32002,"message":"Resource not found"}`))
		}, acp.ClassUnknownSession},
		{"plain error", func(*testing.T) error { return errors.New("boom") }, acp.ClassInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err(t)
			if got := acp.Classify(err); got != tt.want {
				t.Errorf("Classify(%v): got %q, want %q", err, got, tt.want)
			}
		})
	}
}

func TestMessageAndCode(t *testing.T) {
	tests := []struct {
		name        string
		err         func(t *testing.T) error
		wantMessage string
		wantCode    int
	}{
		{"with data", func(t *testing.T) error {
			return wireError(t, `{"code":-32603,"message":"Internal error","data":{"details":"x"}}`)
		}, `Internal error: {"details":"x"}`, -32603},
		{"string data", func(t *testing.T) error {
			return wireError(t, `{"code":-32602,"message":"Invalid params","data":"bad cwd"}`)
		}, "Invalid params: bad cwd", -32602},
		{"without data", func(t *testing.T) error {
			return wireError(t, `{"code":-32000,"message":"Authentication required"}`)
		}, "Authentication required", -32000},
		{"null data", func(t *testing.T) error {
			return wireError(t, `{"code":-32000,"message":"Authentication required","data":null}`)
		}, "Authentication required", -32000},
		{"wrapped", func(t *testing.T) error {
			return fmt.Errorf("x: %w", wireError(t, `{"code":-32601,"message":"Method not found"}`))
		}, "Method not found", -32601},
		{"not a request error", func(*testing.T) error { return errors.New("boom") }, "boom", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err(t)
			if got := acp.Message(err); got != tt.wantMessage {
				t.Errorf("Message(%v): got %q, want %q", err, got, tt.wantMessage)
			}
			if got := acp.Code(err); got != tt.wantCode {
				t.Errorf("Code(%v): got %d, want %d", err, got, tt.wantCode)
			}
		})
	}
}
