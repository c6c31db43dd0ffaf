package events

import (
	"context"
	"encoding/json"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// project writes the rows a committed event implies, in the transaction
// that stores the event, right after the writer has numbered it: the
// event is the change, the rows are its projection, so neither exists
// without the other. A change that emits the event writes nothing of its
// own. Event types listed here are projected only here (issue 29: every
// type moves here from the write closures of package sessions).
func project(ctx context.Context, tx *store.Store, d Draft) error {
	switch p := d.Payload.(type) {
	case *session.TurnDeliveredData:
		return tx.SetTurnDelivered(ctx, p.SessionID, p.PromptID, p.DeliveredAt)
	case *session.TurnCancelRequestedData:
		return tx.SetTurnCancelRequested(ctx, p.SessionID, p.PromptID)
	case *session.TurnWorkspaceChangesData:
		b, err := json.Marshal(p.Changes)
		if err != nil {
			return err
		}
		return tx.SetTurnWorkspaceChanges(ctx, p.SessionID, p.PromptID, b)
	case *session.SessionResumedData:
		inject, lost := p.Context()
		if err := tx.SetSessionInjectContext(ctx, p.SessionID, inject); err != nil {
			return err
		}
		return tx.SetSessionContextLost(ctx, p.SessionID, lost)
	case *session.PlanUpdatedData:
		return tx.SetSessionPlan(ctx, p.SessionID, p.Entries)
	case *session.SessionQueueHeldData:
		return tx.SetSessionQueueHeld(ctx, p.SessionID, p.Held)
	}
	return nil
}
