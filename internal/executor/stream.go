package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/hostproto"
)

// item is one entry of an Agent's delivery queue: a record, or something
// that must happen in order with the records (a call's completion, the
// requests an attach reported pending, a link change).
type item struct {
	off uint64
	// upd is the record's update, decoded as it arrived (isUpd).
	upd   acp.Update
	isUpd bool
	// skip: an update record that does not decode, committed unseen in
	// its turn.
	skip bool
	// rec is any other record, the Agent's own copy.
	rec *hostproto.Record
	fn  func()
}

// enqueue appends it to the delivery queue; false if the dispatcher has
// quit (the caller then runs a completion itself).
func (a *Agent) enqueue(it item) bool {
	a.mu.Lock()
	if a.quitting {
		a.mu.Unlock()
		return false
	}
	a.pushLocked(it)
	a.mu.Unlock()
	a.wakeDispatcher()
	return true
}

func (a *Agent) wakeDispatcher() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// accept takes a record from the connection, on the connection's reader.
// A record at or below the last one taken is a replay of what the handler
// already has (the host resends everything after the attach's From, the
// last commit) and is dropped. r is the connection's and valid only
// during the call (hostproto.Options.ReuseRecords): an update is decoded
// here, anything else copied.
func (a *Agent) accept(r *hostproto.Record) {
	a.mu.Lock()
	if r.Offset <= a.lastSeen {
		a.mu.Unlock()
		return
	}
	if r.Offset != a.lastSeen+1 {
		a.h.log.Error("executor host skipped records", "session", a.sessionID, "after", a.lastSeen, "got", r.Offset)
	}
	a.lastSeen = r.Offset
	a.mu.Unlock()
	it := item{off: r.Offset}
	switch {
	case r.Kind != hostproto.RecordUpdate && r.Kind != hostproto.RecordACPUpdate:
		c := *r
		c.Payload = bytes.Clone(r.Payload)
		it.rec = &c
	case !a.delivers():
		it.skip = true
	default:
		it.upd, it.isUpd = a.decodeUpdate(*r)
		it.skip = !it.isUpd
	}
	// An update that finds nothing queued or being delivered, and a free
	// credit, is delivered on the connection's reader goroutine itself:
	// the hand-off to the dispatcher and back cost more CPU than the rest
	// of a record's way. Anything else (a full window, which would block
	// the reader of every session on the host) goes to the dispatcher.
	a.mu.Lock()
	inline := it.rec == nil && a.queuedLocked() == 0 && !a.delivering && !a.quitting
	if !inline {
		a.mu.Unlock()
		a.enqueue(it)
		return
	}
	a.delivering = true
	a.mu.Unlock()
	done := a.deliverInline(&it)
	a.mu.Lock()
	a.delivering = false
	if !done {
		a.pushFrontLocked(it) // first: it came before what was queued meanwhile
	}
	more := a.queuedLocked() > 0 || a.quitting
	a.mu.Unlock()
	if more {
		a.wakeDispatcher()
	}
}

// deliverInline delivers an update, or commits one to skip, if that needs
// no wait for a window credit; false leaves it for the dispatcher.
func (a *Agent) deliverInline(it *item) bool {
	if !a.delivers() || (it.skip && a.records == nil) {
		a.add(it.off)
		return true
	}
	select {
	case a.credits <- struct{}{}:
	default:
		return false
	}
	if it.skip {
		a.deliverOffset(it.off)
	} else {
		a.deliver(it.off, it.upd)
	}
	return true
}

// dispatch delivers the queue in order until the agent is forgotten; after
// that it drops records and runs what else is left.
func (a *Agent) dispatch() {
	defer a.h.wg.Done()
	for {
		a.mu.Lock()
		if a.delivering {
			// The reader is delivering inline; it wakes us when it is
			// done and something is queued or the agent is quitting.
			a.mu.Unlock()
			<-a.wake
			continue
		}
		if a.queuedLocked() == 0 {
			quitting := a.quitting
			a.mu.Unlock()
			if quitting {
				return
			}
			select {
			case <-a.wake:
			case <-a.quitCh:
			}
			continue
		}
		it := a.popLocked()
		quitting := a.quitting
		a.delivering = true // no inline delivery overtakes this item
		a.mu.Unlock()
		switch {
		case it.fn != nil:
			it.fn()
		case quitting:
		case it.skip:
			a.onOffset(it.off)
		case it.isUpd:
			a.onUpdate(it.off, it.upd)
		default:
			a.onRecord(*it.rec)
		}
		a.mu.Lock()
		a.delivering = false
		a.mu.Unlock()
	}
}

// onRecord delivers a record other than an update.
func (a *Agent) onRecord(r hostproto.Record) {
	switch r.Kind {
	case hostproto.RecordRequest:
		// Committed apart from its answer: a request still pending is
		// reported again by every attach (AttachResult.Pending).
		a.onOffset(r.Offset)
		var p hostproto.PermissionRequest
		if a.decode(r, &p) {
			a.deliverRequest(p, r.Offset)
		}
	case hostproto.RecordRequestClosed:
		a.onOffset(r.Offset)
		var p hostproto.RequestClosed
		if a.decode(r, &p) {
			a.closeRequest(p.RequestID)
		}
	case hostproto.RecordExit:
		e := hostproto.Exit{Code: -1}
		a.decode(r, &e)
		// The agent ends before its exit record is committed: once it is,
		// an attach's result or an acknowledgement may find the agent
		// finished and forget it, and calls still pending then would fail
		// as detached instead of with the exit (a turn failed rather than
		// interrupted).
		a.h.mu.Lock()
		a.mu.Lock()
		a.exitOffset = r.Offset
		a.cause = e.Cause()
		a.mu.Unlock()
		a.endLocked(a.h.exitOf(e), e.Lost, errAgentExited)
		a.h.mu.Unlock()
		if a.late.Load() {
			// A lost agent's late output ends with its exit: the handler
			// hears so after the last of it, and the exit record is
			// committed with that.
			a.onUpdate(r.Offset, acp.Update{Kind: acp.UpdateLateEnd})
			a.late.Store(false)
			return
		}
		a.add(r.Offset)
	default:
		a.h.log.Error("record of an unknown kind", "session", a.sessionID, "offset", r.Offset, "kind", r.Kind)
		a.onOffset(r.Offset)
	}
}

// decode reads a record's payload; a malformed one is logged, and the
// record is committed without effect.
func (a *Agent) decode(r hostproto.Record, v any) bool {
	if err := json.Unmarshal(r.Payload, v); err != nil {
		a.h.log.Error("malformed record", "session", a.sessionID, "offset", r.Offset, "kind", r.Kind, "err", err)
		return false
	}
	return true
}

// decodeUpdate reads an update record of either form: the host's decoded
// update (version 1) or the agent's own line (version 2), which is
// decoded as a local agent's would be; false for one to commit unseen.
func (a *Agent) decodeUpdate(r hostproto.Record) (acp.Update, bool) {
	if r.Kind == hostproto.RecordACPUpdate {
		return a.lines.Decode(r.Payload)
	}
	var u hostproto.Update
	if !a.decode(r, &u) {
		return acp.Update{}, false
	}
	return u.ACP(), true
}

// delivers reports whether the agent's updates go to the handler: until it
// ended, and for a lost agent, until its exit (late).
func (a *Agent) delivers() bool { return !a.retired.Load() || a.late.Load() }

// onUpdate hands the update of the record at off to the handler once the
// window has room; its done commits the record. An agent that ended
// commits it unseen, unless it is a lost agent's late output.
func (a *Agent) onUpdate(off uint64, au acp.Update) {
	if !a.delivers() {
		a.add(off)
		return
	}
	if a.credit(off) {
		a.deliver(off, au)
	}
}

// credit takes a credit of the window for the record at off, waiting for
// room; false if the agent ended meanwhile (the record is then committed
// unseen) or was forgotten.
func (a *Agent) credit(off uint64) bool {
	done := a.done
	if a.late.Load() {
		done = nil // ended already: wait for the window like a live agent
	}
	select {
	case a.credits <- struct{}{}:
		return true
	case <-done:
		a.add(off)
	case <-a.quitCh:
	}
	return false
}

// deliver hands the update to the handler; the caller holds its credit.
func (a *Agent) deliver(off uint64, au acp.Update) {
	a.mu.Lock()
	a.commits.open = append(a.commits.open, openRecord{off: off})
	a.mu.Unlock()
	au.Offset = off
	var once atomic.Bool
	a.handler.Update(au, func() {
		if once.CompareAndSwap(false, true) {
			<-a.credits
			a.settleDurable(off)
		}
	})
}

// add records a record that is committed as soon as it is handed over:
// the exit, records nobody reads (the agent ended), and, for a handler
// that commits no offsets itself (no RecordHandler), requests and their
// closing (the host re-reports what is still pending on the next attach)
// and updates that do not decode.
func (a *Agent) add(off uint64) {
	a.mu.Lock()
	a.commits.open = append(a.commits.open, openRecord{off: off})
	a.mu.Unlock()
	a.settleDurable(off)
}

// settleDurable settles off once its commit is on disk (HostConfig.Durable)
// or at once. The credit window above is freed at the commit: the agent's
// pace does not wait for the disk, only what the host may drop does.
func (a *Agent) settleDurable(off uint64) {
	if d := a.h.cfg.Durable; d != nil {
		d(func() { a.settle(off) })
		return
	}
	a.settle(off)
}

// settle marks off committed and schedules the acknowledgement.
func (a *Agent) settle(off uint64) {
	a.mu.Lock()
	mark := ackNone
	if a.commits.settle(off) {
		mark = a.ackMarkLocked()
	}
	tell := mark > a.ackMark // the Host knows already otherwise
	if tell {
		a.ackMark = mark
	}
	a.mu.Unlock()
	if tell {
		a.h.markAck(a, mark == ackUrgent)
	}
}

// ackMarkLocked is what the commits owe the host: nothing, an
// acknowledgement within AckDelay, or one now (AckEvery records, or the
// exit).
func (a *Agent) ackMarkLocked() int {
	f := a.commits.frontier
	switch {
	case f <= a.acked:
		return ackNone
	case f-a.acked >= uint64(a.h.cfg.AckEvery) || (a.exitOffset != 0 && f >= a.exitOffset):
		return ackUrgent
	}
	return ackOwed
}

// What the Host was told about an Agent's acknowledgement since it last
// took one (Agent.ackMark).
const (
	ackNone = iota
	ackOwed
	ackUrgent
)

// takeAck returns the offset to acknowledge now, if the commits went past
// the last acknowledgement.
func (a *Agent) takeAck() (uint64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ackMark = ackNone
	if a.commits.frontier <= a.acked {
		return 0, false
	}
	a.acked = a.commits.frontier
	return a.acked, true
}

// remarkAck tells the Host again what the commits owe, whatever it was
// told before: after an attach, whose answer the acknowledgements of the
// commits made meanwhile waited for.
func (a *Agent) remarkAck() {
	a.mu.Lock()
	a.ackMark = a.ackMarkLocked()
	mark := a.ackMark
	a.mu.Unlock()
	if mark != ackNone {
		a.h.markAck(a, mark == ackUrgent)
	}
}

// attachFrom is an attach's From: the last commit, which the attach also
// acknowledges.
func (a *Agent) attachFrom() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acked = max(a.acked, a.commits.frontier)
	a.ackMark = ackNone
	return a.commits.frontier
}

// finished reports whether the exit record is committed: the agent is
// done with the host once that is acknowledged.
func (a *Agent) finished() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.exitOffset != 0 && a.commits.frontier >= a.exitOffset
}

func (a *Agent) exitSeen() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.exitOffset != 0
}

// linkDown and linkUp tell a LinkHandler, in order with the records, once
// per change.
func (a *Agent) linkDown() { a.linkChanged(false) }
func (a *Agent) linkUp()   { a.linkChanged(true) }

func (a *Agent) linkChanged(up bool) {
	a.mu.Lock()
	if a.down == !up {
		a.mu.Unlock()
		return
	}
	a.down = !up
	if up {
		a.toldWhy = ""
	}
	a.mu.Unlock()
	if a.link == nil {
		return
	}
	a.enqueue(item{fn: func() {
		if !a.retired.Load() {
			a.link.LinkChanged(up)
		}
	}})
}

// unreachable tells a WaitHandler, in order with the records, why the
// host cannot be reached, unless that is what it was told last.
func (a *Agent) unreachable(why error) {
	if a.wait == nil || why == nil {
		return
	}
	a.mu.Lock()
	if a.toldWhy == why.Error() {
		a.mu.Unlock()
		return
	}
	a.toldWhy = why.Error()
	a.mu.Unlock()
	a.enqueue(item{fn: func() {
		if !a.retired.Load() {
			a.wait.HostUnreachable(why)
		}
	}})
}

// openRequest is a permission request the handler is answering.
type openRequest struct {
	cancel context.CancelCauseFunc
	// closed: the host withdrew it (request_closed); no answer is sent.
	closed bool
}

// deliverRequest hands a permission request to the handler, once per
// request id (it may come both as a record and in an attach's Pending),
// in a goroutine of its own; the outcome goes to the host as a
// permission_answer whose id is derived from the request's.
func (a *Agent) deliverRequest(p hostproto.PermissionRequest, off uint64) {
	a.mu.Lock()
	if a.reqsClosed || a.quitting || a.seen[p.RequestID] {
		a.mu.Unlock()
		return
	}
	a.seen[p.RequestID] = true
	ctx, cancel := context.WithCancelCause(context.Background())
	open := &openRequest{cancel: cancel}
	a.reqs[p.RequestID] = open
	a.mu.Unlock()
	req := p.ACP()
	req.ID, req.Offset = p.RequestID, off
	a.h.wg.Add(1) // the dispatcher, itself counted, is running: Close has not begun waiting
	a.reqWG.Add(1)
	go func() {
		defer a.h.wg.Done()
		defer a.reqWG.Done()
		defer cancel(nil)
		out, err := a.handler.RequestPermission(ctx, req)
		a.mu.Lock()
		if a.reqs != nil {
			delete(a.reqs, p.RequestID)
		}
		skip := open.closed || a.reqsClosed
		a.mu.Unlock()
		if skip || errors.Is(err, acp.ErrNoAnswer) {
			// No answer to send: the host withdrew the request, the agent
			// ended here, or the handler took nothing (its session stops
			// taking records, as the daemon stops): the request stays
			// pending on the host for the next attach (AttachResult.Pending).
			return
		}
		if err != nil {
			out = acp.PermissionOutcome{Cancelled: true}
		}
		a.answer(p.RequestID, out)
	}()
}

// closeRequest ends the handler's call for a request the agent withdrew:
// a plain cancel (context.Canceled), not acp.ErrAgentGone.
func (a *Agent) closeRequest(id string) {
	a.mu.Lock()
	a.seen[id] = true
	open := a.reqs[id]
	if open != nil {
		open.closed = true
	}
	a.mu.Unlock()
	if open != nil {
		open.cancel(nil)
	}
}

// answer queues the outcome for the host; it is resent until answered.
func (a *Agent) answer(requestID string, out acp.PermissionOutcome) {
	h := a.h
	h.mu.Lock()
	if h.closed || a.ended {
		h.mu.Unlock()
		return
	}
	h.newCallLocked(hostproto.CommandPermissionAnswer, answerID(a.sessionID, requestID), a,
		hostproto.PermissionAnswerPayload{RequestID: requestID, Cancelled: out.Cancelled, OptionID: out.OptionID}, nil)
	h.mu.Unlock()
	h.kick(h.sendKick)
}
