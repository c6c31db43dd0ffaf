package sessions

import (
	"context"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// A fork's agent gets its context natively where it can (docs/rewind.md):
// at the fork's first start, when its origin's ACP session holds exactly
// the fork's transcript (the fork was made at the origin's latest turn,
// with the same agent, and the origin has gone no further), the agent
// copies that session with the unstable session/fork instead of being
// briefed by history injection. The origin is read at the start, not at
// the fork: a fork prompted long after it was made finds out then whether
// the origin went on meanwhile (its conversation would then hold turns
// the fork's transcript does not), and is checked again once the copy is
// made, since the origin may go on while it is being made.

// forkStart is what a fork's first start knows of where it came from.
type forkStart struct {
	origin  session.ForkOrigin
	profile string
	runtime session.Runtime
	host    string
}

// forkStartOf is the fork start of a session whose agent is about to
// start, or nil when the session is no fork or its agent has had an ACP
// session of its own (its resume token; a rewind clears that too, and
// then the fork's transcript is no longer its origin's).
func forkStartOf(sess session.Session, ex session.Executor) *forkStart {
	if sess.ForkedFrom == nil || ex.ResumeToken != "" || sess.LastRewind != nil {
		return nil
	}
	return &forkStart{origin: *sess.ForkedFrom, profile: sess.AgentProfileID, runtime: ex.Runtime, host: ex.Host}
}

// nativeForkSource is the origin's ACP session the fork's agent may copy,
// or "" when that session does not hold exactly the fork's transcript:
// another agent or executor, no ACP session, a conversation still owed
// its history or lost, a fork turn that did not complete, or a later turn
// (other than one a rewind took back).
func nativeForkSource(f forkStart, origin session.Session, ex session.Executor, turns []session.Turn) string {
	switch {
	case origin.AgentProfileID != f.profile, ex.Runtime != f.runtime, ex.Host != f.host:
		return ""
	case ex.ResumeToken == "", origin.InjectContext, origin.ContextLost:
		return ""
	}
	var at *session.Turn
	for i := range turns {
		if turns[i].PromptID == f.origin.PromptID {
			at = &turns[i]
		}
	}
	if at == nil || at.Rewound || at.State != session.TurnCompleted {
		return ""
	}
	for _, t := range turns {
		if t.Seq > at.Seq && !t.Rewound {
			return ""
		}
	}
	return ex.ResumeToken
}

// forkSource reads the fork's origin and says which of its ACP sessions
// the fork's agent may copy ("" for none, or when it cannot be read).
func (m *Manager) forkSource(ctx context.Context, f forkStart) string {
	var origin session.Session
	var ex session.Executor
	var turns []session.Turn
	err := m.store.Snapshot(ctx, func(r *store.Store) error {
		var err error
		if origin, err = r.GetSession(ctx, f.origin.SessionID); err != nil {
			return err
		}
		if ex, err = r.GetExecutor(ctx, f.origin.SessionID); err != nil {
			return err
		}
		turns, err = r.ListTurns(ctx, f.origin.SessionID)
		return err
	})
	if err != nil {
		m.cfg.Logger.Warn("read a fork's origin", "origin", f.origin.SessionID, "err", err)
		return ""
	}
	return nativeForkSource(f, origin, ex, turns)
}
