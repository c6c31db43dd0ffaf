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
	interrupted := v.QueueHeld || slices.ContainsFunc(in.Turns, func(t storedTurn) bool { return t.State == store.TurnRunning })
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

// decideWriteFailed: a failed write is never silent, and the actor then
// believes the store again, once its writes in flight have reported (a
// reload must not read the store while its own changes are still on their
// way to it). One reload serves every failure before it.
func decideWriteFailed(v view, in writeFailedInput) decision {
	if in.ShuttingDown {
		return accept() // the writer closed: the next start reconciles from the store
	}
	if v.Reloading {
		return accept(effReportWriteFailed{})
	}
	return accept(effReportWriteFailed{}, effReloadWhenQuiet{})
}

// repairState is the Repairs key of a session state the store still shows
// RUNNING although no turn runs; lostRepair that of a turn whose outcome
// was lost.
const repairState = "state"

func lostRepair(promptID string) string { return "turn:" + promptID }

// decideReloaded decides what the actor believes after a reload, and what
// it records to make the store agree with what is live. The queue is the
// turns the store holds queued, then those still being admitted (not
// stored yet), in the order they were admitted; the running turn is the
// live run's. A turn the store shows running without a live run lost its
// outcome: it fails with store_write_failed, so clients see it end. A
// session the store shows RUNNING with no turn running waits for input
// again. Each repair is tried once: should the store still refuse it (a
// full disk), reloading again must not loop on the same writes; the turn
// then stays for start-up reconciliation.
func decideReloaded(v view, in reloadedInput) decision {
	running := ""
	if v.Running != nil {
		running = v.Running.PromptID
	}
	var queue []string
	var repairs []effect
	for _, t := range in.Turns {
		switch {
		case t.PromptID == running:
		case t.State == store.TurnQueued:
			queue = append(queue, t.PromptID)
		case t.State == store.TurnRunning && !v.Repairs[lostRepair(t.PromptID)]:
			repairs = append(repairs, effRecordLost{PromptID: t.PromptID})
		}
	}
	for _, q := range v.Queue {
		if q.Admitting && !slices.Contains(queue, q.PromptID) {
			queue = append(queue, q.PromptID)
		}
	}
	d := accept(effReload{Queue: queue})
	d.Effects = append(d.Effects, repairs...)
	switch {
	case v.Running != nil || in.State != store.SessionRunning:
		d.Effects = append(d.Effects, effForgetStateRepair{})
	case !v.Repairs[repairState]:
		repairs = append(repairs, effRepairState{})
		d.Effects = append(d.Effects, effRepairState{})
	}
	if len(repairs) > 0 {
		d.Effects = append(d.Effects, effPushRecovery{})
	}
	return accept(append(d.Effects, effStartNext{})...)
}
