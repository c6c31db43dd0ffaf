package sessions

import (
	"slices"

	"github.com/tether/tether/internal/store"
)

// decideRestarted repairs what the previous daemon left: the turn that was
// running is interrupted (daemon_restart); with none running, the first
// queued turn was about to start (its agent never got it), so it is. The
// turns queued behind stay queued, in order, held until the user continues
// or prompts; a queue held since an earlier restart stays whole. Pending
// permissions expire, a live executor is stopped (its orphaned process
// too), the session waits for input, and every client is told where it now
// stands. A session at rest is only announced when its agent went away
// with the old config (clients must learn it cannot be continued here).
func decideRestarted(v view, in restartedInput) decision {
	if !in.Repair {
		if in.AgentAvailable {
			return accept()
		}
		return accept(effPushRecovery{})
	}
	var effs []effect
	live := in.Executor == store.ExecutorReady || in.Executor == store.ExecutorStarting
	if live && in.Orphan {
		effs = append(effs, effStopOrphan{})
	}
	interrupted := v.QueueHeld || slices.ContainsFunc(in.Turns, func(t restartTurn) bool { return t.State == store.TurnRunning })
	held := v.QueueHeld
	for _, t := range in.Turns {
		switch {
		case t.State != store.TurnQueued:
		case !interrupted:
			interrupted = true
		default:
			if !held {
				held = true
				effs = append(effs, effHoldQueue{})
			}
			continue
		}
		effs = append(effs, effRestartInterrupt{PromptID: t.PromptID, Running: t.State == store.TurnRunning})
	}
	if in.Permissions > 0 {
		effs = append(effs, effClosePermissions{State: store.PermissionExpired})
	}
	if live {
		effs = append(effs, effStopExecutor{})
	}
	if v.State != store.SessionWaitingForInput {
		effs = append(effs, effSetState{State: store.SessionWaitingForInput})
	} else {
		effs = append(effs, effTaskFollow{})
	}
	return accept(append(effs, effPushRecovery{})...)
}
