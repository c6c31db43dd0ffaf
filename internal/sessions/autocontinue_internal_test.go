package sessions

import (
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/session"
)

func TestDecideAutoContinue(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	ended := func(ago time.Duration) *time.Time { at := now.Add(-ago); return &at }
	crashed := session.Turn{PromptID: "p1", State: session.TurnInterrupted, InterruptReason: "agent_exited", EndedAt: ended(time.Second)}
	with := func(f func(*session.Turn)) session.Turn { t := crashed; f(&t); return t }
	cases := []struct {
		name    string
		optedIn bool
		turn    session.Turn
		want    string
	}{
		{"agent crashed", true, crashed, autoContinuePossible},
		{"executor lost", true, with(func(t *session.Turn) { t.InterruptReason = "executor_lost" }), autoContinuePossible},
		{"not opted in", false, crashed, autoNotOptedIn},
		{"daemon restart", true, with(func(t *session.Turn) { t.InterruptReason = "daemon_restart" }), autoNotACrash},
		{"cancelled by the user", true, with(func(t *session.Turn) { t.State = session.TurnCancelled }), autoNotInterrupted},
		{"cancel requested before the crash", true, with(func(t *session.Turn) { t.CancelRequested = true }), autoNotInterrupted},
		{"failed turn", true, with(func(t *session.Turn) { t.State = session.TurnFailed }), autoNotInterrupted},
		{"an automatic continuation crashed (loop)", true, with(func(t *session.Turn) { t.PromptID = autoPromptID("p1") }), autoCrashLoop},
		{"window passed", true, with(func(t *session.Turn) { t.EndedAt = ended(AutoContinueWindow + time.Second) }), autoWindowPassed},
		{"no end time", true, with(func(t *session.Turn) { t.EndedAt = nil }), autoWindowPassed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := decideAutoContinue(autoContinueInput{OptedIn: c.optedIn, Turn: c.turn, Now: now}); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestAutoPromptID(t *testing.T) {
	if got := autoPromptID("p1"); got != "auto-continue:p1" {
		t.Errorf("got %q", got)
	}
	a, b := autoPromptID(strings.Repeat("x", 64)), autoPromptID(strings.Repeat("x", 63)+"y")
	if len(a) > 64 || !strings.HasPrefix(a, autoPromptPrefix) || a == b {
		t.Errorf("got %q and %q, want at most 64 characters with the prefix, distinct", a, b)
	}
}
