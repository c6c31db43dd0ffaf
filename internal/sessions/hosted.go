package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Sessions whose agent runs in an executor host (the detached and remote
// runtimes, DESIGN.md section 9). The host outlives the daemon, so a
// daemon restart interrupts nothing: start-up reconciliation marks the
// executor reconnecting, and the session's actor attaches to the agent on
// the host again (attach), takes up the running turn where it is, and
// keeps the permission requests pending. What the agent sent meanwhile
// waits in the host's outbox; every record's offset is committed with
// what the record caused (offsetChange), so the stream resumes exactly
// after the last one the daemon has.

// hosted reports whether the session's agent runs in an executor host.
func (a *actor) hosted() bool {
	return a.exec.Runtime != session.RuntimeStandalone && a.exec.Runtime != ""
}

// offsetChange commits a host record's offset (absolute:
// store.Executor.HostOffset) with the change the record caused, in one
// transaction: after a crash the store says exactly which records it
// has. The offset rides in the first event of the session the change
// emits, which it writes anyway; only a change that emits none updates
// the executor row (a statement and a page more per transaction).
type offsetChange struct {
	events.Change
	offset uint64
}

func (c offsetChange) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	sid, tagged := c.SessionID(), false
	err := c.Change.Apply(ctx, tx, func(d events.Draft) {
		if !tagged && d.SessionID == sid && !d.Latest { // a Latest draft may be dropped
			d.HostOffset, tagged = c.offset, true
		}
		emit(d)
	})
	if err != nil || tagged {
		return err
	}
	return tx.SetExecutorOffset(ctx, sid, c.offset)
}

// withRecord runs f, which handles the host record at offset (0 for a
// local agent's update, or a previous agent's record), with every write
// it makes carrying the offset. One record makes at most one write
// (decideUpdate), so the offset is committed exactly when the record's
// effect is. A record that changes nothing the store holds (usage, an
// echo of the prompt, output after its turn, a replayed update) has its
// offset committed alone: its acknowledgement lets the host drop it, and
// the next attach must start after it, or the host's stream would begin
// past the offset the store says it has (issue 28: "executor host
// skipped records" after a clean restart). The record's offset in its
// agent's outbox becomes absolute here (HostOffsetBase).
func (a *actor) withRecord(offset uint64, f func()) {
	if offset == 0 {
		f()
		return
	}
	offset += a.exec.HostOffsetBase
	a.hostTop = max(a.hostTop, offset)
	a.recordOffset = offset
	defer func() { a.recordOffset = 0 }()
	before := a.version
	f()
	if a.version == before {
		a.emit() // offsetChange: the offset alone
	}
}

// resetHostOffset starts the numbering of a new agent's outbox, which
// starts again at 1 on its host, above every offset the session has used.
func (a *actor) resetHostOffset() {
	base := max(a.hostTop, a.exec.HostOffset)
	a.exec.HostOffsetBase, a.exec.HostOffset, a.hostTop = base, base, base
	a.change(offsetReset{Session: a.id, Base: base})
}

// offsetReset starts a new agent's outbox numbering at Base
// (store.ResetExecutorOffset): bookkeeping of the host protocol, not an
// event.
type offsetReset struct {
	Session string
	Base    uint64
}

func (c offsetReset) SessionID() string { return c.Session }

func (c offsetReset) Apply(ctx context.Context, tx *store.Store, _ events.Emit) error {
	return tx.ResetExecutorOffset(ctx, c.Session, c.Base)
}

// attach takes up the agent of a hosted session after a daemon restart
// (effStartAgent, startAttach): like a start, but the agent, its ACP session and its
// running turn are already there.
func (a *actor) attach() {
	if a.conn != nil || a.starting || a.stopping || a.sess.State.Terminal() {
		return
	}
	rt, err := a.m.cfg.Executors.Runtime(a.exec.Runtime, a.exec.Host)
	hr, ok := rt.(runtimes.HostRuntime)
	if err == nil && !ok {
		err = errcode.New(errcode.ExecutorNotFound, "executor %s %q cannot attach agents", a.exec.Runtime, a.exec.Host)
	}
	if err != nil {
		a.attachFailed(err)
		return
	}
	if a.slot == nil {
		// The agent runs on its host already: it is taken up whatever
		// the agent limits (agentSlots.adopt).
		a.slot = a.m.slots.adopt(a.sess.AgentProfileID)
	}
	a.starting = true
	a.attachOpen = true
	a.gen++
	gen := a.gen
	// The turn that was running is the turn of whatever the host replays
	// first: it runs here again before the attach is answered.
	for _, t := range a.turns {
		if t.State == session.TurnRunning {
			// Its clocks run on: its time from its start, its silence
			// from now (this daemon has heard nothing of it yet; what
			// the host replays next is heard as it comes).
			a.running = &turnRun{turn: t, heard: time.Now()}
			a.armBudget()
			break
		}
	}
	from := uint64(0)
	if a.exec.HostOffset > a.exec.HostOffsetBase {
		from = a.exec.HostOffset - a.exec.HostOffsetBase
	}
	req := runtimes.AttachRequest{SessionID: a.id, From: from, Handler: &agentHandler{a: a, gen: gen}, Logger: a.log}
	running := ""
	if a.running != nil {
		running = a.running.turn.PromptID
	}
	a.m.spawn(func() {
		ctx, cancel := context.WithCancel(a.m.life)
		defer cancel()
		pending, perr := a.m.store.ListPendingPermissions(ctx, a.id)
		if running != "" && perr == nil {
			var out turnOutput
			out, perr = a.m.turnOutputOf(ctx, a.id, running)
			// Posted before the attach, whose replay the handler posts
			// after it: the first replayed chunk finds the open message.
			a.mb.Post(func() {
				if gen == a.gen && a.running != nil {
					a.running.resumeOutput(out)
				}
			})
		}
		conn, err := hr.Attach(ctx, req)
		if err == nil && perr != nil {
			err = perr
		}
		// Should the actor be gone (the daemon is stopping), the agent
		// simply stays on its host for the next daemon.
		a.mb.Post(func() { a.onAttached(gen, conn, pending, err) })
	})
}

// turnOutputTypes are the events that decide where a turn's next text
// chunk goes: a message's, or one that ends the message before it (see
// decideUpdate and splitMessage).
var turnOutputTypes = []string{events.MessageAdded, events.MessageChunk, events.ToolCallStarted, events.ToolCallUpdated,
	events.PlanUpdated, events.PermissionRequested}

// turnOutput is the last of a turn's turnOutputTypes events in the log,
// and the last message.added of the turn (the message its chunks go to).
type turnOutput struct {
	typ     string
	payload json.RawMessage
	added   json.RawMessage
}

// turnOutputOf reads where turn promptID's output stands in the log.
func (m *Manager) turnOutputOf(ctx context.Context, sessionID, promptID string) (out turnOutput, err error) {
	out.typ, out.payload, err = m.store.LastTurnEvent(ctx, sessionID, promptID, turnOutputTypes)
	if err == nil {
		_, out.added, err = m.store.LastTurnEvent(ctx, sessionID, promptID, []string{events.MessageAdded})
	}
	return out, err
}

// resumeOutput picks up the running turn's text where the log left it,
// after a restart: the next chunk goes on with the message the turn was
// writing (an agent's or thought's), unless a tool call, plan or
// permission request came after it; without this the daemon's memory of
// the open message was lost, and a reply cut by a restart read as two.
// The agent's messageId of that message comes back too, so that its next
// message (another messageId: a retry, a new reply) is not glued onto it.
func (r *turnRun) resumeOutput(out turnOutput) {
	switch out.typ {
	case "":
	case events.MessageAdded, events.MessageChunk:
		var m, added struct {
			MessageID      int64               `json:"messageId"`
			Role           session.MessageRole `json:"role"`
			AgentMessageID string              `json:"agentMessageId"`
		}
		if json.Unmarshal(out.payload, &m) == nil && m.MessageID != 0 && (m.Role == session.RoleAgent || m.Role == session.RoleThought) {
			r.openMsg, r.openRole = m.MessageID, m.Role
			if json.Unmarshal(out.added, &added) == nil && added.MessageID == m.MessageID {
				r.msgID = added.AgentMessageID
			}
		}
	default:
		r.split = true
	}
}

// onAttached adopts the attached agent: the executor is ready again, the
// turn that was running goes on (its prompt is sent again under the same
// turn id, which the host answers with the turn's end instead of a second
// turn), and the permission requests still pending on the host stay
// pending here, under their ids.
func (a *actor) onAttached(gen int, conn runtimes.Agent, pending []session.Permission, err error) {
	if gen != a.gen {
		return
	}
	a.starting = false
	if err != nil {
		a.attachFailed(err)
		return
	}
	a.conn, a.acpID = conn, a.exec.ResumeToken
	a.lastErr = nil
	if !endedOnHost(conn) {
		// An agent its host reported ended (a reboot took it) is never
		// ready: the executor stays reconnecting until its exit record,
		// which the host replays, says it was lost.
		now := time.Now().UTC()
		a.exec.Status = session.ExecutorReady
		a.exec.PID = conn.PID()
		a.exec.Sandbox, a.exec.SandboxReason = sandboxState(conn)
		a.exec.LastSeenAt = &now
		a.exec.ErrorMessage, a.exec.ErrorCode = "", ""
		a.saveExecutor()
	}
	a.adoptOptions(conn.SessionOptions())
	// Requests the host still holds are claimed when it delivers them
	// (askPermission); the others were answered or withdrawn meanwhile.
	held := map[string]bool{}
	for _, id := range conn.PendingPermissions() {
		held[id] = true
	}
	for _, p := range pending {
		if held[p.ID] {
			a.hostPending[p.ID] = p
		} else {
			a.resolve(p.ID, session.PermissionCancelled, "")
		}
	}
	a.watchExit(gen, conn)
	if a.running != nil {
		a.resumeTurn(a.running)
	}
	a.notifyWaiters(nil)
	a.arm(effTimer{Timer: timerIdle})
	a.startNext()
	if !endedOnHost(conn) {
		a.settleAttach() // else once its exit, which the host replays, is recorded
	}
}

// endedOnHost reports whether conn is an attached agent its host reported
// ended: it takes no prompt (one sent would fail, or be cut as the exit
// record the host replays arrives); what is queued waits for that exit,
// which starts a fresh agent.
func endedOnHost(conn runtimes.Agent) bool { return conn.EndedOnHost() }

// settleAttach ends the wait of those waiting for the attach to settle
// (awaitAttach).
func (a *actor) settleAttach() {
	a.attachOpen = false
	for _, ch := range a.attachWaiters {
		close(ch)
	}
	a.attachWaiters = nil
}

// watchExit reports the agent's end to the actor. A hosted agent may
// outlive the daemon, so the watch also ends with the manager.
func (a *actor) watchExit(gen int, conn runtimes.Agent) {
	a.m.spawn(func() {
		select {
		case <-conn.Done():
			a.mb.Post(func() { a.onAgentExit(gen, conn) })
		case <-a.m.life.Done():
		}
	})
}

// promptContext is what a turn's prompt call runs under: a local agent's
// runs until the agent answers (a cancel goes via session/cancel, and a
// shutdown stops the agent); a hosted agent's turn goes on on its host
// when the daemon stops, so only the wait for it ends with the manager.
func (a *actor) promptContext() context.Context {
	if a.hosted() {
		return a.m.life
	}
	return context.Background()
}

// resumeTurn takes up turn t, which was running on the host when the
// daemon stopped: its updates keep coming (from the outbox first), and
// the prompt, sent again under the turn's id, answers with its end.
func (a *actor) resumeTurn(r *turnRun) {
	r.conn = a.conn
	t := r.turn
	acpID, prompt := a.acpID, t.Prompt
	a.m.spawn(func() {
		stop, err := r.conn.PromptTurn(a.promptContext(), acpID, t.PromptID, prompt, nil)
		a.mb.Post(func() { a.onTurnDone(r, stop, err) })
	})
	if t.CancelRequested || r.budgetStop != "" {
		// Asked before the restart, or while attaching (by the user, or
		// by a budget reached as the host replayed): the host may never
		// have heard of it.
		a.cancelAgent(r)
	}
}

// attachFailed takes the interruption path for a hosted session whose
// agent could not be attached. Either way the agent was lost with its
// host (executor_lost), and the exit says how: the host stayed
// unreachable, or it no longer holds the session (a restart of its
// machine took records the daemon had committed, or the agent's exit was
// acknowledged before the daemon recorded it). The session stays
// resumable, as after any agent exit.
func (a *actor) attachFailed(err error) {
	a.dropSlot() // no agent holds it (a fresh start for a queue takes its own)
	a.log.Warn("executor host: agent not attached", "err", err)
	exit := acp.Exit{Code: -1, Stderr: err.Error(), Lost: err.Error()}
	var ce *errcode.Error
	if errors.As(err, &ce) {
		exit.Lost = ce.Message
	}
	var cause causeInfo
	if errcode.Is(err, errcode.HostOutboxDamaged) {
		cause = causeOf(err)
	}
	if a.running == nil {
		for _, t := range a.turns {
			if t.State == session.TurnRunning {
				a.running = &turnRun{turn: t}
				break
			}
		}
	}
	a.agentEnded()
	_ = a.perform(decide(a.view(), agentExitedInput{Exit: exitInfo(exit), Lost: true, Cause: cause, At: time.Now().UTC()}), nil)
	a.closeStorePermissions()
	a.notifyWaiters(err)
	a.settleAttach()
}

// closeStorePermissions expires the session's permission requests that
// are pending in the store but held by no agent (after a failed attach:
// nothing will ever answer them).
func (a *actor) closeStorePermissions() {
	a.m.spawn(func() {
		pending, err := a.m.store.ListPendingPermissions(a.m.life, a.id)
		if err != nil {
			return
		}
		a.mb.Post(func() {
			for _, p := range pending {
				if _, live := a.perms[p.ID]; !live {
					a.resolve(p.ID, session.PermissionExpired, "")
				}
			}
		})
	})
}

// LinkChanged shows the executor reconnecting while the daemon has lost
// its host, and ready again once it is back: one session.executor_status
// each way per outage, the first saying why the link broke (linkWhy).
func (h *agentHandler) LinkChanged(up bool) {
	h.a.mb.Post(func() {
		a := h.a
		why := a.linkWhy
		a.linkWhy = nil
		if h.gen != a.gen || a.conn == nil {
			return
		}
		if up && a.agentLeaving() {
			return
		}
		want := session.ExecutorReconnecting
		if up {
			want = session.ExecutorReady
		}
		if a.exec.Status == want || (a.exec.Status != session.ExecutorReady && a.exec.Status != session.ExecutorReconnecting) {
			return
		}
		a.exec.Status = want
		if up {
			now := time.Now().UTC()
			a.exec.LastSeenAt = &now
			a.exec.ErrorMessage, a.exec.ErrorCode = "", "" // why it was unreachable
		} else if why != nil {
			a.exec.ErrorMessage, a.exec.ErrorCode = why.Error(), string(errcode.CodeOf(why))
		}
		a.saveExecutor()
	})
}

// HostUnreachable shows why the session waits for its executor host (a
// start or an attach not answered, a broken link) in the executor row's
// error, while its status stays starting or reconnecting: "cannot
// connect", "refused the token", instead of a bare spinner until a
// deadline. A starting executor announces each new reason
// (session.executor_status); a reconnecting one announced its outage
// once, and its actor keeps the latest reason (GET /status answers from
// it) without another event: the executor has not changed, only the last
// failed attempt. The reason a link broke comes just before the link's going
// down, and rides in its announcement (LinkChanged).
func (h *agentHandler) HostUnreachable(why error) {
	h.a.mb.Post(func() {
		a := h.a
		if h.gen != a.gen {
			return
		}
		if !a.starting && a.exec.Status == session.ExecutorReady {
			a.linkWhy = why
			return
		}
		if !a.starting && a.exec.Status != session.ExecutorReconnecting {
			return
		}
		msg, code := why.Error(), string(errcode.CodeOf(why))
		if a.exec.ErrorMessage == msg && a.exec.ErrorCode == code {
			return
		}
		a.exec.ErrorMessage, a.exec.ErrorCode = msg, code
		if a.exec.Status != session.ExecutorReconnecting {
			a.saveExecutor()
		} // else the actor's copy answers GET /status: nothing new to record
	})
}

// The actor's handler takes what a hosted agent reports.
var _ runtimes.HostHandler = (*agentHandler)(nil)

// permissionID is the id a new permission request is stored under: the
// host's own for a hosted agent (so that the request, delivered again
// after a restart, is the same one), else a fresh one.
func permissionID(req acp.PermissionRequest) string {
	if req.ID != "" {
		return req.ID
	}
	return uuid.NewString()
}
