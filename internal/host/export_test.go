package host

// Blocked counts the appends session id's outbox refused as full.
func Blocked(h *Host, id string) uint64 {
	if s := h.lookup(id); s != nil {
		return s.blocked.Load()
	}
	return 0
}
