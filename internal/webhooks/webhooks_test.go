package webhooks_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/webhooks"
)

// TestSign: the Standard Webhooks specification's example (its secret,
// message id, timestamp and body) signs as the specification says.
func TestSign(t *testing.T) {
	got, err := webhooks.Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; err != nil || got != want {
		t.Fatalf("Sign: got %q, %v; want %q", got, err, want)
	}
	if _, err := webhooks.Sign("nope", "m", 1, nil); err == nil {
		t.Error("Sign with a secret that is not whsec_: got no error")
	}
}

func TestCheckSecret(t *testing.T) {
	for _, tc := range []struct {
		name, secret string
		ok           bool
	}{
		{"made", webhooks.NewSecret(), true},
		{"the specification's 24 bytes", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true},
		{"no prefix", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false},
		{"not base64", "whsec_***", false},
		{"too short", "whsec_AAAA", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := webhooks.CheckSecret(tc.secret); (err == nil) != tc.ok {
				t.Errorf("CheckSecret(%q): got %v, want ok %v", tc.secret, err, tc.ok)
			}
		})
	}
}

// TestMessageOf: which log events a webhook is sent, as what.
func TestMessageOf(t *testing.T) {
	all := webhooks.EventTypes
	cases := []struct {
		name, typ, payload string
		events             []string
		want, outcome      string // "" want: none
	}{
		{"permission asked", "permission.requested", `{"title":"Run ls"}`, all, "permission.requested", ""},
		{"permission answered", "permission.resolved", `{"state":"selected"}`, all, "permission.resolved", ""},
		{"turn completed", "turn.completed", `{}`, all, "turn.ended", "completed"},
		{"turn failed", "turn.failed", `{"message":"overloaded"}`, all, "turn.ended", "failed"},
		{"turn cancelled", "turn.cancelled", `{}`, all, "turn.ended", "cancelled"},
		{"turn interrupted", "turn.interrupted", `{"reason":"agent_exited"}`, all, "turn.interrupted", ""},
		{"turn stalled", "turn.stalled", `{"seconds":300}`, all, "turn.stalled", ""},
		{"stall over", "turn.stall_ended", `{}`, all, "", ""},
		{"budget reached", "budget.exceeded", `{"limit":"tokens","message":"the session used 1020 tokens of its budget of 1000"}`, all, "budget.exceeded", ""},
		{"budget reached, not subscribed", "budget.exceeded", `{"limit":"cost"}`, []string{"turn.ended"}, "", ""},
		{"agent needs credentials", "session.executor_status", `{"status":"error","errorCode":"agent_auth_required","error":"log in"}`, all, "session.needs_credentials", ""},
		{"agent failed otherwise", "session.executor_status", `{"status":"error","errorCode":"agent_exited"}`, all, "", ""},
		{"agent ready", "session.executor_status", `{"status":"ready"}`, all, "", ""},
		{"not subscribed", "turn.completed", `{}`, []string{"permission.requested"}, "", ""},
		{"never sent", "session.created", `{}`, all, "", ""},
		{"turn started", "turn.started", `{}`, all, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := store.Event{ID: 42, SessionID: "0123456789abcdef", Type: tc.typ, PromptID: "p1", Payload: json.RawMessage(tc.payload), Time: time.Unix(1700000000, 0)}
			m, ok := webhooks.MessageOf("ep", e, tc.events)
			if ok != (tc.want != "") {
				t.Fatalf("sent: got %v, want %v", ok, tc.want != "")
			}
			if !ok {
				return
			}
			var body struct {
				Type, Text string
				Data       map[string]any
			}
			if err := json.Unmarshal(m.Body, &body); err != nil {
				t.Fatal(err)
			}
			if m.ID != "ep_42" || m.Type != tc.want || body.Type != tc.want || body.Data["eventId"] != "ep:42" || body.Data["sessionId"] != e.SessionID || body.Text == "" {
				t.Errorf("message: got id %q type %q body %s", m.ID, m.Type, m.Body)
			}
			if got, _ := body.Data["outcome"].(string); got != tc.outcome {
				t.Errorf("outcome: got %q, want %q", got, tc.outcome)
			}
		})
	}
}
