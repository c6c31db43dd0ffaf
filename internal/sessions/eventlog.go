package sessions

import (
	"context"

	"github.com/tether/tether/internal/events"
)

// EventLog is the event log as the session core writes to it: every
// change a session makes is submitted here, in order, and commits with
// the events that describe it (or fails, and its Pending says why). The
// daemon's is the group-commit writer (events.Writer); a test may put a
// fake in front of it that records or refuses changes, to see what the
// actors make of that.
type EventLog interface {
	// SubmitUnder queues c, decided under generation gen of its
	// session's lease (0: alone, or the one held now), and returns its
	// outcome; it waits while the log's queue is full.
	SubmitUnder(gen int64, c events.Change) *events.Pending
	// SubmitContext is SubmitChange for a submitter that can give up when
	// ctx ends while it waits for room.
	SubmitContext(ctx context.Context, c events.Change) *events.Pending
}

var _ EventLog = (*events.Writer)(nil)
