package webhooks

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/tether/tether/internal/store"
)

// The webhook event types (the contract's WebhookEventType).
const (
	PermissionRequested     = "permission.requested"
	PermissionResolved      = "permission.resolved"
	TurnEnded               = "turn.ended"
	TurnInterrupted         = "turn.interrupted"
	TurnStalled             = "turn.stalled"
	BudgetExceeded          = "budget.exceeded"
	SessionNeedsCredentials = "session.needs_credentials"
	// Test is only sent by POST /webhooks/{id}/test.
	Test = "webhook.test"
)

// EventTypes are the types a webhook may subscribe to.
var EventTypes = []string{PermissionRequested, PermissionResolved, TurnEnded, TurnInterrupted, TurnStalled, BudgetExceeded, SessionNeedsCredentials}

// Valid reports whether t is a type a webhook may subscribe to.
func Valid(t string) bool { return slices.Contains(EventTypes, t) }

// Message is what a webhook is sent of one log event.
type Message struct {
	// ID is the webhook-id header: the same on every attempt, and for
	// every webhook, of one event (the global epoch and the event's id).
	ID   string
	Type string
	// Body is the JSON POSTed (the contract's WebhookPayload).
	Body []byte
}

// outcomes map a turn's end event to turn.ended's outcome.
var outcomes = map[string]string{"turn.completed": "completed", "turn.failed": "failed", "turn.cancelled": "cancelled"}

// typeOf is the webhook type of a log event, "" for one no webhook is
// sent.
func typeOf(e store.Event) (typ, outcome string) {
	switch e.Type {
	case "permission.requested", "permission.resolved", "turn.interrupted", "turn.stalled", "budget.exceeded":
		return e.Type, ""
	case "turn.completed", "turn.failed", "turn.cancelled":
		return TurnEnded, outcomes[e.Type]
	case "session.executor_status":
		var st struct {
			Status    string `json:"status"`
			ErrorCode string `json:"errorCode"`
		}
		if json.Unmarshal(e.Payload, &st) == nil && st.Status == "error" && st.ErrorCode == "agent_auth_required" {
			return SessionNeedsCredentials, ""
		}
	}
	return "", ""
}

// MessageOf is the message of log event e of the global epoch for a
// webhook subscribed to events, and false when it is sent none of it.
func MessageOf(epoch string, e store.Event, events []string) (Message, bool) {
	typ, outcome := typeOf(e)
	if typ == "" || !slices.Contains(events, typ) {
		return Message{}, false
	}
	var ids struct {
		SessionID string `json:"sessionId"`
		TaskID    string `json:"taskId"`
		PromptID  string `json:"promptId"`
	}
	_ = json.Unmarshal(e.Payload, &ids) // a stored payload is JSON
	data := map[string]any{"sessionId": e.SessionID, "eventId": epoch + ":" + strconv.FormatInt(e.ID, 10), "event": e.Payload}
	if ids.TaskID != "" {
		data["taskId"] = ids.TaskID
	}
	if e.PromptID != "" {
		data["promptId"] = e.PromptID
	}
	if outcome != "" {
		data["outcome"] = outcome
	}
	return message(epoch+"_"+strconv.FormatInt(e.ID, 10), typ, textOf(typ, outcome, e), e.Time, data), true
}

// textOf says what happened in a line, for receivers that show text
// (Slack-compatible incoming webhooks read `text`; ntfy's templates can
// take it): the kind of event, the session's short id, and the detail
// its payload has.
func textOf(typ, outcome string, e store.Event) string {
	var p struct {
		Title   string `json:"title"`
		State   string `json:"state"`
		Message string `json:"message"`
		Reason  string `json:"reason"`
		Error   string `json:"error"`
		Seconds int64  `json:"seconds"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	sid := e.SessionID
	if len(sid) > 8 {
		sid = sid[:8]
	}
	switch typ {
	case PermissionRequested:
		return "Session " + sid + " asks for permission: " + p.Title
	case PermissionResolved:
		return "Session " + sid + ": permission " + p.State
	case TurnEnded:
		if p.Message != "" {
			return "Session " + sid + ": turn " + outcome + ": " + p.Message
		}
		return "Session " + sid + ": turn " + outcome
	case TurnInterrupted:
		return "Session " + sid + ": turn interrupted (" + p.Reason + "); it can be continued"
	case TurnStalled:
		return "Session " + sid + ": the agent has been silent for " + strconv.FormatInt(p.Seconds, 10) + " s; the turn may be stuck"
	case BudgetExceeded:
		return "Session " + sid + ": budget reached, the turn is stopped: " + p.Message
	case SessionNeedsCredentials:
		return "Session " + sid + ": the agent needs credentials: " + p.Error
	}
	return typ
}

// message encodes a payload.
func message(id, typ, text string, at time.Time, data map[string]any) Message {
	body, _ := json.Marshal(map[string]any{"type": typ, "timestamp": at.UTC().Format(time.RFC3339Nano), "text": text, "data": data})
	return Message{ID: id, Type: typ, Body: body}
}
