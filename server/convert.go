package server

import (
	"encoding/json"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
)

// Conversions between core records and generated API types. Generated
// types never cross into internal/; these named functions are the border.

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptrIf[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func validSessionState(s session.SessionState) bool {
	switch s {
	case session.SessionCreated, session.SessionStarting, session.SessionRunning, session.SessionWaitingForInput,
		session.SessionCompleted, session.SessionFailed, session.SessionCancelled:
		return true
	}
	return false
}

// promptJSON re-encodes validated content blocks for the agent.
func promptJSON(p Prompt) (json.RawMessage, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, errcode.Wrap(errcode.ValidationFailed, err, "prompt cannot be encoded")
	}
	return b, nil
}

func taskOf(t session.Task) Task {
	return Task{Id: t.ID, Title: t.Title, Workspace: ptrIf(t.Workspace), State: TaskState(t.State),
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func agentOf(p agents.Profile) AgentProfile {
	out := AgentProfile{Id: p.ID, DisplayName: p.DisplayName, Source: AgentProfileSource(p.Source),
		Command: ptrIf(p.Command), Available: p.Available, UnavailableReason: ptrIf(p.UnavailableReason),
		NativeSessionResume: p.NativeSessionResume, HistoryContextInjection: p.HistoryContextInjection,
		ProbedAt: p.ProbedAt, AuthMethod: ptrIf(p.AuthMethod), Sandbox: policyOut(p.Sandbox), Budget: budgetOut(p.Budget)}
	if c := p.Capabilities; c != nil {
		caps := AgentCapabilities{LoadSession: c.LoadSession, Resume: c.Resume,
			ProtocolVersion: ptrIf(c.ProtocolVersion), AgentName: ptrIf(c.AgentName), AgentVersion: ptrIf(c.AgentVersion)}
		caps.PromptCapabilities.Image = c.Image
		caps.PromptCapabilities.Audio = c.Audio
		caps.PromptCapabilities.EmbeddedContext = c.EmbeddedContext
		caps.AuthMethods = authMethodsOf(c.AuthMethods, p.Command)
		out.Capabilities = &caps
	}
	out.Credentials = credentialsOf(p)
	return out
}

// authMethodsOf is the announced auth methods with the daemon's hints for
// the profile's command; nil for none.
func authMethodsOf(ms []acp.AuthMethod, command string) *[]AuthMethod {
	if len(ms) == 0 {
		return nil
	}
	out := make([]AuthMethod, 0, len(ms))
	for _, m := range ms {
		out = append(out, authMethodOf(m, command))
	}
	return &out
}

// credentialsOf is what was last seen of the profile's credentials, with
// the methods its agent announced when it asked for them; nil when
// nothing was seen.
func credentialsOf(p agents.Profile) *AgentCredentials {
	c := p.Credentials
	if c == nil {
		return nil
	}
	out := &AgentCredentials{Status: AgentCredentialsStatus(c.Status), Stage: AgentCredentialsStage(c.Stage),
		Message: ptrIf(c.Message), SessionId: ptrIf(c.SessionID), ObservedAt: c.ObservedAt}
	if c.Status == agents.CredentialsRequired && p.Capabilities != nil {
		out.AuthMethods = authMethodsOf(p.Capabilities.AuthMethods, p.Command)
	}
	return out
}

// authMethodOf is one announced auth method with the daemon's hint for the
// profile's command.
func authMethodOf(m acp.AuthMethod, command string) AuthMethod {
	out := AuthMethod{Id: m.ID, Name: m.Name, Description: ptrIf(m.Description), Hint: m.Hint(command)}
	if m.Type != "" {
		t := AuthMethodType(m.Type)
		out.Type = &t
	}
	if len(m.Vars) > 0 {
		out.Vars = &m.Vars
	}
	if len(m.Args) > 0 {
		out.Args = &m.Args
	}
	if len(m.Meta) > 0 {
		out.UnderscoreMeta = &m.Meta
	}
	return out
}

func sessionOf(s session.Session, ex session.Executor) Session {
	out := Session{Id: s.ID, TaskId: s.TaskID, AgentProfileId: s.AgentProfileID, Cwd: s.Cwd,
		Title: ptrIf(s.Title), State: SessionState(s.State), EventEpoch: s.EventEpoch,
		ContextLost: ptrIf(s.ContextLost), AutoContinue: ptrIf(s.AutoContinue), Sandbox: storedPolicyOut(s.Sandbox),
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, ClosedAt: s.ClosedAt,
		Archived: ptrIf(s.Archived), LastActivityAt: s.LastActivityAt,
		ForkedFrom: forkOriginOf(s.ForkedFrom), LastRewind: rewindOf(s.LastRewind), Usage: usageOf(s.Usage), Budget: budgetOut(s.Budget)}
	if s.TitleSource != "" {
		src := TitleSource(s.TitleSource)
		out.TitleSource = &src
	}
	if ex.SessionID != "" {
		out.Executor = &Executor{Runtime: ExecutorRuntime(ex.Runtime), Status: ExecutorStatus(ex.Status), Host: ptrIf(ex.Host),
			Pid: ptrIf(ex.PID), AgentExecutionId: ptrIf(ex.AgentExecutionID), ResumeToken: ptrIf(ex.ResumeToken),
			ErrorMessage: ptrIf(ex.ErrorMessage), ErrorCode: ptrIf(ex.ShownErrorCode()), ExitCode: ex.ExitCode, ExitSignal: ptrIf(ex.ExitSignal),
			LastSeenAt: ex.LastSeenAt}
		if ex.WorktreeState != "" {
			out.Executor.Worktree = &SessionWorktree{Repository: ex.WorktreeRepo, Path: ex.WorktreePath, Branch: ex.WorktreeBranch,
				State: SessionWorktreeState(ex.WorktreeState)}
		}
	}
	return out
}

func turnOf(t session.Turn) Turn {
	out := Turn{PromptId: t.PromptID, Seq: ptrIf(t.Seq), Kind: TurnKind(t.Kind), State: TurnState(t.State),
		StopReason: ptrIf(t.StopReason), InterruptReason: ptrIf(t.InterruptReason), ExitCode: t.ExitCode,
		ExitSignal: ptrIf(t.ExitSignal), CancelRequested: ptrIf(t.CancelRequested),
		ContinuesPromptId: ptrIf(t.ContinuesPromptID), Rewound: ptrIf(t.Rewound), CreatedAt: t.CreatedAt, StartedAt: t.StartedAt, DeliveredAt: t.DeliveredAt, EndedAt: t.EndedAt,
		Usage: usageOf(t.Usage), StalledAt: t.StalledAt}
	if t.ErrorCode != "" || t.ErrorMessage != "" {
		out.Error = &TurnError{Code: t.ErrorCode, Message: t.ErrorMessage}
	}
	var blocks []ContentBlock
	if len(t.Prompt) > 0 && json.Unmarshal(t.Prompt, &blocks) == nil {
		out.Prompt = &blocks
	}
	return out
}

func messageOf(m session.Message) Message {
	out := Message{Id: m.ID, PromptId: ptrIf(m.PromptID), Role: MessageRole(m.Role), Text: m.Text, CreatedAt: m.CreatedAt}
	out.Content = objects(m.Content)
	return out
}

func toolCallOf(c session.ToolCall) ToolCall {
	out := ToolCall{Id: c.ToolCallID, PromptId: ptrIf(c.PromptID), Title: c.Title, Kind: ptrIf(c.Kind),
		Status: ToolCallStatus(c.Status), Interrupted: c.Interrupted,
		Content: objects(c.Content), Locations: objects(c.Locations)}
	if !c.CreatedAt.IsZero() {
		out.CreatedAt = &c.CreatedAt
	}
	if !c.UpdatedAt.IsZero() {
		out.UpdatedAt = &c.UpdatedAt
	}
	if len(c.RawInput) > 0 {
		out.RawInput = json.RawMessage(c.RawInput)
	}
	if len(c.RawOutput) > 0 {
		out.RawOutput = json.RawMessage(c.RawOutput)
	}
	if out.Status == "" {
		out.Status = ToolCallStatus(session.ToolPending)
	}
	return out
}

func permissionOf(p session.Permission) PermissionRequest {
	out := PermissionRequest{Id: p.ID, SessionId: p.SessionID, PromptId: ptrIf(p.PromptID), ToolCallId: ptrIf(p.ToolCallID),
		Title: ptrIf(p.Title), State: PermissionRequestState(p.State), SelectedOptionId: ptrIf(p.SelectedOptionID),
		CreatedAt: p.CreatedAt, ResolvedAt: p.ResolvedAt, Options: []PermissionOption{}}
	if len(p.Options) > 0 {
		_ = json.Unmarshal(p.Options, &out.Options)
	}
	return out
}

// objects decodes a stored JSON array of objects; anything else is dropped.
func objects(raw json.RawMessage) *[]map[string]any { return listOf[map[string]any](raw) }

// listOf decodes a JSON array the agent sent; nil when absent or not one.
func listOf[T any](raw json.RawMessage) *[]T {
	if len(raw) == 0 {
		return nil
	}
	var out []T
	if json.Unmarshal(raw, &out) != nil || out == nil {
		return nil
	}
	return &out
}

func executorHostOf(x runtimes.ExecutorHost) ExecutorHost {
	out := ExecutorHost{Name: x.Name, Runtime: ExecutorHostRuntime(x.Runtime), Address: ptrIf(x.Address),
		State: ExecutorHostState(x.State), ProtocolVersion: ptrIf(x.ProtocolVersion), HostId: ptrIf(x.HostID),
		HostVersion: ptrIf(x.HostVersion), LastContactAt: x.LastContactAt, ErrorCode: ptrIf(x.ErrorCode),
		ErrorMessage: ptrIf(x.ErrorMessage), StartedAt: x.StartedAt, Sessions: make([]ExecutorHostSession, 0, len(x.Sessions))}
	if x.Sessions != nil {
		var records, bytes int64
		for _, s := range x.Sessions {
			out.Sessions = append(out.Sessions, ExecutorHostSession{SessionId: s.SessionID, ProfileId: s.ProfileID,
				Pid: ptrIf(s.PID), Running: s.Running, Exited: s.Exited,
				OutboxRecords: int64(s.OutboxRecords), OutboxBytes: s.OutboxBytes})
			records += int64(s.OutboxRecords)
			bytes += s.OutboxBytes
		}
		out.OutboxRecords, out.OutboxBytes = &records, &bytes
	}
	return out
}

// budgetOut is a budget in the contract's terms, nil when it limits
// nothing.
func budgetOut(b session.Budget) *Budget {
	if b.IsZero() {
		return nil
	}
	out := &Budget{MaxTokens: ptrIf(b.MaxTokens), MaxTurnSeconds: ptrIf(b.MaxTurnSeconds), StallSeconds: ptrIf(b.StallSeconds)}
	if c := b.MaxCost; c != nil {
		out.MaxCost = &Cost{Amount: c.Amount, Currency: c.Currency}
	}
	return out
}

// budgetIn is a budget the client sent (nil: none, the zero budget).
func budgetIn(b *Budget) session.Budget {
	if b == nil {
		return session.Budget{}
	}
	out := session.Budget{MaxTokens: deref(b.MaxTokens), MaxTurnSeconds: deref(b.MaxTurnSeconds), StallSeconds: deref(b.StallSeconds)}
	if c := b.MaxCost; c != nil {
		out.MaxCost = &session.Cost{Amount: c.Amount, Currency: c.Currency}
	}
	return out
}

// usageOf is a usage in the contract's terms, nil when nothing was said.
func usageOf(u session.Usage) *Usage {
	if u.IsZero() {
		return nil
	}
	out := &Usage{InputTokens: ptrIf(u.InputTokens), OutputTokens: ptrIf(u.OutputTokens), CachedReadTokens: ptrIf(u.CachedReadTokens),
		CachedWriteTokens: ptrIf(u.CachedWriteTokens), TotalTokens: ptrIf(u.TotalTokens), ContextUsed: ptrIf(u.ContextUsed), ContextSize: ptrIf(u.ContextSize)}
	if u.Cost != nil {
		out.Cost = &Cost{Amount: u.Cost.Amount, Currency: u.Cost.Currency}
	}
	return out
}
