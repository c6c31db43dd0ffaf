package host

import (
	"errors"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// Several daemons (protocol version 4). Every authenticated connection is
// kept; a session's records flow on one of them, its route: the link that
// last attached or started it. A session also has a generation, the
// highest fencing token a command for it carried (meta.Generation, kept
// on disk). A command with an older one is refused and never reaches the
// agent: the node that sent it lost the session to another. Lock order:
// session.metaMu, then Host.mu or session.mu, then link.mu.

// fence checks a command that names a session the host holds against
// that session's generation (admit). A command for a session the host
// does not hold has nothing to be fenced by.
func (h *Host) fence(l *link, cmd *hostproto.Command) error {
	if cmd.SessionID == "" || !cmd.Kind.Fenced() {
		return nil
	}
	for {
		s := h.lookup(cmd.SessionID)
		if s == nil {
			return nil
		}
		if err := s.admit(l, cmd.Generation); err != errReplaced {
			return err
		}
	}
}

// errReplaced: a start replaced the session while admit waited to raise
// its generation; the raise belongs to the new incarnation.
var errReplaced = errors.New("host: the session was replaced")

// handOver ends the session's hold on its generation for a start of
// generation gen that replaces it: it returns the generation the new
// incarnation keeps (the higher of the two), or refuses an older start
// (errcode.HostSessionFenced). Checked under the start lock and metaMu,
// with the session forgotten before metaMu is let go, so that no raise
// slips between the check and the replacement: one that waited for
// metaMu finds the session gone and raises the new incarnation (admit).
func (s *session) handOver(gen uint64) (uint64, error) {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	cur := s.generation()
	if gen < cur {
		return 0, s.fenced(gen, cur)
	}
	s.h.forget(s)
	return max(gen, cur), nil
}

// admit lets a command of generation gen from link l act on the session,
// or refuses it with errcode.HostSessionFenced when the session accepted
// a newer generation. A newer one becomes the session's, on disk before
// the command acts, so that a host restart keeps refusing the older; if
// it came on another link than the session's route, that link's node
// lost the session: the records stop flowing there (until the new owner
// attaches).
func (s *session) admit(l *link, gen uint64) error {
	s.mu.Lock()
	cur := s.meta.Generation
	s.mu.Unlock()
	switch {
	case gen < cur:
		return s.fenced(gen, cur)
	case gen == cur:
		return nil
	}
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	if s.h.lookup(s.id) != s {
		return errReplaced
	}
	s.mu.Lock()
	m := s.meta
	s.mu.Unlock()
	if gen < m.Generation { // another command raised it meanwhile
		return s.fenced(gen, m.Generation)
	}
	if gen == m.Generation {
		return nil
	}
	m.Generation = gen
	if err := s.saveMeta(m); err != nil {
		return errcode.Wrap(errcode.Internal, err, "the host cannot record session %s's generation %d", s.id, gen)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meta.Generation = gen // under metaMu: no other raise came between
	if old := s.route.Load(); old != nil && old != l {
		s.route.Store(nil)
		old.log.Info("host: a newer generation of the session came on another connection; its records stop here", "session", s.id, "generation", gen)
		old.detach(s)
	}
	return nil
}

func (s *session) fenced(gen, cur uint64) error {
	return errcode.New(errcode.HostSessionFenced,
		"session %s is at generation %d, the command carries %d: another daemon owns the session now", s.id, cur, gen)
}

// generation is the newest generation the session accepted.
func (s *session) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta.Generation
}

// routeTo makes the session's records after from flow on l, with res sent
// before any of them, and stop flowing on the link that had them: an
// attach or a start of generation gen, admitted before. It is refused
// (errcode.HostSessionFenced) if a newer generation came since; a link
// that has ended takes nothing (its daemon attaches again elsewhere).
func (s *session) routeTo(l *link, gen, from uint64, res hostproto.CommandResult) error {
	s.mu.Lock()
	if cur := s.meta.Generation; gen < cur {
		s.mu.Unlock()
		return s.fenced(gen, cur)
	}
	if !l.take(s, from, res) {
		s.mu.Unlock()
		return nil
	}
	if old := s.route.Swap(l); old != nil && old != l {
		old.detach(s) // under s.mu: no other move overtakes this one
	}
	s.mu.Unlock()
	return nil
}

// unroute forgets l as the session's route once l has ended.
func (s *session) unroute(l *link) {
	s.mu.Lock()
	s.route.CompareAndSwap(l, nil)
	s.mu.Unlock()
}

// wakeLink tells the writer of the link that carries the session's
// records that more may be ready. It takes no lock: it runs for every
// burst of records.
func (s *session) wakeLink() {
	if l := s.route.Load(); l != nil {
		l.wakeUp()
	}
}
