package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Multitask policies for a prompt that arrives while a turn runs.
const (
	MultitaskEnqueue = "enqueue"
	MultitaskReject  = "reject"
)

// PromptInput is a prompt to admit.
type PromptInput struct {
	// Prompt is a JSON array of ACP content blocks.
	Prompt    json.RawMessage
	PromptID  string
	Multitask string
	kind      session.TurnKind
}

// PromptResult is the admitted turn.
type PromptResult struct {
	Turn       session.Turn
	EventEpoch string
	// Cursor is where to stream from to see the turn: the event that
	// admitted it (or the head, for a repeated prompt id).
	Cursor  string
	pending *events.Pending
}

// CancelResult says what a cancel did.
// CancelInput is how a cancel treats the queue.
type CancelInput struct {
	// KeepQueue: only the running turn is cancelled; the queued ones stay.
	KeepQueue bool
}

type CancelResult struct {
	PromptID  string
	Cancelled bool
	Dequeued  []string
}

func (a *actor) prompt(ctx context.Context, in PromptInput) (PromptResult, error) {
	res, err := mailbox.Call(ctx, a.mb, func() (PromptResult, error) { return a.admit(in) })
	if err != nil {
		return PromptResult{}, err
	}
	// Answer only once the turn is durable: a 202 is a promise.
	evs, err := res.pending.Wait(ctx)
	if err != nil {
		return PromptResult{}, err
	}
	res.Turn = a.settled(ctx, res.Turn, evs)
	res.Cursor = res.EventEpoch + ":" + strconv.FormatInt(lastSeq(evs, a.id), 10)
	if res.Cursor == res.EventEpoch+":0" {
		// A repeated prompt id admits nothing new: report the head.
		b, err := a.m.store.SessionEventBounds(ctx, a.id)
		if err != nil {
			return PromptResult{}, err
		}
		res.Cursor = res.EventEpoch + ":" + strconv.FormatInt(b.Head, 10)
	}
	return res, nil
}

// lastSeq is the seq of the last event of a session among evs, or 0.
func lastSeq(evs []store.Event, sessionID string) int64 {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].SessionID == sessionID {
			return evs[i].Seq
		}
	}
	return 0
}

// admit decides, atomically with every other command, whether the prompt
// runs now, waits in the queue, or is refused (decidePrompt).
func (a *actor) admit(in PromptInput) (PromptResult, error) {
	v := a.viewOf(in.PromptID)
	if v.Turn != nil {
		v.Turn.SamePrompt = sameJSON(a.turns[in.PromptID].Prompt, in.Prompt)
	}
	d := decide(v, promptCmd{PromptID: in.PromptID, Multitask: in.Multitask,
		Title: session.PromptTitle(promptText(in.Prompt)), Unsupported: a.unsupportedBlock(in.Prompt)})
	if d.Refusal != nil {
		return PromptResult{}, d.Refusal
	}
	j := &job{admit: &session.Turn{SessionID: a.id, PromptID: in.PromptID, Kind: in.kind, Prompt: in.Prompt}}
	if err := a.perform(d, j); err != nil {
		return PromptResult{}, err // refused whole: nothing is stored
	}
	return *j.res, nil
}

// performAdmit admits the job's turn (effAdmit), or answers a repeated
// prompt id with the turn it admitted; a refused slot stores nothing.
func (a *actor) performAdmit(e effAdmit, j *job) error {
	if e.Existing != "" {
		pending := a.synced()
		if e.Admitting {
			// Not durable yet: the retry shares the first request's
			// outcome instead of claiming a turn that may never exist.
			pending = a.admissionWrite(e.Existing)
		}
		j.res = &PromptResult{Turn: a.turns[e.Existing], EventEpoch: a.sess.EventEpoch, pending: pending}
		return nil
	}
	if e.Reserve {
		if err := a.needAgent(); err != nil {
			return err
		}
	}
	t, pending := a.enqueue(*j.admit, e.Front)
	j.res = &PromptResult{Turn: t, EventEpoch: a.sess.EventEpoch, pending: pending}
	return nil
}

// enqueue admits a turn: it is persisted queued (turn.queued) and runs once
// that write has committed and the agent is ready and idle. Until then it
// holds its place in the queue (and answers retries of its prompt id), but
// nothing about it reaches the agent; if the write fails it is dropped.
// Every admission releases a queue held since a restart (in the same
// write): first puts the turn ahead of it (a continuation), else it goes
// behind it.
func (a *actor) enqueue(t session.Turn, first bool) (session.Turn, *events.Pending) {
	if t.PromptID == "" {
		t.PromptID = uuid.NewString()
	}
	t.State = session.TurnQueued
	t.CreatedAt = time.Now().UTC()
	a.sess.Prompted = true
	released := a.sess.QueueHeld
	a.sess.QueueHeld = false
	var ds []events.Draft
	if released {
		ds = append(ds, a.queueHeldDraft(false))
	}
	pending := a.emit(append(ds, queuedDraft(a.sess, t))...)
	a.admitting[t.PromptID] = admission{prevLast: a.lastPromptID, pending: pending, released: released}
	a.turns[t.PromptID] = t
	a.lastPromptID = t.PromptID
	if first {
		a.queue = append([]session.Turn{t}, a.queue...)
	} else {
		a.queue = append(a.queue, t)
	}
	a.awaitAdmission(t.PromptID, pending)
	return t, pending
}

// startNext runs the next queued turn if the agent is ready and idle
// (decideNext).
func (a *actor) startNext() { _ = a.perform(decide(a.view(), nextInput{}), nil) }

// startTurn takes the head of the queue, promptID, to the agent: recorded
// as started first, sent once that is durable.
func (a *actor) startTurn(promptID string) {
	if len(a.queue) == 0 || a.queue[0].PromptID != promptID {
		a.log.Error("turn to start is not the head of the queue", "promptId", promptID)
		return
	}
	t := a.queue[0]
	a.queue = a.queue[1:]
	a.replaying = false
	now := time.Now().UTC()
	t.State = session.TurnRunning
	t.StartedAt = &now
	inject := a.sess.InjectContext
	if inject {
		// The agent lost its session: this prompt carries the resume
		// context, exactly once (recorded on the turn and the session).
		t.ContextInjected = true
		a.sess.InjectContext = false
	}
	a.turns[t.PromptID] = t
	ds := []events.Draft{a.draft(t.PromptID, &session.TurnStartedData{Kind: t.Kind, StartedAt: now, ContextInjected: inject})}
	if t.Kind != session.TurnContinue { // continuing adds no user message (DESIGN.md section 6)
		ds = append(ds, a.messageDraft(session.Message{PromptID: t.PromptID, Role: session.RoleUser, Text: promptText(t.Prompt)}, "", 0))
	}
	started := a.emit(ds...)
	r := &turnRun{turn: t, conn: a.conn}
	a.running = r
	a.setState(session.SessionRunning)
	a.pushRecovery()
	a.armBudget()
	acpID, pctx := a.acpID, a.promptContext()
	local, profileID := a.exec.Runtime != session.RuntimeRemote, a.sess.AgentProfileID
	a.m.spawn(func() {
		// The agent hears of the turn only once it is recorded as started.
		if _, err := started.Wait(context.Background()); err != nil {
			a.mb.Post(func() {
				// Not started, as far as the log knows: the turn's end
				// must not write a start the log never recorded.
				r.turn.StartedAt, r.turn.ContextInjected = nil, false
				if a.running == r {
					a.turns[r.turn.PromptID] = r.turn
				}
				a.onTurnDone(r, "", err)
			})
			return
		}
		a.m.checkpoint(a.id, t.PromptID, false)
		prompt := t.Prompt
		if inject {
			var err error
			if prompt, err = a.m.withResumeContext(a.id, t); err != nil {
				a.mb.Post(func() { a.onTurnDone(r, "", err) })
				return
			}
		}
		// The prompt's context stays alive on cancel so that the agent's
		// own stop reason is observed; cancellation goes via session/cancel.
		sent := func() { a.mb.Post(func() { a.markDelivered(r) }) }
		var stop string
		var err error
		// Named by the turn, so that a daemon that restarts mid-turn can
		// send it again (resumeTurn) without a second turn.
		stop, err = r.conn.PromptTurn(pctx, acpID, t.PromptID, prompt, sent)
		a.m.checkpoint(a.id, t.PromptID, true) // a host takes it itself
		a.m.credentials.NotePrompt(local, profileID, a.id, r.conn, stop, err)
		a.mb.Post(func() { a.onTurnDone(r, stop, err) })
	})

}

// onTurnDone takes the agent's answer to r's prompt (decideTurnEnded).
func (a *actor) onTurnDone(r *turnRun, stop string, err error) {
	if a.running != r {
		return // a turn that ended already (or another incarnation's)
	}
	in := turnEndedInput{PromptID: r.turn.PromptID, StopReason: stop}
	if err != nil {
		class := acp.Classify(err)
		in.Failed = true
		in.Disconnected = class == acp.ClassDisconnected
		in.SessionLost = class == acp.ClassUnknownSession || class == acp.ClassSessionLost
		in.ErrorCode, in.ErrorMessage = errorCode(err), acp.Message(err)
	}
	_ = a.perform(decide(a.view(), in), nil)
}

func errorCode(err error) string {
	var de *errcode.Error
	if errors.As(err, &de) {
		return string(de.Code) // the daemon's own failure, not the agent's
	}
	switch acp.Classify(err) {
	case acp.ClassAuthRequired:
		return string(errcode.AgentAuthRequired)
	case acp.ClassUnknownSession:
		return "agent_session_not_found"
	case acp.ClassTimeout:
		return "agent_timeout"
	}
	if c := acp.Code(err); c != 0 {
		return fmt.Sprintf("agent_error_%d", c)
	}
	return "agent_error"
}

// turnEndedDraft is the terminal event of a turn of a session of taskID.
func turnEndedDraft(sessionID, taskID string, t session.Turn, dangling []session.DanglingToolCall) events.Draft {
	p := session.EventPayload(&session.TurnCompletedData{State: t.State, EndedAt: t.EndedAt, StopReason: t.StopReason})
	switch t.State {
	case session.TurnFailed:
		p = &session.TurnFailedData{State: t.State, EndedAt: t.EndedAt, Code: t.ErrorCode, Message: t.ErrorMessage}
	case session.TurnCancelled:
		c := &session.TurnCancelledData{State: t.State, EndedAt: t.EndedAt, StopReason: t.StopReason, CancelRequested: t.CancelRequested}
		if t.StopReason == session.Withdrawn {
			c.Reason = session.Withdrawn
		}
		if session.StoppedByBudget(t) {
			c.Reason, c.Message = t.ErrorCode, t.ErrorMessage
		}
		p = c
	case session.TurnInterrupted:
		if dangling == nil {
			dangling = []session.DanglingToolCall{}
		}
		p = &session.TurnInterruptedData{State: t.State, EndedAt: t.EndedAt, Reason: t.InterruptReason,
			DanglingToolCalls: dangling, ExitCode: t.ExitCode, ExitSignal: t.ExitSignal, Code: t.ErrorCode, Message: t.ErrorMessage}
	}
	return sessionDraft(sessionID, taskID, t.PromptID, p)
}

// interruptedToolText is the synthetic result recorded for a tool call whose
// outcome was never reported.
const interruptedToolText = session.InterruptedToolResult + ": interrupted by %s. Treat as failure and retry if needed."

// exitCode is the exit code to record for an agent's end: none for an
// agent lost with its executor host, whose exit nobody saw.
func exitCode(exit acp.Exit) *int {
	if exit.Lost != "" {
		return nil
	}
	code := exit.Code
	return &code
}

// interruptTurn folds turn promptID's interruption (p, decided by
// interruption or restartInterruption) into the actor: the turn leaves
// the agent or the queue, and its record takes the event's reason, exit
// and cause, and the time it is recorded at. The write fails the turn's
// unfinished tool calls, with what the reason says cut them ("agent
// exited", "daemon restart"), adds the notice, and writes the event from
// that record (turnInterrupted). A turn lost with its executor host is
// the one the agent's late output goes to, should the host come back
// (late.go). A restart's repairs push no plan (start-up announces each
// repaired session's) and report no workspace changes.
func (a *actor) interruptTurn(promptID string, p *session.TurnInterruptedData) *events.Pending {
	a.leaveAgent(promptID)
	a.queue = slices.DeleteFunc(a.queue, func(q session.Turn) bool { return q.PromptID == promptID })
	now := time.Now().UTC()
	t := a.turns[promptID]
	t.State, t.EndedAt, t.InterruptReason = session.TurnInterrupted, &now, p.Reason
	t.ExitCode, t.ExitSignal = p.ExitCode, p.ExitSignal
	t.ErrorCode, t.ErrorMessage = p.Code, p.Message
	a.turns[promptID] = t
	t.SessionID = a.id
	w := a.change(turnInterrupted{TaskID: a.sess.TaskID, Turn: t, Cause: strings.ReplaceAll(p.Reason, "_", " "), Notice: p.Notice})
	if p.Reason == reasonExecutorLost {
		a.late = &lateRun{gen: a.gen, run: &turnRun{turn: a.turns[promptID], split: true}}
	}
	if p.Reason != reasonRestart {
		a.pushRecovery()
		a.m.reportChanges(a.id, promptID)
	}
	return w
}

// cancel records the user's intent durably, asks the agent to stop, answers
// open permission requests "cancelled" and drops queued prompts unless
// in.KeepQueue. If the agent does not end the turn within CancelGrace it
// is stopped.
func (a *actor) cancel(in CancelInput) (CancelResult, error) {
	d, err := a.decideAndPerform(cancelCmd(in))
	return d.Cancel, err
}

// cancelResend is when a cancel the agent has not acted on is sent again:
// an agent may miss one (ACP SDKs run a notification and the request it
// follows concurrently, so session/cancel can overtake the prompt it
// cancels), and session/cancel is idempotent.
const cancelResend = 500 * time.Millisecond

// cancelAgent asks r's agent to stop the turn (session/cancel), once more
// after cancelResend if the turn goes on, and stops the agent if it has
// not ended the turn within CancelGrace. An agent stopped so takes no
// further turn (a.deaf): what was prompted after the cancel waits for a
// fresh agent, which its exit starts (decideAgentExited).
func (a *actor) cancelAgent(r *turnRun) {
	if r.conn == nil {
		return // being attached (hosted): resumeTurn sends the cancel
	}
	acpID := a.acpID
	send := func() {
		a.m.spawn(func() {
			if err := r.conn.Cancel(context.Background(), acpID); err != nil {
				a.log.Warn("session/cancel failed", "err", err)
			}
		})
	}
	send()
	time.AfterFunc(cancelResend, func() {
		a.mb.Post(func() {
			if a.running == r {
				send()
			}
		})
	})
	r.cancelTimer = time.AfterFunc(a.m.cfg.CancelGrace, func() {
		a.mb.Post(func() {
			if a.running == r {
				a.log.Warn("agent ignored cancel; stopping it", "grace", a.m.cfg.CancelGrace)
				a.deaf = r.conn
				a.m.spawn(func() { r.conn.Stop() })
			}
		})
	})
}

func sameJSON(x, y json.RawMessage) bool {
	var bx, by bytes.Buffer
	if json.Compact(&bx, x) != nil || json.Compact(&by, y) != nil {
		return bytes.Equal(x, y)
	}
	return bytes.Equal(bx.Bytes(), by.Bytes())
}

// promptText is the user-visible text of a prompt: its text blocks joined,
// with other blocks named.
func promptText(prompt json.RawMessage) string {
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
		URI  string `json:"uri"`
		Name string `json:"name"`
	}
	if json.Unmarshal(prompt, &blocks) != nil {
		return ""
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "resource_link":
			parts = append(parts, fmt.Sprintf("[%s](%s)", b.Name, b.URI))
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}
