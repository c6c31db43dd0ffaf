package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
)

func (h *handlers) GetSessionStatus(ctx context.Context, req GetSessionStatusRequestObject) (GetSessionStatusResponseObject, error) {
	st, err := h.cfg.Sessions.Status(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	out := sessionStatusOf(st)
	if r := h.cfg.Router; r != nil && r.Owns(req.Id) {
		node := r.NodeID()
		out.Node = &node
	}
	return GetSessionStatus200JSONResponse(out), nil
}

func (h *handlers) ResumeSession(ctx context.Context, req ResumeSessionRequestObject) (ResumeSessionResponseObject, error) {
	st, err := h.cfg.Sessions.Resume(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return ResumeSession200JSONResponse(sessionStatusOf(st)), nil
}

func (h *handlers) ExportHistory(ctx context.Context, req ExportHistoryRequestObject) (ExportHistoryResponseObject, error) {
	var (
		msgs  []session.Message
		calls []session.ToolCall
	)
	err := h.cfg.Store.Snapshot(ctx, func(r *store.Store) error {
		if _, err := r.GetSession(ctx, req.Id); err != nil {
			return err
		}
		var err error
		if msgs, err = r.ListMessages(ctx, req.Id); err != nil {
			return err
		}
		calls, err = r.ListToolCalls(ctx, req.Id)
		return err
	})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range session.History(msgs, calls) {
		if err := enc.Encode(e); err != nil {
			return nil, err
		}
	}
	return ExportHistory200ApplicationxNdjsonResponse{Body: &buf, ContentLength: int64(buf.Len())}, nil
}

func sessionStatusOf(st sessions.Status) SessionStatus {
	s, ex := st.Session, st.Executor
	out := SessionStatus{SessionId: s.ID, TaskId: s.TaskID, State: SessionState(s.State), AgentProfileId: s.AgentProfileID,
		IsAgentRunning: st.IsAgentRunning, IsResumable: st.IsResumable, NeedsResume: st.NeedsResume,
		ResumeReason: st.ResumeReason, ExecutorStatus: ExecutorStatus(ex.Status), Runtime: SessionStatusRuntime(ex.Runtime),
		AgentExecutionId: ptrIf(ex.AgentExecutionID), WorktreePath: ptrIf(ex.WorktreePath), WorktreeBranch: ptrIf(ex.WorktreeBranch),
		ErrorMessage: ptrIf(ex.ErrorMessage), ContextLost: s.ContextLost, HistoryContextInjection: ptrIf(st.HistoryInjection),
		Sandbox: sandboxViewOut(st.Sandbox), Usage: usageOf(s.Usage), Budget: budgetOut(s.Budget)}
	if limit, _ := s.Budget.Reached(s.Usage); limit != "" {
		over := SessionStatusOverBudget(limit)
		out.OverBudget = &over
	}
	if out.ErrorMessage == nil && st.LastError != "" {
		out.ErrorMessage = &st.LastError
	}
	out.ErrorCode = ptrIf(st.LastErrorCode)
	if c := ex.ShownErrorCode(); c != "" {
		out.ErrorCode = &c
	}
	out.Workspace = workspaceAvailabilityOf(st.Workspace)
	return out
}

func workspaceAvailabilityOf(w runtimes.WorkspaceAvailability) *WorkspaceAvailability {
	out := &WorkspaceAvailability{Status: WorkspaceAvailabilityStatus(w.Status)}
	if w.Err != nil {
		c := string(errcode.CodeOf(w.Err))
		msg := "the executor cannot serve the workspace"
		var de *errcode.Error
		if errors.As(w.Err, &de) {
			msg = de.Message
		}
		out.ErrorCode, out.ErrorMessage = &c, &msg
	}
	return out
}

func (h *handlers) GetSessionContext(ctx context.Context, req GetSessionContextRequestObject) (GetSessionContextResponseObject, error) {
	c, err := h.cfg.Sessions.Context(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return GetSessionContext200JSONResponse(sessionContextOf(c)), nil
}

func sessionContextOf(c sessions.SessionContext) SessionContext {
	out := SessionContext{SessionId: c.Session.ID, TaskId: c.Session.TaskID, Cwd: c.Session.Cwd, State: SessionState(c.Session.State),
		Recovery: recoveryOf(c.Recovery), EventEpoch: c.Session.EventEpoch, Cursor: c.Cursor.String()}
	out.Agent.ProfileId, out.Agent.Available = c.Session.AgentProfileID, c.AgentAvailable
	if c.Profile.Capabilities != nil {
		out.Agent.Capabilities = agentOf(c.Profile).Capabilities
	}
	out.AvailableCommands = listOf[AvailableCommand](c.Commands)
	out.ConfigOptions = objects(c.ConfigOptions)
	var mode string
	if json.Unmarshal(c.Mode, &mode) == nil && mode != "" {
		out.CurrentMode = &mode
	}
	out.AvailableModes = listOf[SessionMode](acp.AvailableModes(c.Modes))
	choices := OptionChoices{Mode: ptrIf(c.Session.ModeChoice), Config: map[string]any{}}
	_ = json.Unmarshal(c.Session.ConfigChoices, &choices.Config)
	out.Choices = &choices
	return out
}

func (h *handlers) ContinueSession(ctx context.Context, req ContinueSessionRequestObject) (ContinueSessionResponseObject, error) {
	var promptID string
	if req.Body != nil && req.Body.PromptId != nil {
		promptID = *req.Body.PromptId
	}
	res, err := h.cfg.Sessions.Continue(ctx, req.Id, promptID)
	if err != nil {
		return nil, err
	}
	state := ContinueAcceptedState(res.Turn.State)
	return ContinueSession202JSONResponse{Accepted: true, PromptId: res.Turn.PromptID, State: &state,
		Interruption: recoveryOf(res.Interruption), EventEpoch: res.EventEpoch, Cursor: res.Cursor}, nil
}

func recoveryOf(s session.Recovery) RecoverySummary {
	out := RecoverySummary{Kind: RecoverySummaryKind(s.Kind), CanContinue: s.CanContinue, Reason: ptrIf(s.Reason),
		PromptId: ptrIf(s.PromptID), InterruptReason: ptrIf(s.InterruptReason), PromptDelivered: ptrIf(s.PromptDelivered), Notice: s.Notice}
	out.DanglingToolCalls = make([]struct {
		Id    string `json:"id"`
		Kind  string `json:"kind"`
		Title string `json:"title"`
	}, 0, len(s.DanglingToolCalls))
	for _, d := range s.DanglingToolCalls {
		out.DanglingToolCalls = append(out.DanglingToolCalls, struct {
			Id    string `json:"id"`
			Kind  string `json:"kind"`
			Title string `json:"title"`
		}{d.ID, d.Kind, d.Title})
	}
	if len(s.Queued) > 0 {
		queued := append([]string(nil), s.Queued...)
		out.QueuedPromptIds = &queued
	}
	if s.QueueHeld {
		out.QueueHeld = &s.QueueHeld
	}
	if s.Report != nil {
		out.Report = reportOf(*s.Report)
	}
	return out
}

// reportOf is a recovery report in the contract's shape.
func reportOf(r session.TurnReport) *RecoveryReport {
	out := &RecoveryReport{ToolCalls: make([]ReportToolCall, 0, len(r.ToolCalls)), RunningCommands: append([]string{}, r.RunningCommands...)}
	for _, c := range r.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ReportToolCall{Id: c.ID, Title: c.Title, Kind: c.Kind, Status: c.Status,
			Finished: c.Finished, Output: ptrIf(c.Output)})
	}
	if w := r.Workspace; w != nil {
		ws := &WorkspaceChanges{Files: make([]ChangedFile, 0, len(w.Files)), HeadMoved: w.HeadMoved,
			HeadBefore: ptrIf(w.HeadBefore), HeadAfter: ptrIf(w.HeadAfter), ErrorCode: ptrIf(w.ErrorCode), Error: ptrIf(w.Error)}
		for _, f := range w.Files {
			ws.Files = append(ws.Files, ChangedFile{Path: f.Path, OldPath: ptrIf(f.OldPath), Status: ChangedFileStatus(f.Status)})
		}
		out.Workspace = ws
	}
	return out
}
