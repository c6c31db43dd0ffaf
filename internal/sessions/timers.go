package sessions

import "time"

// The actor's timers (effTimer): the idle clock, a load's settle, the
// reload after a failed write, and a running turn's budget clocks
// (budget.go). Each posts what it stands for to the
// actor's mailbox when it rings; all run on Manager.after, so tests drive
// them with a fake clock, and all stop with the actor (stopTimers).

// arm arms the timer e names, replacing the one of its kind that runs.
func (a *actor) arm(e effTimer) {
	after, fire := e.After, func() {}
	switch e.Timer {
	case timerIdle:
		fire = a.checkIdle
		if after == 0 {
			if after = a.m.cfg.AgentIdleTimeout; after <= 0 {
				return // no idle stop
			}
			e.Restart = true
		}
		if e.Restart {
			a.activeAt = time.Now()
		}
	case timerSettle:
		a.settling = true
		in := e.Settle
		after, fire = a.m.cfg.ReplayGrace, func() { a.settleLoad(in) }
	case timerTurnBudget:
		fire = a.checkTurnBudget
	case timerStall:
		fire = a.checkStall
	case timerReload:
		a.reloading, a.backoff = true, nextBackoff(after)
		if after <= 0 {
			a.reloadWhenQuiet()
			return
		}
		fire = a.reloadWhenQuiet
	}
	k := e.Timer
	if stop := a.timers[k]; stop != nil {
		stop()
	}
	a.armed[k]++
	n := a.armed[k]
	a.timers[k] = a.m.after(after, func() {
		a.mb.Post(func() {
			if a.armed[k] != n {
				return // armed again since: this one was replaced
			}
			a.timers[k] = nil
			fire()
		})
	})
}

// stopTimers stops every timer that runs: the actor's mailbox has closed,
// and nothing would take what they stand for.
func (a *actor) stopTimers() {
	for k, stop := range a.timers {
		if stop != nil {
			stop()
			a.timers[k] = nil
		}
	}
}
