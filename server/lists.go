package server

import (
	"context"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// listAt runs the reads of a list response and reads the global stream's
// head in the same read transaction, and returns the global cursor the
// list is consistent with. The writer commits rows together with the
// events that describe them and numbers events in commit order, so the
// snapshot holds exactly the changes of the events up to that head: a
// client that streams GET /events from the cursor gets every later change
// once, with no gap and no duplicate, even if a write raced the list.
func (h *handlers) listAt(ctx context.Context, read func(r *store.Store) error) (string, error) {
	// GlobalEpoch may create the epoch (a write), so it runs outside the
	// read-only snapshot; it never changes while the daemon runs.
	epoch, err := h.cfg.Store.GlobalEpoch(ctx)
	if err != nil {
		return "", err
	}
	var b store.EventBounds
	err = h.cfg.Store.Snapshot(ctx, func(r *store.Store) error {
		if err := read(r); err != nil {
			return err
		}
		b, err = globalBounds(ctx, r)
		return err
	})
	if err != nil {
		return "", err
	}
	return events.Cursor{Epoch: epoch, N: b.Head}.String(), nil
}

// globalBounds is what the global stream holds as r sees it: First the
// lowest retained global id, Head the highest id ever assigned. Every
// global event at or below Head is committed and, unlike the highest
// retained global id, Head survives pruning.
func globalBounds(ctx context.Context, r *store.Store) (store.EventBounds, error) {
	b, err := r.GlobalEventBounds(ctx)
	if err != nil {
		return b, err
	}
	maxID, err := r.MaxEventID(ctx)
	if err != nil {
		return b, err
	}
	b.Head = max(b.Head, maxID)
	return b, nil
}

func sessionIDs(list []session.Session) []string {
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	return ids
}
