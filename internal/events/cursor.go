// Package events owns the durable event log: the single group-commit
// writer that turns transcript changes into committed events, the live hub
// that fans them out to subscribers, and the cursors clients resume from.
package events

import (
	"strconv"
	"strings"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// Control frames: sent on streams, never stored, never carrying an id.
const (
	ResyncRequired = "resync_required"
	ReplayComplete = "replay_complete"
	StreamLagged   = "stream_lagged"
)

// Resync reasons.
const (
	ReasonEpochMismatch = "epoch_mismatch"
	ReasonCursorAhead   = "cursor_ahead"
	ReasonCursorExpired = "cursor_expired"
)

// globalTypes are the event types the global stream carries: those whose
// payload says so (session.GlobalPayload).
var globalTypes = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range session.Payloads() {
		if _, ok := p.(session.GlobalPayload); ok {
			m[p.EventType()] = true
		}
	}
	return m
}()

// IsGlobal reports whether events of type t also go to GET /events.
func IsGlobal(t string) bool { return globalTypes[t] }

// Cursor is a position in a stream: the epoch of the history and the
// number (seq, or global id) of the last event seen.
type Cursor struct {
	Epoch string
	N     int64
}

// String renders the cursor as <epoch>:<n>.
func (c Cursor) String() string { return c.Epoch + ":" + strconv.FormatInt(c.N, 10) }

// ParseCursor parses <epoch>:<n>. A malformed cursor is a client error.
func ParseCursor(s string) (Cursor, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 || len(s) > 200 {
		return Cursor{}, errcode.New(errcode.InvalidCursor, "cursor %q is not of the form <epoch>:<seq>", s)
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || n < 0 {
		return Cursor{}, errcode.New(errcode.InvalidCursor, "cursor %q has a bad sequence number", s)
	}
	epoch := s[:i]
	for _, r := range epoch {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return Cursor{}, errcode.New(errcode.InvalidCursor, "cursor %q has a bad epoch", s)
		}
	}
	return Cursor{Epoch: epoch, N: n}, nil
}
