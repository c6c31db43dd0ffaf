package events_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
)

func TestParseCursorRoundTrip(t *testing.T) {
	for _, c := range []events.Cursor{{Epoch: "0123456789abcdef", N: 0}, {Epoch: "ABCDEF", N: 1 << 40}} {
		got, err := events.ParseCursor(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCursor(%q) = %v, %v; want %v", c.String(), got, err, c)
		}
	}
}

func TestParseCursorRejectsMalformed(t *testing.T) {
	for _, s := range []string{
		"", ":", "abc", "abc:", ":12", "abc:-1", "abc:1x", "xyz:1", "ab cd:1", "ab:cd:1",
		strings.Repeat("a", 200) + ":1",
	} {
		_, err := events.ParseCursor(s)
		var ce *errcode.Error
		if !errors.As(err, &ce) || ce.Code != errcode.InvalidCursor {
			t.Errorf("ParseCursor(%q) = %v, want an InvalidCursor error", s, err)
		}
	}
}

// TestGlobalTypes: the global stream carries exactly what lists of
// sessions and tasks, the inbox and webhooks follow, as the contract's
// GET /events says.
func TestGlobalTypes(t *testing.T) {
	want := []string{"budget.exceeded", "permission.requested", "permission.resolved", "session.archived", "session.auto_continued", "session.closed", "session.created",
		"session.executor_status", "session.forked", "session.recovery_changed", "session.resumed", "session.rewound", "session.state_changed",
		"session.title_changed", "task.created", "task.state_changed", "task.updated",
		"turn.cancelled", "turn.completed", "turn.failed", "turn.interrupted", "turn.stall_ended", "turn.stalled", "turn.started"}
	var got []string
	for _, typ := range events.Types() {
		if events.IsGlobal(typ) {
			got = append(got, typ)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("global types: got %v, want %v", got, want)
	}
	for _, typ := range []string{events.ResyncRequired, events.ReplayComplete, "no.such_type"} {
		if events.IsGlobal(typ) {
			t.Errorf("IsGlobal(%q) = true, want false", typ)
		}
	}
}
