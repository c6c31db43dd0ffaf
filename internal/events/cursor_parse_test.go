package events_test

import (
	"errors"
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

func TestGlobalTypes(t *testing.T) {
	for typ, want := range map[string]bool{
		events.SessionStateChanged: true, events.TaskStateChanged: true, events.SessionRecoveryChanged: true,
		events.MessageChunk: false, events.TurnCompleted: false, events.ResyncRequired: false,
	} {
		if got := events.IsGlobal(typ); got != want {
			t.Errorf("IsGlobal(%q) = %v, want %v", typ, got, want)
		}
	}
}
