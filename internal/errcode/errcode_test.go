package errcode_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tether/tether/internal/errcode"
)

func TestMessageOf(t *testing.T) {
	coded := errcode.Wrap(errcode.AgentStartFailed, errors.New("exec: not found"), "agent did not start")
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"a coded error: its message, not what it wraps", coded, "agent did not start"},
		{"a coded error wrapped further", fmt.Errorf("start: %w", coded), "agent did not start"},
		{"a plain error", errors.New("boom"), "boom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := errcode.MessageOf(tt.err); got != tt.want {
				t.Errorf("MessageOf: got %q, want %q", got, tt.want)
			}
		})
	}
}
