package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/tether/tether/internal/errcode"
)

// Webhook states.
const (
	WebhookActive   = "active"
	WebhookDisabled = "disabled"
)

// WebhookDeliveriesKept is how many delivery attempts of each webhook
// the log keeps (the newest).
const WebhookDeliveriesKept = 200

// Webhook is a URL the global log's events it subscribes to are POSTed
// to (internal/webhooks delivers them).
type Webhook struct {
	ID          string
	URL         string
	Events      []string
	Secret      string
	Description string
	State       string
	// DisabledReason says why State is disabled.
	DisabledReason string
	// LastEventID is the last global event id the webhook handled
	// (delivered, or passed over as not subscribed), of the global
	// epoch Epoch: delivery goes on after it.
	LastEventID int64
	Epoch       string
	// Failures counts the failed attempts in a row of the event being
	// delivered; LastError is the last one's, NextAttemptAt when the
	// next is due.
	Failures        int
	LastError       string
	NextAttemptAt   *time.Time
	LastDeliveredAt *time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// WebhookDelivery is one attempt to deliver one event to a webhook.
type WebhookDelivery struct {
	ID        int64
	WebhookID string
	// MessageID is the webhook-id header: the same on every attempt of
	// one event.
	MessageID string
	EventType string
	// EventID is the event's global id (0 for a test).
	EventID    int64
	Attempt    int
	OK         bool
	StatusCode int
	Error      string
	Duration   time.Duration
	At         time.Time
}

// WebhookProgress is what a delivery changed of its webhook, saved in one
// transaction with its attempts.
type WebhookProgress struct {
	LastEventID     int64
	Epoch           string
	Failures        int
	LastError       string
	NextAttemptAt   *time.Time
	LastDeliveredAt *time.Time
	// Disable, when set, disables the webhook with this reason.
	Disable string
}

type webhookRow struct {
	ID              string  `gorm:"column:id;primaryKey"`
	URL             string  `gorm:"column:url"`
	Events          string  `gorm:"column:events"`
	Secret          string  `gorm:"column:secret"`
	Description     string  `gorm:"column:description"`
	State           string  `gorm:"column:state"`
	DisabledReason  string  `gorm:"column:disabled_reason"`
	LastEventID     int64   `gorm:"column:last_event_id"`
	Epoch           string  `gorm:"column:epoch"`
	Failures        int     `gorm:"column:failures"`
	LastError       string  `gorm:"column:last_error"`
	NextAttemptAt   *dbTime `gorm:"column:next_attempt_at"`
	LastDeliveredAt *dbTime `gorm:"column:last_delivered_at"`
	CreatedAt       dbTime  `gorm:"column:created_at"`
	UpdatedAt       dbTime  `gorm:"column:updated_at"`
}

func (webhookRow) TableName() string { return "webhooks" }

type webhookDeliveryRow struct {
	ID         int64  `gorm:"column:id;primaryKey;autoIncrement"`
	WebhookID  string `gorm:"column:webhook_id"`
	MessageID  string `gorm:"column:message_id"`
	EventType  string `gorm:"column:event_type"`
	EventID    int64  `gorm:"column:event_id"`
	Attempt    int    `gorm:"column:attempt"`
	OK         bool   `gorm:"column:ok"`
	StatusCode int    `gorm:"column:status_code"`
	Error      string `gorm:"column:error"`
	DurationMS int64  `gorm:"column:duration_ms"`
	At         dbTime `gorm:"column:at"`
}

func (webhookDeliveryRow) TableName() string { return "webhook_deliveries" }

func toWebhook(r webhookRow) Webhook {
	w := Webhook{ID: r.ID, URL: r.URL, Secret: r.Secret, Description: r.Description, State: r.State,
		DisabledReason: r.DisabledReason, LastEventID: r.LastEventID, Epoch: r.Epoch, Failures: r.Failures,
		LastError: r.LastError, NextAttemptAt: fromDBTimePtr(r.NextAttemptAt), LastDeliveredAt: fromDBTimePtr(r.LastDeliveredAt),
		CreatedAt: r.CreatedAt.t, UpdatedAt: r.UpdatedAt.t}
	_ = json.Unmarshal([]byte(r.Events), &w.Events) // checked JSON (json_valid), written by CreateWebhook
	return w
}

func toWebhookDelivery(r webhookDeliveryRow) WebhookDelivery {
	return WebhookDelivery{ID: r.ID, WebhookID: r.WebhookID, MessageID: r.MessageID, EventType: r.EventType, EventID: r.EventID,
		Attempt: r.Attempt, OK: r.OK, StatusCode: r.StatusCode, Error: r.Error, Duration: time.Duration(r.DurationMS) * time.Millisecond, At: r.At.t}
}

func webhookNotFound(id string) error {
	return errcode.New(errcode.WebhookNotFound, "webhook %q not found", id).With("webhookId", id)
}

// CreateWebhook records a webhook, active, that delivers what happens
// from now on: its position is the global log's head (w.LastEventID and
// w.Epoch as given). A fresh id unless w.ID is set.
func (s *Store) CreateWebhook(ctx context.Context, w Webhook) (Webhook, error) {
	if w.ID == "" {
		w.ID = uuid.NewString()
	}
	events, err := json.Marshal(w.Events)
	if err != nil {
		return Webhook{}, internal(err, "create webhook")
	}
	at := toDBTime(now())
	row := webhookRow{ID: w.ID, URL: w.URL, Events: string(events), Secret: w.Secret, Description: w.Description,
		State: WebhookActive, LastEventID: w.LastEventID, Epoch: w.Epoch, CreatedAt: at, UpdatedAt: at}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return Webhook{}, internal(err, "create webhook")
	}
	return toWebhook(row), nil
}

// GetWebhook returns one webhook or errcode.WebhookNotFound.
func (s *Store) GetWebhook(ctx context.Context, id string) (Webhook, error) {
	var row webhookRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if isNotFound(err) {
			return Webhook{}, webhookNotFound(id)
		}
		return Webhook{}, internal(err, "get webhook")
	}
	return toWebhook(row), nil
}

// ListWebhooks returns every webhook, oldest first.
func (s *Store) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	var rows []webhookRow
	if err := s.db.WithContext(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, internal(err, "list webhooks")
	}
	out := make([]Webhook, len(rows))
	for i, r := range rows {
		out[i] = toWebhook(r)
	}
	return out, nil
}

// WebhookChange is what PATCH /webhooks/{id} changes (nil: unchanged).
type WebhookChange struct {
	URL         *string
	Events      []string
	Description *string
	// Active enables (from where it stopped, its failures forgotten) or
	// disables (reason "disabled by request") the webhook.
	Active *bool
}

// UpdateWebhook applies c and returns the webhook.
func (s *Store) UpdateWebhook(ctx context.Context, id string, c WebhookChange) (Webhook, error) {
	set := map[string]any{"updated_at": toDBTime(now())}
	if c.URL != nil {
		set["url"] = *c.URL
	}
	if c.Events != nil {
		b, err := json.Marshal(c.Events)
		if err != nil {
			return Webhook{}, internal(err, "update webhook")
		}
		set["events"] = string(b)
	}
	if c.Description != nil {
		set["description"] = *c.Description
	}
	if c.Active != nil && *c.Active {
		set["state"], set["disabled_reason"], set["failures"], set["last_error"], set["next_attempt_at"] = WebhookActive, "", 0, "", nil
	} else if c.Active != nil {
		set["state"], set["disabled_reason"] = WebhookDisabled, "disabled by request"
	}
	r := s.db.WithContext(ctx).Model(&webhookRow{}).Where("id = ?", id).Updates(set)
	if r.Error != nil {
		return Webhook{}, internal(r.Error, "update webhook")
	}
	if r.RowsAffected == 0 {
		return Webhook{}, webhookNotFound(id)
	}
	return s.GetWebhook(ctx, id)
}

// DeleteWebhook removes a webhook and its delivery log.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	return s.transaction(ctx, "delete webhook", func(tx *gorm.DB) error {
		if err := tx.Where("webhook_id = ?", id).Delete(&webhookDeliveryRow{}).Error; err != nil {
			return internal(err, "delete webhook")
		}
		r := tx.Where("id = ?", id).Delete(&webhookRow{})
		if r.Error != nil {
			return internal(r.Error, "delete webhook")
		}
		if r.RowsAffected == 0 {
			return webhookNotFound(id)
		}
		return nil
	})
}

// SaveWebhookProgress records a delivery's progress and its attempts in
// one transaction, and trims the webhook's log to WebhookDeliveriesKept.
// A webhook deleted meanwhile is left deleted (nothing is written).
func (s *Store) SaveWebhookProgress(ctx context.Context, id string, p WebhookProgress, attempts []WebhookDelivery) error {
	return s.transaction(ctx, "save webhook progress", func(tx *gorm.DB) error {
		set := map[string]any{"last_event_id": p.LastEventID, "epoch": p.Epoch, "failures": p.Failures,
			"last_error": p.LastError, "next_attempt_at": toDBTimePtr(p.NextAttemptAt), "updated_at": toDBTime(now())}
		if p.LastDeliveredAt != nil {
			set["last_delivered_at"] = toDBTimePtr(p.LastDeliveredAt)
		}
		if p.Disable != "" {
			set["state"], set["disabled_reason"] = WebhookDisabled, p.Disable
		}
		r := tx.Model(&webhookRow{}).Where("id = ?", id).Updates(set)
		if r.Error != nil {
			return internal(r.Error, "save webhook progress")
		}
		if r.RowsAffected == 0 || len(attempts) == 0 {
			return nil
		}
		return insertDeliveries(tx, attempts)
	})
}

// AddWebhookDelivery logs one attempt made outside the webhook's order
// (a test).
func (s *Store) AddWebhookDelivery(ctx context.Context, d WebhookDelivery) error {
	return s.transaction(ctx, "log webhook delivery", func(tx *gorm.DB) error { return insertDeliveries(tx, []WebhookDelivery{d}) })
}

func insertDeliveries(tx *gorm.DB, attempts []WebhookDelivery) error {
	rows := make([]webhookDeliveryRow, len(attempts))
	for i, d := range attempts {
		rows[i] = webhookDeliveryRow{WebhookID: d.WebhookID, MessageID: d.MessageID, EventType: d.EventType, EventID: d.EventID,
			Attempt: d.Attempt, OK: d.OK, StatusCode: d.StatusCode, Error: d.Error, DurationMS: d.Duration.Milliseconds(), At: toDBTime(d.At)}
	}
	if err := tx.CreateInBatches(rows, 100).Error; err != nil {
		return internal(err, "log webhook deliveries")
	}
	// Keep the newest: everything at or below the oldest kept id's
	// predecessor goes.
	id := attempts[0].WebhookID
	if err := tx.Exec(`DELETE FROM webhook_deliveries WHERE webhook_id = ? AND id <= (
		SELECT id FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
		id, id, WebhookDeliveriesKept).Error; err != nil {
		return internal(err, "trim webhook deliveries")
	}
	return nil
}

// ListWebhookDeliveries returns a webhook and its latest attempts, newest
// first (the webhook names the epoch of the attempts' event ids).
func (s *Store) ListWebhookDeliveries(ctx context.Context, id string, limit int) (Webhook, []WebhookDelivery, error) {
	w, err := s.GetWebhook(ctx, id)
	if err != nil {
		return Webhook{}, nil, err
	}
	var rows []webhookDeliveryRow
	if err := s.db.WithContext(ctx).Where("webhook_id = ?", id).Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return Webhook{}, nil, internal(err, "list webhook deliveries")
	}
	out := make([]WebhookDelivery, len(rows))
	for i, r := range rows {
		out[i] = toWebhookDelivery(r)
	}
	return w, out, nil
}
