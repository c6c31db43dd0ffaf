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
	if h.cfg.EventHorizon != nil {
		head, err := h.listAtHorizon(ctx, read)
		return events.Cursor{Epoch: epoch, N: head}.String(), err
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

// listAtHorizonTries bounds how often a cluster's list is read again
// because a commit below its head was still running.
const listAtHorizonTries = 8

// listAtHorizon is listAt for several nodes, whose writers commit global
// ids out of order: a snapshot may hold an event whose lower neighbour
// has not committed yet. The head is the highest id the snapshot holds,
// once the log is settled up to it and the snapshot holds every event
// then in the log between the horizon read before it and that head (all
// below that horizon committed before the snapshot); else it reads
// again.
func (h *handlers) listAtHorizon(ctx context.Context, read func(r *store.Store) error) (int64, error) {
	for try := 1; ; try++ {
		before, err := h.cfg.EventHorizon(ctx)
		if err != nil {
			return 0, err
		}
		var top, held int64
		err = h.cfg.Store.Snapshot(ctx, func(r *store.Store) error {
			if err := read(r); err != nil {
				return err
			}
			if top, err = r.MaxEventID(ctx); err != nil {
				return err
			}
			held, err = r.CountEventsBetween(ctx, before, top)
			return err
		})
		if err != nil || top <= before {
			return before, err
		}
		if _, err := h.cfg.EventHorizon(ctx); err != nil {
			return 0, err
		}
		settled, err := h.cfg.Store.CountEventsBetween(ctx, before, top)
		if err != nil {
			return 0, err
		}
		if settled == held {
			return top, nil
		}
		if try == listAtHorizonTries {
			// The cursor before the snapshot may repeat a change the
			// list already shows, never skip one.
			return before, nil
		}
	}
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
