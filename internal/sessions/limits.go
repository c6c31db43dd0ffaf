package sessions

import (
	"fmt"
	"sync"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// agentLimitRetryAfter is the Retry-After of agent_limit_reached: slots come
// back when a session closes, an agent exits or an idle agent is stopped.
const agentLimitRetryAfter = 10

// agentSlots counts live agent processes against the daemon-wide cap and
// each profile's cap. A slot is taken, inside the session's actor, before a
// process is launched and given back only once that process is gone (or its
// start failed), so the count never misses a process that still exists.
type agentSlots struct {
	max int // 0: no daemon-wide cap

	mu        sync.Mutex
	used      int
	byProfile map[string]int
}

func newAgentSlots(max int) *agentSlots {
	return &agentSlots{max: max, byProfile: map[string]int{}}
}

// agentSlot is one reserved agent process. Releasing it twice is harmless,
// so every path that may end the process can release it.
type agentSlot struct {
	slots   *agentSlots
	profile string
	once    sync.Once
}

// acquire reserves a slot for one agent of profile, whose own cap is
// profileMax (0: none), or fails with agent_limit_reached.
func (s *agentSlots) acquire(profile string, profileMax int) (*agentSlot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max > 0 && s.used >= s.max {
		return nil, agentLimit("daemon", s.max, fmt.Sprintf("%d agents are already running, the daemon's limit (--max-agents)", s.used))
	}
	if n := s.byProfile[profile]; profileMax > 0 && n >= profileMax {
		return nil, agentLimit("profile", profileMax, fmt.Sprintf("%d %s agents are already running, the profile's limit (maxAgents)", n, profile))
	}
	s.used++
	s.byProfile[profile]++
	return &agentSlot{slots: s, profile: profile}, nil
}

// adopt reserves a slot for an agent that runs already (on its executor
// host, taken up after a restart or a takeover), past the limits if need
// be: refusing it would not stop it, only lose its turn, and while the
// count is over a limit no agent is started.
func (s *agentSlots) adopt(profile string) *agentSlot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used++
	s.byProfile[profile]++
	return &agentSlot{slots: s, profile: profile}
}

func agentLimit(scope string, limit int, msg string) error {
	return errcode.New(errcode.AgentLimitReached, "%s; close a session or retry later", msg).
		With("scope", scope).With("limit", limit).With("retryAfter", agentLimitRetryAfter)
}

// release gives the slot back. Safe on a nil slot and more than once.
func (sl *agentSlot) release() {
	if sl == nil {
		return
	}
	sl.once.Do(func() {
		s := sl.slots
		s.mu.Lock()
		defer s.mu.Unlock()
		s.used--
		if s.byProfile[sl.profile]--; s.byProfile[sl.profile] <= 0 {
			delete(s.byProfile, sl.profile)
		}
	})
}

// needAgent makes sure the session may have an agent: one is running or
// starting, or a slot is reserved for the one about to start. Admission
// calls it before it persists anything, so a refusal leaves nothing behind.
func (a *actor) needAgent() error {
	if a.conn != nil || a.starting || a.slot != nil || a.stopping || a.sess.State.Terminal() {
		return nil
	}
	_, profile, err := a.m.profiles.Spec(a.sess.AgentProfileID)
	if err != nil {
		return nil // the start fails with the profile's own error
	}
	sl, err := a.m.slots.acquire(a.sess.AgentProfileID, profile.MaxAgents)
	if err != nil {
		return err
	}
	a.slot = sl
	return nil
}

// dropSlot releases the session's slot once its agent is neither running
// nor starting.
func (a *actor) dropSlot() {
	if a.conn == nil && !a.starting {
		a.slot.release()
		a.slot = nil
	}
}

// checkIdle stops the agent once it has been idle for AgentIdleTimeout,
// else looks again when that time would be up (decideIdleCheck).
func (a *actor) checkIdle() {
	_ = a.perform(decide(a.view(), idleCheckInput{Elapsed: time.Since(a.activeAt), Timeout: a.m.cfg.AgentIdleTimeout}), nil)
}

// retireAgent stops the agent on purpose, to free its process and slot
// (idle) or because it will not serve the session again (it lost it); why
// is kept as the executor's message. The session stays as it is, with its
// ACP session id, so the next prompt, continue or resume restores it
// through the normal restore path.
func (a *actor) retireAgent(why string) {
	conn, sl := a.conn, a.slot
	a.conn, a.slot = nil, nil
	a.gen++ // the exit that follows is expected, not a crash
	gen := a.gen
	a.m.spawn(func() {
		conn.Stop()
		sl.release()
		a.mb.Post(func() {
			// Unless a new agent started meanwhile, or the session closed
			// (nothing may follow session.closed).
			if a.gen == gen && !a.stopping && !a.sess.State.Terminal() {
				a.recordStopped(conn, why)
			}
		})
	})
}
