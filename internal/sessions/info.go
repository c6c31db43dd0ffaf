package sessions

import (
	"context"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// UpdateInfo renames the session (title: the user's, which no agent or
// prompt title replaces) or archives it (archived), as decideInfo
// decides; nil leaves that as it is. It answers the session as it then
// is, once what changed is durable. A closed session can be renamed and
// archived too.
func (m *Manager) UpdateInfo(ctx context.Context, sessionID string, title *string, archived *bool) (session.Session, error) {
	if title != nil {
		t := session.CleanTitle(*title)
		if t == "" {
			return session.Session{}, errcode.New(errcode.ValidationFailed, "title must not be empty")
		}
		title = &t
	}
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return session.Session{}, err
	}
	return callWrites(ctx, a, func() (session.Session, error) {
		d := decide(a.view(), infoCmd{Title: title, Archived: archived})
		if d.Refusal != nil {
			return session.Session{}, d.Refusal
		}
		_ = a.perform(d, nil)
		return a.sess, nil
	})
}

// SetBudget sets the session's budget, whole (session.budget_changed;
// budget.go): one its usage has reached already stops the running turn.
// A closed session keeps the budget it had.
func (m *Manager) SetBudget(ctx context.Context, sessionID string, b session.Budget) error {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return err
	}
	_, err = callWrites(ctx, a, func() (struct{}, error) {
		v := a.view()
		if v.State.Terminal() {
			return struct{}{}, terminalErr(v)
		}
		d := decide(v, setBudgetCmd{Budget: b})
		if d.Refusal != nil {
			return struct{}{}, d.Refusal
		}
		return struct{}{}, a.perform(d, nil)
	})
	return err
}
