package demoagent

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// UnstableForkSession answers the unstable session/fork as
// claude-agent-acp does: a new session, in the request's directory, whose
// conversation is a copy of the stored session's (its history, to be
// replayed by a later load); the stored session is left as it was. The
// forked session's first turn opens with "[forked with N history
// entries] ", so that a test sees the agent got the context natively.
func (a *agent) UnstableForkSession(_ context.Context, p acp.UnstableForkSessionRequest) (acp.UnstableForkSessionResponse, error) {
	if a.cfg.noFork {
		return acp.UnstableForkSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionFork)
	}
	src, err := a.storedSession(p.SessionId, p.Cwd)
	if err != nil {
		return acp.UnstableForkSessionResponse{}, err
	}
	servers := json.RawMessage("[]")
	if p.McpServers != nil {
		if servers, err = json.Marshal(p.McpServers); err != nil {
			return acp.UnstableForkSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
		}
	}
	src.mu.Lock()
	history, next, o := slices.Clone(src.file.History), src.file.NextToolCall, src.options
	src.mu.Unlock()
	id := newSessionID()
	f := &sessionFile{ID: id, Cwd: p.Cwd, McpServers: servers, AdditionalDirectories: p.AdditionalDirectories,
		History: history, NextToolCall: next, CreatedAt: time.Now().UTC(), ForkedFrom: string(p.SessionId), Forked: len(history)}
	if err := a.store.rewrite(f); err != nil {
		return acp.UnstableForkSessionResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	a.mu.Lock()
	a.sessions[id] = &session{file: f, options: o}
	a.mu.Unlock()
	a.wire.afterLine(`"sessionId":"`+id+`"`, func() { a.announceCommands(acp.SessionId(id)) })
	resp := acp.UnstableForkSessionResponse{SessionId: acp.SessionId(id), Modes: modeState(o)}
	// The unstable answer has a union of its own for the same options.
	if b, err := json.Marshal(configOptions(o)); err == nil {
		_ = json.Unmarshal(b, &resp.ConfigOptions)
	}
	return resp, nil
}

// forkedFirstTurn is how many history entries the session was forked
// with when the turn about to run is its first since the fork, else 0.
func (s *session) forkedFirstTurn() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file.Forked > 0 && len(s.file.History) == s.file.Forked {
		return s.file.Forked
	}
	return 0
}
