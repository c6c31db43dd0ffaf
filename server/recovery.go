package server

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/tether/tether/internal/recovery"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
)

func (h *handlers) GetSessionStatus(ctx context.Context, req GetSessionStatusRequestObject) (GetSessionStatusResponseObject, error) {
	st, err := h.cfg.Sessions.Status(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return GetSessionStatus200JSONResponse(sessionStatusOf(st)), nil
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
		msgs  []store.Message
		calls []store.ToolCall
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
	for _, e := range recovery.History(msgs, calls) {
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
		ErrorMessage: ptrIf(ex.ErrorMessage), ContextLost: s.ContextLost, HistoryContextInjection: ptrIf(st.HistoryInjection)}
	if out.ErrorMessage == nil && st.LastError != "" {
		out.ErrorMessage = &st.LastError
	}
	return out
}
