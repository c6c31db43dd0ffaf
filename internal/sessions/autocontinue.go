package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/tether/tether/internal/session"
)

// Safe automatic continuation, opt-in (store.Session.AutoContinue, from
// POST /session {autoContinue} or the profile's autoContinue): after an
// interruption that was not the user's doing, tetherd continues the turn
// once by itself. Never after a cancel or a failed turn (those are not
// interruptions), never after a daemon restart (the user may have stopped
// it on purpose; detached sessions are not interrupted by one anyway),
// never twice for one interruption (the continuation's promptId is derived
// from the interrupted turn's, so a repeat is the same turn), never in a
// crash loop (an interrupted automatic continuation waits for the user),
// never after the user acted since (the continue is admitted only on a
// plan that still says so), and only within AutoContinueWindow of the
// interruption. Each one is audited by a session.auto_continued event.

// autoPromptPrefix begins the promptId of an automatic continuation.
const autoPromptPrefix = "auto-continue:"

// AutoContinueWindow is how long after an interruption an automatic
// continuation may start; later (the agent would not start, the executor
// stayed away) it is the user's to decide.
const AutoContinueWindow = 5 * time.Minute

// autoContinueInput is what decideAutoContinue looks at.
type autoContinueInput struct {
	OptedIn bool
	// Turn is the interrupted turn, as recorded.
	Turn session.Turn
	Now  time.Time
}

// Why an interrupted turn is not continued by itself ("" when it is).
const (
	autoNotOptedIn       = "not_opted_in"
	autoNotInterrupted   = "not_interrupted"
	autoNotACrash        = "not_a_crash"
	autoCrashLoop        = "auto_continuation_interrupted"
	autoWindowPassed     = "window_passed"
	autoContinuePossible = ""
)

// decideAutoContinue says whether the interrupted turn in.Turn is
// continued by itself, and if not why.
func decideAutoContinue(in autoContinueInput) string {
	t := in.Turn
	switch {
	case !in.OptedIn:
		return autoNotOptedIn
	case t.State != session.TurnInterrupted || t.CancelRequested:
		return autoNotInterrupted
	case t.InterruptReason != "agent_exited" && t.InterruptReason != reasonExecutorLost && t.InterruptReason != reasonSessionLost:
		return autoNotACrash
	case strings.HasPrefix(t.PromptID, autoPromptPrefix):
		return autoCrashLoop
	case t.EndedAt == nil || in.Now.Sub(*t.EndedAt) > AutoContinueWindow:
		return autoWindowPassed
	}
	return autoContinuePossible
}

// autoPromptID is the promptId of the automatic continuation of turn
// promptID: one per interruption, whoever asks how often. It stays within
// the API's 64 characters: a long promptId is named by its hash.
func autoPromptID(promptID string) string {
	if id := autoPromptPrefix + promptID; len(id) <= 64 {
		return id
	}
	sum := sha256.Sum256([]byte(promptID))
	return autoPromptPrefix + hex.EncodeToString(sum[:16])
}

// maybeAutoContinue continues the interrupted turn promptID by itself when
// decideAutoContinue allows it; it runs on the actor, once the
// interruption's recovery report is recorded, so the continuation prompt
// carries it.
func (a *actor) maybeAutoContinue(promptID string) {
	t, ok := a.turns[promptID]
	if !ok || a.autoContinued[promptID] {
		return
	}
	why := decideAutoContinue(autoContinueInput{OptedIn: a.sess.AutoContinue, Turn: t, Now: time.Now()})
	if why != autoContinuePossible {
		if why != autoNotOptedIn {
			a.log.Info("interrupted turn not continued automatically", "promptId", promptID, "why", why)
		}
		return
	}
	if a.autoContinued == nil {
		a.autoContinued = map[string]bool{}
	}
	a.autoContinued[promptID] = true
	m, id, reason := a.m, a.id, t.InterruptReason
	m.reporting.Add(1)
	m.spawn(func() {
		posted := false
		defer func() {
			if !posted {
				m.reporting.Add(-1)
			}
		}()
		ctx, cancel := context.WithTimeout(m.life, m.cfg.StartTimeout)
		defer cancel()
		res, err := m.Continue(ctx, id, autoPromptID(promptID))
		if err != nil {
			a.log.Info("automatic continuation declined", "promptId", promptID, "err", err)
			return
		}
		posted = a.mb.Post(func() {
			defer m.reporting.Add(-1)
			a.emit(a.draft(res.Turn.PromptID,
				&session.AutoContinuedData{ContinuesPromptID: promptID, Reason: reason}))
		})
	})
}
