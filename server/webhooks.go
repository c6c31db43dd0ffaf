package server

import (
	"context"
	"net/url"
	"slices"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/webhooks"
)

// Webhooks is the delivery side the webhook routes tell of changes
// (internal/webhooks.Dispatcher).
type Webhooks interface {
	// Changed: a webhook was created, changed or deleted.
	Changed()
	// Test POSTs a webhook.test message to the webhook now and logs it.
	Test(ctx context.Context, id string) (store.WebhookDelivery, error)
	// Stats is what /metrics shows of delivery on this node.
	Stats() webhooks.Stats
}

func (h *handlers) ListWebhooks(ctx context.Context, _ ListWebhooksRequestObject) (ListWebhooksResponseObject, error) {
	list, err := h.cfg.Store.ListWebhooks(ctx)
	if err != nil {
		return nil, err
	}
	out := WebhookList{Webhooks: make([]Webhook, 0, len(list))}
	for _, w := range list {
		out.Webhooks = append(out.Webhooks, webhookOf(w, false))
	}
	return ListWebhooks200JSONResponse(out), nil
}

func (h *handlers) CreateWebhook(ctx context.Context, req CreateWebhookRequestObject) (CreateWebhookResponseObject, error) {
	b := req.Body
	if err := checkWebhookURL(b.Url); err != nil {
		return nil, err
	}
	evs, err := webhookEvents(b.Events)
	if err != nil {
		return nil, err
	}
	secret := deref(b.Secret)
	if secret == "" {
		secret = webhooks.NewSecret()
	} else if err := webhooks.CheckSecret(secret); err != nil {
		return nil, err
	}
	// From now on: the log's head, of its epoch.
	epoch, err := h.cfg.Store.GlobalEpoch(ctx)
	if err != nil {
		return nil, err
	}
	// Several nodes: the settled head, below which no id is still to
	// commit (a higher id may commit before a lower one).
	head, err := h.cfg.Store.MaxEventID(ctx)
	if h.cfg.EventHorizon != nil {
		head, err = h.cfg.EventHorizon(ctx)
	}
	if err != nil {
		return nil, err
	}
	var w store.Webhook
	err = h.cfg.Writer.Exec(ctx, func(tx *store.Store) error {
		var err error
		w, err = tx.CreateWebhook(ctx, store.Webhook{URL: b.Url, Events: evs, Secret: secret, Description: deref(b.Description),
			LastEventID: head, Epoch: epoch})
		return err
	})
	if err != nil {
		return nil, err
	}
	h.webhooksChanged()
	return CreateWebhook201JSONResponse(webhookOf(w, true)), nil
}

func (h *handlers) GetWebhook(ctx context.Context, req GetWebhookRequestObject) (GetWebhookResponseObject, error) {
	w, err := h.cfg.Store.GetWebhook(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return GetWebhook200JSONResponse(webhookOf(w, false)), nil
}

func (h *handlers) UpdateWebhook(ctx context.Context, req UpdateWebhookRequestObject) (UpdateWebhookResponseObject, error) {
	b := req.Body
	c := store.WebhookChange{URL: b.Url, Description: b.Description, Active: b.Active}
	if b.Url != nil {
		if err := checkWebhookURL(*b.Url); err != nil {
			return nil, err
		}
	}
	if b.Events != nil {
		evs, err := webhookEvents(*b.Events)
		if err != nil {
			return nil, err
		}
		c.Events = evs
	}
	var w store.Webhook
	err := h.cfg.Writer.Exec(ctx, func(tx *store.Store) error {
		var err error
		w, err = tx.UpdateWebhook(ctx, req.Id, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	h.webhooksChanged()
	return UpdateWebhook200JSONResponse(webhookOf(w, false)), nil
}

func (h *handlers) DeleteWebhook(ctx context.Context, req DeleteWebhookRequestObject) (DeleteWebhookResponseObject, error) {
	if err := h.cfg.Writer.Exec(ctx, func(tx *store.Store) error { return tx.DeleteWebhook(ctx, req.Id) }); err != nil {
		return nil, err
	}
	h.webhooksChanged()
	return DeleteWebhook204Response{}, nil
}

func (h *handlers) TestWebhook(ctx context.Context, req TestWebhookRequestObject) (TestWebhookResponseObject, error) {
	if h.cfg.Webhooks == nil {
		return nil, errcode.New(errcode.ServiceShuttingDown, "this daemon delivers no webhooks")
	}
	d, err := h.cfg.Webhooks.Test(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return TestWebhook200JSONResponse(webhookDeliveryOf(d, "")), nil
}

func (h *handlers) ListWebhookDeliveries(ctx context.Context, req ListWebhookDeliveriesRequestObject) (ListWebhookDeliveriesResponseObject, error) {
	limit := 50
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	w, list, err := h.cfg.Store.ListWebhookDeliveries(ctx, req.Id, limit)
	if err != nil {
		return nil, err
	}
	out := WebhookDeliveryList{Deliveries: make([]WebhookDelivery, 0, len(list))}
	for _, d := range list {
		out.Deliveries = append(out.Deliveries, webhookDeliveryOf(d, w.Epoch))
	}
	return ListWebhookDeliveries200JSONResponse(out), nil
}

func (h *handlers) webhooksChanged() {
	if h.cfg.Webhooks != nil {
		h.cfg.Webhooks.Changed()
	}
}

// checkWebhookURL refuses what is not an absolute http or https URL.
func checkWebhookURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errcode.New(errcode.ValidationFailed, "url must be an absolute http or https URL").With("field", "url")
	}
	return nil
}

// webhookEvents checks a webhook's event types (at least one, each
// known) and returns them without repeats.
func webhookEvents(in []WebhookEventType) ([]string, error) {
	var out []string
	for _, e := range in {
		if !webhooks.Valid(string(e)) {
			return nil, errcode.New(errcode.ValidationFailed, "unknown webhook event %q", e).With("field", "events")
		}
		if !slices.Contains(out, string(e)) {
			out = append(out, string(e))
		}
	}
	if len(out) == 0 {
		return nil, errcode.New(errcode.ValidationFailed, "events must name at least one event").With("field", "events")
	}
	return out, nil
}

// webhookOf is a webhook in the contract's terms; withSecret shows its
// secret (the answer to its creation only).
func webhookOf(w store.Webhook, withSecret bool) Webhook {
	out := Webhook{Id: w.ID, Url: w.URL, State: WebhookState(w.State), Description: ptrIf(w.Description),
		DisabledReason: ptrIf(w.DisabledReason), Failures: ptrIf(w.Failures), LastError: ptrIf(w.LastError),
		NextAttemptAt: w.NextAttemptAt, LastDeliveredAt: w.LastDeliveredAt, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
	for _, e := range w.Events {
		out.Events = append(out.Events, WebhookEventType(e))
	}
	if withSecret {
		out.Secret = &w.Secret
	}
	return out
}

// webhookDeliveryOf is an attempt in the contract's terms; its event's
// cursor is of epoch.
func webhookDeliveryOf(d store.WebhookDelivery, epoch string) WebhookDelivery {
	out := WebhookDelivery{Id: d.ID, WebhookId: d.WebhookID, MessageId: d.MessageID, EventType: d.EventType, Attempt: d.Attempt,
		Ok: d.OK, StatusCode: ptrIf(d.StatusCode), Error: ptrIf(d.Error), At: d.At, DurationMs: d.Duration.Milliseconds()}
	if d.EventID != 0 {
		c := events.Cursor{Epoch: epoch, N: d.EventID}.String()
		out.EventId = &c
	}
	return out
}
