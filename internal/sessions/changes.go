package sessions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/tasks"
)

// Typed changes: the writes a session hands to the event writer as values
// (events.Change). Each is built on the actor (or by a request) with every
// id it needs already chosen, holds only copies, and writes the same rows
// however often the writer runs it: when another change of its batch fails,
// the batch is rolled back and each change redone alone. None reads or
// changes the actor, which learns the outcome from the Pending (see
// write.go). A session writes nothing else: events whose rows are their
// projection (emit), and these.

// sessionCreated creates a session, its task when the request named none,
// and the queued initial turn, in one change: all of it exists or none.
type sessionCreated struct {
	// Task is the task to create with the session (ID chosen), or nil
	// when Session.TaskID names an existing one.
	Task     *session.Task
	Session  session.Session
	Executor session.Executor
	// Initial is the initial prompt's turn (PromptID chosen), or nil.
	Initial *session.Turn
	// Fork is a fork's origin and copied transcript (fork.go), or nil.
	Fork *forkCopy
}

func (c sessionCreated) SessionID() string { return c.Session.ID }

func (c sessionCreated) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	if c.Task != nil {
		emit(tasks.CreatedDraft(*c.Task))
	}
	sess, err := tx.CreateSession(ctx, c.Session, c.Executor)
	if err != nil {
		return err
	}
	x := session.ExecutorStatusOf(c.Executor)
	emit(sessionDraft(sess.ID, sess.TaskID, "", &session.SessionCreatedData{
		AgentProfileID: sess.AgentProfileID, Cwd: sess.Cwd, State: sess.State, Title: sess.Title, TitleSource: sess.TitleSource, EventEpoch: sess.EventEpoch,
		Runtime: x.Runtime, Host: x.Host, Worktree: x.Worktree, Sandbox: sess.Sandbox}))
	if c.Fork != nil {
		c.Fork.emit(sess, emit)
		emit(sessionDraft(sess.ID, sess.TaskID, "", &session.MessageAddedData{Role: session.RoleSystem, Text: forkMessage(c.Fork.Forked)}))
	}
	if c.Initial == nil {
		return nil
	}
	emit(queuedDraft(sess, *c.Initial))
	return nil
}

// recoveryPushed emits session.recovery_changed with the plan the
// transcript implies as the session's earlier changes left it. The event
// is marked Latest: the writer drops it when the plan equals the last one
// committed, deciding inside the transaction, so a redone batch decides the
// same and no push is lost.
type recoveryPushed struct {
	Session, TaskID string
	// Closing and AgentAvailable are the plan inputs the store lacks.
	Closing, AgentAvailable bool
	// Always emits even an unchanged plan (start-up reconciliation).
	Always bool
	// history keeps each session's whole-history check (nil: check now).
	history *historyChecks
}

func (c recoveryPushed) SessionID() string { return c.Session }

func (c recoveryPushed) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	in, err := readPlanInput(ctx, tx, c.Session, c.history)
	if err != nil {
		return err
	}
	in.Closing, in.AgentAvailable = c.Closing, c.AgentAvailable
	d := sessionDraft(c.Session, c.TaskID, "", &session.RecoveryChangedData{Recovery: session.Plan(in)})
	d.Latest = !c.Always
	emit(d)
	return nil
}

// turnEnded records a turn's terminal outcome and emits its terminal event.
type turnEnded struct {
	TaskID string
	Turn   session.Turn
}

func (c turnEnded) SessionID() string { return c.Turn.SessionID }

func (c turnEnded) Apply(_ context.Context, _ *store.Store, emit events.Emit) error {
	emit(turnEndedDraft(c.Turn.SessionID, c.TaskID, c.Turn, nil))
	return nil
}

// permissionResolved records a permission request's outcome and emits
// permission.resolved; a request closed already stays as it is (a repair
// after a reload may find its first write stored after all).
type permissionResolved struct {
	Session, TaskID, RequestID string
	End                        permissionEnd
}

func (c permissionResolved) SessionID() string { return c.Session }

func (c permissionResolved) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	row, err := tx.GetPermission(ctx, c.Session, c.RequestID)
	if err != nil {
		return err
	}
	if row.State != session.PermissionPending {
		return nil
	}
	emit(sessionDraft(c.Session, c.TaskID, row.PromptID,
		&session.PermissionResolvedData{RequestID: c.RequestID, State: c.End.State, OptionID: c.End.OptionID}))
	return nil
}

// turnInterrupted ends Turn (state interrupted, as its fields say) with
// turn.interrupted: first its unfinished tool calls fail (toolCallsFailed,
// listed in the event), then Notice, when set, tells the transcript why.
type turnInterrupted struct {
	TaskID string
	Turn   session.Turn
	// Cause is what the tool calls' synthetic results say interrupted
	// them ("agent exited", "daemon restart").
	Cause, Notice string
}

func (c turnInterrupted) SessionID() string { return c.Turn.SessionID }

func (c turnInterrupted) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	t := c.Turn
	dangling, err := toolCallsFailed{Session: t.SessionID, TaskID: c.TaskID, PromptID: t.PromptID, Cause: c.Cause}.fail(ctx, tx, emit)
	if err != nil {
		return err
	}
	if c.Notice != "" {
		emit(messageDraft(t.SessionID, c.TaskID, session.Message{PromptID: t.PromptID, Role: session.RoleSystem, Text: c.Notice}, "", 0))
	}
	d := turnEndedDraft(t.SessionID, c.TaskID, t, dangling)
	if p, ok := d.Payload.(*session.TurnInterruptedData); ok {
		p.Notice = c.Notice
	}
	emit(d)
	return nil
}

// toolCallsFailed gives every unfinished tool call of turn PromptID the
// synthetic failed result, as tool_call.updated events flagged
// interrupted. Which calls are unfinished is read in the transaction, from
// the projections of every event before it: a tool call update still on
// its way to the writer when the turn ended is among them.
type toolCallsFailed struct {
	Session, TaskID, PromptID, Cause string
}

func (c toolCallsFailed) SessionID() string { return c.Session }

func (c toolCallsFailed) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	_, err := c.fail(ctx, tx, emit)
	return err
}

// fail emits the failures and returns the calls it failed.
func (c toolCallsFailed) fail(ctx context.Context, tx *store.Store, emit events.Emit) ([]session.DanglingToolCall, error) {
	// The turn's calls only, by index: this runs at every turn end.
	calls, err := tx.ListTurnToolCalls(ctx, c.Session, c.PromptID)
	if err != nil {
		return nil, err
	}
	dangling := []session.DanglingToolCall{}
	for _, tc := range calls {
		if tc.PromptID != c.PromptID || (tc.Status != session.ToolPending && tc.Status != session.ToolInProgress) {
			continue
		}
		// What the tool reported stays (the recovery report shows it); the
		// synthetic result follows it.
		var content []json.RawMessage
		_ = json.Unmarshal(tc.Content, &content)
		synthetic, _ := json.Marshal(map[string]any{"type": "content", "content": map[string]any{
			"type": "text", "text": fmt.Sprintf(interruptedToolText, c.Cause)}})
		blocks, _ := json.Marshal(append(content, synthetic))
		emit(sessionDraft(c.Session, c.TaskID, c.PromptID, toolCallPayload(session.ToolCall{
			SessionID: c.Session, ToolCallID: tc.ToolCallID, Status: session.ToolFailed, Interrupted: true, Content: blocks})))
		dangling = append(dangling, session.DanglingToolCall{ID: tc.ToolCallID, Title: tc.Title, Kind: tc.Kind})
	}
	return dangling, nil
}

// agentSpawned records the pid of an agent still starting (store.SetExecutorPID):
// bookkeeping for the orphan sweep of the next start-up, like the host
// offsets, not an event (the executor has not changed status; the
// session.executor_status that ends the start carries the pid).
type agentSpawned struct {
	Session string
	PID     int
}

func (c agentSpawned) SessionID() string { return c.Session }

func (c agentSpawned) Apply(ctx context.Context, tx *store.Store, _ events.Emit) error {
	return tx.SetExecutorPID(ctx, c.Session, c.PID)
}
