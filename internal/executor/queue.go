package executor

// The Agent's delivery queue (Agent.queue, from Agent.qhead on), under
// Agent.mu.

// queuedLocked is how many items wait.
func (a *Agent) queuedLocked() int { return len(a.queue) - a.qhead }

// pushLocked appends it; a full array first drops the popped head, so
// the array is reused rather than grown.
func (a *Agent) pushLocked(it item) {
	if a.qhead > 0 && len(a.queue) == cap(a.queue) {
		n := copy(a.queue, a.queue[a.qhead:])
		clear(a.queue[n:])
		a.queue, a.qhead = a.queue[:n], 0
	}
	a.queue = append(a.queue, it)
}

// pushFrontLocked puts it before every waiting item.
func (a *Agent) pushFrontLocked(it item) {
	if a.qhead > 0 {
		a.qhead--
		a.queue[a.qhead] = it
		return
	}
	a.queue = append(a.queue, item{})
	copy(a.queue[1:], a.queue)
	a.queue[0] = it
}

// popLocked takes the first waiting item; there must be one.
func (a *Agent) popLocked() item {
	it := a.queue[a.qhead]
	a.queue[a.qhead] = item{} // drop its references
	a.qhead++
	if a.qhead == len(a.queue) {
		a.queue, a.qhead = a.queue[:0], 0
	}
	return it
}
