package server

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/tether/tether/api"
	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/buildinfo"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/tasks"
)

// handlers implements the generated StrictServerInterface by translating
// API types to core calls and back; it holds no state of its own.
type handlers struct {
	cfg Config
	// http is the request latency histogram that /metrics reports.
	http *httpMetrics
	// tickets are the outstanding stream tickets, shared with bearerAuth.
	tickets *streamTickets
	// parked counts the live streams out of net/http's hands (sseparked.go).
	parked atomic.Int64
}

var _ StrictServerInterface = (*handlers)(nil)

func (h *handlers) GetHealth(context.Context, GetHealthRequestObject) (GetHealthResponseObject, error) {
	return GetHealth200JSONResponse(h.health()), nil
}

func (h *handlers) health() Health {
	b := buildinfo.Get()
	out := Health{Status: HealthStatusOk, Version: b.Version, ApiVersion: b.API}
	if b.Commit != "" {
		out.Commit = &b.Commit
	}
	if r := h.cfg.Router; r != nil {
		node := r.NodeID()
		out.Node = &node
	}
	return out
}

// GetReady serves GET /ready: 503 not_ready while cfg.Ready says no.
func (h *handlers) GetReady(context.Context, GetReadyRequestObject) (GetReadyResponseObject, error) {
	if h.cfg.Ready != nil {
		if err := h.cfg.Ready(); err != nil {
			return nil, errcode.Wrap(errcode.NotReady, err, "this node does not serve requests now: %v", err).With("retryAfter", 1)
		}
	}
	if h.cfg.Writer != nil && h.cfg.Writer.Unreachable() {
		return nil, errcode.New(errcode.NotReady, "this node does not serve requests now: it cannot reach the database").With("retryAfter", 1)
	}
	return GetReady200JSONResponse(h.health()), nil
}

func (h *handlers) GetOpenAPI(context.Context, GetOpenAPIRequestObject) (GetOpenAPIResponseObject, error) {
	return GetOpenAPI200ApplicationyamlResponse{Body: bytes.NewReader(api.Spec), ContentLength: int64(len(api.Spec))}, nil
}

func (h *handlers) ListTasks(ctx context.Context, _ ListTasksRequestObject) (ListTasksResponseObject, error) {
	var tasks []session.Task
	cursor, err := h.listAt(ctx, func(r *store.Store) error {
		var err error
		tasks, err = r.ListTasks(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := TaskList{Tasks: make([]Task, 0, len(tasks)), Cursor: cursor}
	for _, t := range tasks {
		out.Tasks = append(out.Tasks, taskOf(t))
	}
	return ListTasks200JSONResponse(out), nil
}

func (h *handlers) CreateTask(ctx context.Context, req CreateTaskRequestObject) (CreateTaskResponseObject, error) {
	t, err := h.cfg.Tasks.Create(ctx, tasks.Input{Title: req.Body.Title, Workspace: deref(req.Body.Workspace)})
	if err != nil {
		return nil, err
	}
	return CreateTask201JSONResponse(taskOf(t)), nil
}

func (h *handlers) GetTask(ctx context.Context, req GetTaskRequestObject) (GetTaskResponseObject, error) {
	t, err := h.cfg.Store.GetTask(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return GetTask200JSONResponse(taskOf(t)), nil
}

func (h *handlers) UpdateTask(ctx context.Context, req UpdateTaskRequestObject) (UpdateTaskResponseObject, error) {
	p := tasks.Patch{Title: req.Body.Title}
	if req.Body.State != nil {
		s := session.TaskState(*req.Body.State)
		p.State = &s
	}
	t, err := h.cfg.Tasks.Update(ctx, req.Id, p)
	if err != nil {
		return nil, err
	}
	return UpdateTask200JSONResponse(taskOf(t)), nil
}

func (h *handlers) ListAgents(context.Context, ListAgentsRequestObject) (ListAgentsResponseObject, error) {
	profiles := h.cfg.Agents.List()
	out := AgentList{Agents: make([]AgentProfile, 0, len(profiles))}
	for _, p := range profiles {
		out.Agents = append(out.Agents, agentOf(p))
	}
	return ListAgents200JSONResponse(out), nil
}

func (h *handlers) CreateSession(ctx context.Context, req CreateSessionRequestObject) (CreateSessionResponseObject, error) {
	b := req.Body
	in := sessions.CreateInput{AgentProfileID: b.AgentProfileId, Cwd: b.Cwd,
		TaskID: deref(b.TaskId), Title: deref(b.Title), PromptID: deref(b.PromptId), Executor: deref(b.Executor), Worktree: deref(b.Worktree),
		AutoContinue: b.AutoContinue, Sandbox: policyIn(b.Sandbox), Budget: budgetIn(b.Budget)}
	if b.InitialPrompt != nil {
		raw, err := promptJSON(*b.InitialPrompt)
		if err != nil {
			return nil, err
		}
		in.InitialPrompt = raw
	}
	s, err := h.cfg.Sessions.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	out, err := h.session(ctx, s)
	if err != nil {
		return nil, err
	}
	// Credentials seen on this machine say nothing of a remote host's.
	if out.Executor == nil || out.Executor.Runtime != ExecutorRuntimeRemote {
		if p, err := h.cfg.Agents.Get(s.AgentProfileID); err == nil {
			out.Credentials = credentialsOf(p)
		}
	}
	return CreateSession201JSONResponse(out), nil
}

func (h *handlers) ListSessions(ctx context.Context, req ListSessionsRequestObject) (ListSessionsResponseObject, error) {
	f := store.SessionFilter{TaskID: deref(req.Params.TaskId), After: deref(req.Params.PageToken),
		Query: deref(req.Params.Q), Archived: deref(req.Params.Archived)}
	if req.Params.Limit != nil {
		f.Limit = *req.Params.Limit
	}
	if req.Params.State != nil {
		f.States = splitStates(*req.Params.State)
		for _, s := range f.States {
			if !validSessionState(s) {
				return nil, errcode.New(errcode.ValidationFailed, "unknown session state %q", s)
			}
		}
	}
	var (
		list  []session.Session
		execs map[string]session.Executor
		next  string
	)
	cursor, err := h.listAt(ctx, func(r *store.Store) error {
		var err error
		if list, next, err = r.ListSessions(ctx, f); err != nil {
			return err
		}
		// One query for the page's executor rows, not one per session.
		execs, err = r.ExecutorsOf(ctx, sessionIDs(list))
		return err
	})
	if err != nil {
		return nil, err
	}
	out := SessionList{Sessions: make([]Session, 0, len(list)), Cursor: cursor}
	for _, s := range list {
		out.Sessions = append(out.Sessions, sessionOf(s, execs[s.ID]))
	}
	if next != "" {
		out.NextPageToken = &next
	}
	return ListSessions200JSONResponse(out), nil
}

func (h *handlers) GetSession(ctx context.Context, req GetSessionRequestObject) (GetSessionResponseObject, error) {
	s, err := h.cfg.Store.GetSession(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	out, err := h.session(ctx, s)
	if err != nil {
		return nil, err
	}
	return GetSession200JSONResponse(out), nil
}

func (h *handlers) UpdateSession(ctx context.Context, req UpdateSessionRequestObject) (UpdateSessionResponseObject, error) {
	if b := req.Body.Budget; b != nil {
		if err := h.cfg.Sessions.SetBudget(ctx, req.Id, budgetIn(b)); err != nil {
			return nil, err
		}
	}
	s, err := h.cfg.Sessions.UpdateInfo(ctx, req.Id, req.Body.Title, req.Body.Archived)
	if err != nil {
		return nil, err
	}
	out, err := h.session(ctx, s)
	if err != nil {
		return nil, err
	}
	return UpdateSession200JSONResponse(out), nil
}

func (h *handlers) CloseSession(ctx context.Context, req CloseSessionRequestObject) (CloseSessionResponseObject, error) {
	s, err := h.cfg.Sessions.Close(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	out, err := h.session(ctx, s)
	if err != nil {
		return nil, err
	}
	return CloseSession200JSONResponse(out), nil
}

func (h *handlers) PromptSession(ctx context.Context, req PromptSessionRequestObject) (PromptSessionResponseObject, error) {
	raw, err := promptJSON(req.Body.Prompt)
	if err != nil {
		return nil, err
	}
	in := sessions.PromptInput{Prompt: raw, PromptID: deref(req.Body.PromptId), Multitask: sessions.MultitaskEnqueue}
	if req.Body.Multitask != nil {
		in.Multitask = string(*req.Body.Multitask)
	}
	res, err := h.cfg.Sessions.Prompt(ctx, req.Id, in)
	if err != nil {
		return nil, err
	}
	return PromptSession202JSONResponse{PromptId: res.Turn.PromptID, State: PromptAcceptedState(res.Turn.State),
		EventEpoch: res.EventEpoch, Cursor: res.Cursor}, nil
}

func (h *handlers) CancelSession(ctx context.Context, req CancelSessionRequestObject) (CancelSessionResponseObject, error) {
	keep := req.Params.KeepQueue != nil && *req.Params.KeepQueue
	res, err := h.cfg.Sessions.Cancel(ctx, req.Id, sessions.CancelInput{KeepQueue: keep})
	if err != nil {
		return nil, err
	}
	out := CancelResult{Cancelled: res.Cancelled}
	if res.PromptID != "" {
		out.PromptId = &res.PromptID
	}
	if len(res.Dequeued) > 0 {
		out.Dequeued = &res.Dequeued
	}
	return CancelSession200JSONResponse(out), nil
}

func (h *handlers) AnswerPermission(ctx context.Context, req AnswerPermissionRequestObject) (AnswerPermissionResponseObject, error) {
	b := req.Body
	var out acp.PermissionOutcome
	switch {
	case b.OptionId != nil && b.Outcome != nil:
		return nil, errcode.New(errcode.ValidationFailed, "give either optionId or outcome, not both")
	case b.OptionId != nil:
		out.OptionID = *b.OptionId
	case b.Outcome != nil:
		out.Cancelled = true
	default:
		return nil, errcode.New(errcode.ValidationFailed, `body must have "optionId" or "outcome": "cancelled"`)
	}
	p, err := h.cfg.Sessions.AnswerPermission(ctx, req.Id, req.RequestId, out)
	if err != nil {
		return nil, err
	}
	return AnswerPermission200JSONResponse(permissionOf(p)), nil
}

func (h *handlers) GetTranscript(ctx context.Context, req GetTranscriptRequestObject) (GetTranscriptResponseObject, error) {
	if req.Params.PageToken != nil && req.Params.Limit == nil {
		return nil, errcode.New(errcode.InvalidRequest, "pageToken needs limit")
	}
	t, err := h.transcript(ctx, req.Id, deref(req.Params.Limit), deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	return GetTranscript200JSONResponse(t), nil
}

func (h *handlers) GetTurn(ctx context.Context, req GetTurnRequestObject) (GetTurnResponseObject, error) {
	if _, err := h.cfg.Store.GetSession(ctx, req.Id); err != nil {
		return nil, err
	}
	t, err := h.cfg.Store.GetTurn(ctx, req.Id, req.PromptId)
	if err != nil {
		return nil, err
	}
	return GetTurn200JSONResponse(turnOf(t)), nil
}

func (h *handlers) WithdrawTurn(ctx context.Context, req WithdrawTurnRequestObject) (WithdrawTurnResponseObject, error) {
	t, err := h.cfg.Sessions.Withdraw(ctx, req.Id, req.PromptId)
	if err != nil {
		return nil, err
	}
	return WithdrawTurn200JSONResponse(turnOf(t)), nil
}

// transcript reads the session's snapshot in one read transaction, with
// the event head it is consistent with: rows and events commit together, so
// streaming from the returned cursor continues exactly where it ends. With
// limit > 0 it is one page of turns (store.TranscriptPage), else all.
func (h *handlers) transcript(ctx context.Context, id string, limit int, pageToken string) (Transcript, error) {
	var (
		s     session.Session
		page  store.TranscriptPage
		perms []session.Permission
		head  store.EventBounds
	)
	err := h.cfg.Store.Snapshot(ctx, func(r *store.Store) error {
		var err error
		if s, err = r.GetSession(ctx, id); err != nil {
			return err
		}
		if limit > 0 {
			page, err = r.TranscriptPage(ctx, id, limit, pageToken)
		} else {
			page, err = wholeTranscript(ctx, r, id)
		}
		if err != nil {
			return err
		}
		if perms, err = r.ListPermissions(ctx, id, session.PermissionPending); err != nil {
			return err
		}
		head, err = r.SessionEventBounds(ctx, id)
		return err
	})
	if err != nil {
		return Transcript{}, err
	}
	turns, msgs, calls := page.Turns, page.Messages, page.ToolCalls
	out := Transcript{SessionId: id, EventEpoch: s.EventEpoch, Cursor: events.Cursor{Epoch: s.EventEpoch, N: head.Head}.String(),
		Turns: make([]Turn, 0, len(turns)), Messages: make([]Message, 0, len(msgs)), ToolCalls: make([]ToolCall, 0, len(calls)),
		PendingPermissions: make([]PermissionRequest, 0, len(perms))}
	for _, t := range turns {
		out.Turns = append(out.Turns, turnOf(t))
	}
	for _, m := range msgs {
		out.Messages = append(out.Messages, messageOf(m))
	}
	for _, c := range calls {
		out.ToolCalls = append(out.ToolCalls, toolCallOf(c))
	}
	for _, p := range perms {
		out.PendingPermissions = append(out.PendingPermissions, permissionOf(p))
	}
	if page.Next != "" {
		out.NextPageToken = &page.Next
	}
	if len(s.Plan) > 0 {
		var plan []PlanEntry
		if json.Unmarshal(s.Plan, &plan) == nil {
			out.Plan = &plan
		}
	}
	return out, nil
}

// wholeTranscript reads every turn, message and tool call of the session.
func wholeTranscript(ctx context.Context, r *store.Store, id string) (store.TranscriptPage, error) {
	var (
		p   store.TranscriptPage
		err error
	)
	if p.Turns, err = r.ListTurns(ctx, id); err != nil {
		return p, err
	}
	if p.Messages, err = r.ListMessages(ctx, id); err != nil {
		return p, err
	}
	p.ToolCalls, err = r.ListToolCalls(ctx, id)
	return p, err
}

func (h *handlers) session(ctx context.Context, s session.Session) (Session, error) {
	ex, err := h.cfg.Store.GetExecutor(ctx, s.ID)
	if err != nil && !errcode.Is(err, errcode.SessionNotFound) {
		return Session{}, err
	}
	one := []session.Session{s}
	if err := h.cfg.Store.LastActivity(ctx, one); err != nil {
		return Session{}, err
	}
	return sessionOf(one[0], ex), nil
}

func (h *handlers) ListExecutors(ctx context.Context, _ ListExecutorsRequestObject) (ListExecutorsResponseObject, error) {
	hosts, err := h.cfg.Sessions.ExecutorHosts(ctx)
	if err != nil {
		return nil, err
	}
	out := ExecutorHostList{Hosts: make([]ExecutorHost, 0, len(hosts))}
	for _, x := range hosts {
		out.Hosts = append(out.Hosts, executorHostOf(x))
	}
	return ListExecutors200JSONResponse(out), nil
}
