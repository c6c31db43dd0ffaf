package host

import (
	"errors"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/outbox"
)

// A damaged outbox (issue 28; docs/executors.md, "A damaged outbox").
// Damage found when a session is taken up again after a restart is set
// aside by outbox.Open (recoverSession). Damage a read finds while the
// host runs — a segment changed or cut short under it — is handled here,
// the same way: every intact record before it is delivered, the agent is
// stopped, and its exit record, which the daemon gets right after those,
// carries errcode.HostOutboxDamaged and what was lost.

// damageCause is the error a session's exit record carries for d.
func damageCause(d *outbox.Damage) error {
	return errcode.New(errcode.HostOutboxDamaged, "the executor host found the session's outbox damaged: %s", d)
}

// withDamage adds the session's damage, if any, to its exit record: the
// agent was stopped because its records could not be delivered, which
// the daemon takes as an agent lost with its executor.
func (s *session) withDamage(e hostproto.Exit) hostproto.Exit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.withDamageLocked(e)
}

// readFailed handles a read of the session's outbox that found damage
// (link.appendRecords): the first time, it sets the damage aside on a
// goroutine of its own; the link sends nothing more of the session until
// then.
func (s *session) readFailed(ce *outbox.CorruptError) {
	s.mu.Lock()
	started := s.settingAside
	s.settingAside = true
	s.mu.Unlock()
	if !started && !s.h.spawn(func() { s.setAside(ce) }) {
		s.log.Error("host: outbox damaged as the host stops; the next start sets it aside", "err", ce)
	}
}

// setAside copies the damaged segments aside, stops the agent (its exit
// record says why; an agent that had ended gets a second exit record,
// since its first is among the damaged ones), and makes the outbox pass
// over the records from the damage up to that exit, which the daemon
// gets next.
func (s *session) setAside(ce *outbox.CorruptError) {
	d, err := s.ob.SetAside(ce.Offset, ce.Error())
	if err != nil {
		s.log.Error("host: the damaged outbox could not be copied aside", "err", err)
		d = &outbox.Damage{Reasons: []string{ce.Error()}, FirstLost: ce.Offset}
	}
	cause := damageCause(d)
	s.mu.Lock()
	s.damaged, s.lostFrom = cause, ce.Offset
	a, exited := s.agent, s.exited
	s.mu.Unlock()
	s.log.Error("host: the session's outbox is damaged; its intact records are delivered, its agent is stopped", "damage", d.String())
	if a != nil && !exited {
		a.Stop()
		<-s.exitQueued
	} else {
		s.mu.Lock()
		s.exited = true
		s.exit = s.withDamageLocked(hostproto.Exit{Code: -1})
		e := s.exit
		s.mu.Unlock()
		s.q.pushExit(item{kind: hostproto.RecordExit, payload: e, appended: s.setExitOffset})
	}
	exitOff := s.mark()
	if exitOff > ce.Offset {
		s.ob.Skip(ce.Offset, exitOff-1)
	}
	s.wakeLink()
}

// lostBefore is the damage, if it took any of the session's records up
// to need: a command's result held until then (a prompt's stop reason)
// must not tell the daemon that it has them all. The daemon takes the
// error as the agent gone, and the exit record, which it got first,
// decides the turn.
func (s *session) lostBefore(need uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lostFrom == 0 || need < s.lostFrom {
		return nil
	}
	return s.damaged
}

// withDamageLocked is withDamage for a caller holding s.mu.
func (s *session) withDamageLocked(e hostproto.Exit) hostproto.Exit {
	var ce *errcode.Error
	if errors.As(s.damaged, &ce) {
		e.Lost, e.ErrorCode, e.Error = true, ce.Code, ce.Message
	}
	return e
}
