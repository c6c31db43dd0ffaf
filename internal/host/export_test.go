package host

// Blocked counts the appends session id's outbox refused as full.
func Blocked(h *Host, id string) uint64 {
	if s := h.lookup(id); s != nil {
		return s.blocked.Load()
	}
	return 0
}

// AckWanted is the offset the daemons acknowledged for session id so far
// (what the acker makes durable next), 0 if the host holds no such
// session.
func AckWanted(h *Host, id string) uint64 {
	s := h.lookup(id)
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ackWant
}
