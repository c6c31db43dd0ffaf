package sessions

import (
	"encoding/json"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
)

// pendingPermission is an agent's open question and the channel that
// carries the user's answer back to the blocked ACP request.
type pendingPermission struct {
	promptID string
	options  []acp.PermissionOption
	reply    chan acp.PermissionOutcome
}

// onUpdate records one session/update in the transcript, as decideUpdate
// decides. History a session/load replays (decision.Replayed) is counted
// for the load's settle (noteReplay), and stored nowhere.
func (a *actor) onUpdate(gen int, u acp.Update) {
	if a.isLate(gen) {
		a.onLate(u)
		return
	}
	if r := a.running; r != nil && gen == a.gen {
		// The stall watchdog's clock (budget.go), kept without a watchdog
		// too: one set later counts from the agent's last word.
		r.heard = time.Now()
	}
	d := decide(a.view(), updateOf(u, gen == a.gen))
	if d.Replayed {
		a.replayed++
		a.noteReplay(u)
	}
	_ = a.perform(d, nil)
}

// updateOf is what decideUpdate knows of update u (current: its agent is
// the session's).
func updateOf(u acp.Update, current bool) updateInput {
	in := updateInput{Kind: u.Kind, MessageID: u.MessageID, Text: u.Text, Block: u.Block != nil, Content: u.Block,
		Empty: u.Block == nil && u.Text == "", Current: current}
	switch u.Kind {
	case acp.UpdatePlan, acp.UpdateAvailableCommands, acp.UpdateCurrentMode, acp.UpdateConfigOptions, acp.UpdateSessionInfo, acp.UpdateUsage:
		in.Data = u.Data
	case acp.UpdateToolCall, acp.UpdateToolCallUpdate:
		in.Tool = u.Tool
	}
	return in
}

// startMessage folds message.added of a new message of the running turn
// (p): its id is taken here, so the chunks that follow name it without
// the store reading it back. Taking an id fails only when the database
// cannot be reached: the write then fails with it, like any other
// (writefail.go).
func (a *actor) startMessage(p *session.MessageAddedData) *events.Pending {
	r := a.running
	r.noteChunk(p.AgentMessageID)
	id, err := a.m.store.NewMessageID(a.ctx())
	r.openMsg, r.openRole = id, p.Role
	if err != nil {
		r.openMsg = 0
		return a.change(noID{a.id, err})
	}
	p.MessageID = id
	return a.emit(a.draft(p.PromptID, p))
}

// noteChunk notes a message chunk with ACP messageID (decideUpdate has
// decided from the previous one whether it starts a new message): what
// came between is behind it now.
func (r *turnRun) noteChunk(messageID string) {
	r.split = false
	if messageID != "" {
		r.msgID = messageID
	}
}

// splitMessage ends the running turn's current message: text that follows
// a tool call, plan or permission reads after it, not glued before it.
func (a *actor) splitMessage() {
	if a.running != nil {
		a.running.split = true
	}
}

// messageDraft is message.added of the new message m, whose row is its
// projection: m.ID 0 lets the projection take an id, and its time is the
// projection's (the transcript orders messages and tool calls by the
// time the writer stored them, so both take it there); agentMsgID is the
// agent's ACP messageId of it, and closes names the message it ends (0:
// the session's latest).
func (a *actor) messageDraft(m session.Message, agentMsgID string, closes int64) events.Draft {
	return messageDraft(a.id, a.sess.TaskID, m, agentMsgID, closes)
}

// messageDraft is message.added of message m of a session of task taskID.
func messageDraft(sessionID, taskID string, m session.Message, agentMsgID string, closes int64) events.Draft {
	return sessionDraft(sessionID, taskID, m.PromptID, &session.MessageAddedData{MessageID: m.ID, Role: m.Role,
		Text: m.Text, CreatedAt: m.CreatedAt, Content: m.Content, AgentMessageID: agentMsgID, Closes: closes})
}

// toolCallPayload is a tool call as events carry it: whole, once
// projected (events/project.go merges an update into the stored call).
func toolCallPayload(c session.ToolCall) *session.ToolCallData {
	return &session.ToolCallData{ToolCallID: c.ToolCallID, Title: c.Title, Kind: c.Kind, Status: c.Status,
		Interrupted: c.Interrupted, Content: c.Content, Locations: c.Locations, RawInput: c.RawInput, RawOutput: c.RawOutput}
}

func toolCallRecord(sessionID, promptID string, t *acp.ToolCall) session.ToolCall {
	r := session.ToolCall{SessionID: sessionID, ToolCallID: t.ID, PromptID: promptID,
		Content: t.Content, Locations: t.Locations, RawInput: t.RawInput, RawOutput: t.RawOutput}
	if t.Title != nil {
		r.Title = *t.Title
	}
	if t.Kind != nil {
		r.Kind = *t.Kind
	}
	if t.Status != nil {
		r.Status = session.ToolCallStatus(*t.Status)
	}
	return r
}

// onPermissionRequested persists the question and returns its id, or ""
// when the agent is stale or the question is declined (the caller then
// answers "cancelled"; see decidePermissionRequested).
func (a *actor) onPermissionRequested(gen int, req acp.PermissionRequest, reply chan acp.PermissionOutcome) string {
	if gen != a.gen || a.isLate(gen) {
		return ""
	}
	if p, ok := a.hostPending[req.ID]; ok && req.ID != "" {
		// Asked before a daemon restart and still pending on the host: the
		// same request, already in the store and on every client's screen.
		delete(a.hostPending, req.ID)
		a.perms[p.ID] = &pendingPermission{promptID: p.PromptID, options: req.Options, reply: reply}
		return p.ID
	}
	j := &job{ask: &permissionAsk{req: req, reply: reply}}
	_ = a.perform(decide(a.view(), permissionRequestedInput{}), j)
	return j.permID
}

// permissionAsk is an agent's question and the channel its answer goes
// back on.
type permissionAsk struct {
	req   acp.PermissionRequest
	reply chan acp.PermissionOutcome
}

// performAsk puts the job's question to the user, or declines it
// (effAskPermission).
func (a *actor) performAsk(e effAskPermission, j *job) {
	if e.Declined {
		if e.TooMany {
			a.log.Warn("agent permission request refused: too many open", "open", len(a.perms), "limit", a.m.cfg.MaxPendingPermissions)
		}
		return
	}
	q, id := j.ask, ""
	a.withRecord(q.req.Offset, func() { id = a.askPermission(e.PromptID, q.req, q.reply) })
	j.permID = id
}

// askPermission records the agent's question (and its tool call) and
// keeps the reply channel until the user, a cancel or an exit answers.
func (a *actor) askPermission(promptID string, req acp.PermissionRequest, reply chan acp.PermissionOutcome) string {
	title := ""
	if req.Tool.Title != nil {
		title = *req.Tool.Title
	}
	a.splitMessage()
	opts, _ := json.Marshal(req.Options)
	p := session.Permission{ID: permissionID(req), SessionID: a.id, PromptID: promptID, ToolCallID: req.Tool.ID,
		Title: title, Options: opts, State: session.PermissionPending}
	var ds []events.Draft
	if req.Tool.ID != "" {
		ds = append(ds, a.draft(promptID, toolCallPayload(toolCallRecord(a.id, promptID, &req.Tool))))
	}
	ds = append(ds, a.draft(promptID, &session.PermissionRequestedData{
		RequestID: p.ID, ToolCallID: p.ToolCallID, Title: p.Title, Options: opts}))
	asked := a.emit(ds...)
	a.perms[p.ID] = &pendingPermission{promptID: promptID, options: req.Options, reply: reply}
	asked.Then(func() {
		if asked.Err() != nil {
			a.mb.Post(func() { a.dropUnrecorded(p.ID) })
		}
	})
	return p.ID
}

// dropUnrecorded answers "cancelled" to a request whose write failed: no
// client can see or answer a question the log does not hold, so the
// agent must not wait for one, nor the actor count it open.
func (a *actor) dropUnrecorded(id string) {
	if p, ok := a.perms[id]; ok {
		delete(a.perms, id)
		p.reply <- acp.PermissionOutcome{Cancelled: true}
	}
}

// answerPermission applies a client's answer to a pending request.
func (a *actor) answerPermission(id string, out acp.PermissionOutcome) (session.Permission, *events.Pending, error) {
	v := a.view()
	p, ok := a.perms[id]
	if ok {
		v.Permission = &permissionView{Options: make([]string, len(p.options))}
		for i, o := range p.options {
			v.Permission.Options[i] = o.ID
		}
	}
	d := decide(v, answerPermissionCmd{RequestID: id, Cancelled: out.Cancelled, OptionID: out.OptionID})
	if d.Refusal != nil && d.Refusal.Code == errcode.PermissionResolved {
		// Not live: either unknown, already answered, or asked by an agent
		// that is gone (recovery expires those).
		row, err := a.m.store.GetPermission(a.ctx(), a.id, id)
		if err != nil {
			return session.Permission{}, nil, err
		}
		return session.Permission{}, nil, errcode.New(errcode.PermissionResolved, "permission request %s is already %s", id, row.State).
			With("state", string(row.State))
	}
	if d.Refusal != nil {
		return session.Permission{}, nil, d.Refusal
	}
	j := &job{answer: out}
	_ = a.perform(d, j)
	return session.Permission{ID: id, SessionID: a.id}, j.pending, nil
}

// resolve persists a permission outcome and emits permission.resolved.
func (a *actor) resolve(id string, state session.PermissionState, optionID string) *events.Pending {
	defer a.pushRecovery()
	return a.record(&session.PermissionResolvedData{RequestID: id, State: state, OptionID: optionID})
}

// resolvePermission closes a pending request without a client answer
// (turn ended, agent gone, request withdrawn).
func (a *actor) resolvePermission(id string, state session.PermissionState, optionID string) {
	p, ok := a.perms[id]
	if !ok {
		return
	}
	delete(a.perms, id)
	a.resolve(id, state, optionID)
	p.reply <- acp.PermissionOutcome{Cancelled: true}
}

// closePermissions answers every open request of a turn ("" = all)
// "cancelled" to the agent, as ACP requires when a turn ends, and records
// state: cancelled when the turn was cancelled, expired when the agent went.
func (a *actor) closePermissions(promptID string, state session.PermissionState) {
	for id, p := range a.perms {
		if promptID == "" || p.promptID == promptID {
			a.resolvePermission(id, state, "")
		}
	}
}
