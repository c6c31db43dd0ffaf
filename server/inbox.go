package server

import (
	"context"

	"github.com/tether/tether/internal/store"
)

// ListInbox is GET /inbox: what waits for a person across all sessions,
// read with the global stream's head in one snapshot (listAt), so a
// client that follows GET /events from the cursor misses no change.
func (h *handlers) ListInbox(ctx context.Context, req ListInboxRequestObject) (ListInboxResponseObject, error) {
	f := store.InboxFilter{After: deref(req.Params.PageToken)}
	if req.Params.Limit != nil {
		f.Limit = *req.Params.Limit
	}
	var (
		items []store.InboxItem
		next  string
	)
	cursor, err := h.listAt(ctx, func(r *store.Store) error {
		var err error
		items, next, err = r.Inbox(ctx, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := InboxList{Items: make([]InboxItem, 0, len(items)), Cursor: cursor}
	for _, it := range items {
		out.Items = append(out.Items, inboxItemOf(it))
	}
	if next != "" {
		out.NextPageToken = &next
	}
	return ListInbox200JSONResponse(out), nil
}

// inboxItemOf is an inbox item in the contract's terms.
func inboxItemOf(it store.InboxItem) InboxItem {
	out := InboxItem{Id: it.ID, Kind: InboxItemKind(it.Kind), At: it.At, Session: sessionOf(it.Session, it.Executor)}
	if it.Permission != nil {
		p := permissionOf(*it.Permission)
		out.Permission = &p
	}
	if it.Turn != nil {
		t := turnOf(*it.Turn)
		out.Turn = &t
	}
	return out
}
