package store

import (
	"encoding/json"
	"fmt"

	"github.com/tether/tether/internal/session"
)

// This file holds the gorm row structs (the only types gorm ever sees) and the
// named conversions between them and the exported records. Columns are named
// explicitly so that renaming a Go field can never silently rename a column.

// tasks ------------------------------------------------------------------------

type taskRow struct {
	ID        string `gorm:"column:id;primaryKey"`
	Title     string `gorm:"column:title"`
	Workspace string `gorm:"column:workspace"`
	State     string `gorm:"column:state"`
	CreatedAt dbTime `gorm:"column:created_at"`
	UpdatedAt dbTime `gorm:"column:updated_at"`
}

func (taskRow) TableName() string { return "tasks" }

func fromTask(t session.Task) taskRow {
	return taskRow{
		ID: t.ID, Title: t.Title, Workspace: t.Workspace, State: string(t.State),
		CreatedAt: toDBTime(t.CreatedAt), UpdatedAt: toDBTime(t.UpdatedAt),
	}
}

func toTask(r taskRow) session.Task {
	return session.Task{
		ID: r.ID, Title: r.Title, Workspace: r.Workspace, State: session.TaskState(r.State),
		CreatedAt: r.CreatedAt.t, UpdatedAt: r.UpdatedAt.t,
	}
}

// sessions -----------------------------------------------------------------------

type sessionRow struct {
	ID                    string  `gorm:"column:id;primaryKey"`
	TaskID                string  `gorm:"column:task_id"`
	AgentProfileID        string  `gorm:"column:agent_profile_id"`
	Cwd                   string  `gorm:"column:cwd"`
	Title                 string  `gorm:"column:title"`
	TitleSource           string  `gorm:"column:title_source"`
	Archived              bool    `gorm:"column:archived"`
	State                 string  `gorm:"column:state"`
	EventEpoch            string  `gorm:"column:event_epoch"`
	MCPServers            string  `gorm:"column:mcp_servers"`
	AdditionalDirectories string  `gorm:"column:additional_directories"`
	Plan                  *string `gorm:"column:plan"`
	Prompted              bool    `gorm:"column:prompted"`
	ContextLost           bool    `gorm:"column:context_lost"`
	InjectContext         bool    `gorm:"column:inject_context"`
	ModeChoice            string  `gorm:"column:mode_choice"`
	ConfigChoices         string  `gorm:"column:config_choices"`
	QueueHeld             bool    `gorm:"column:queue_held"`
	AutoContinue          bool    `gorm:"column:auto_continue"`
	Sandbox               *string `gorm:"column:sandbox"`
	LastRewind            *string `gorm:"column:last_rewind"`
	Usage                 *string `gorm:"column:usage"`
	Budget                *string `gorm:"column:budget"`
	ForkedFromSession     string  `gorm:"column:forked_from_session"`
	ForkedFromPrompt      string  `gorm:"column:forked_from_prompt"`
	ForkHandoff           bool    `gorm:"column:fork_handoff"`
	CreatedAt             dbTime  `gorm:"column:created_at"`
	UpdatedAt             dbTime  `gorm:"column:updated_at"`
	ClosedAt              *dbTime `gorm:"column:closed_at"`
}

func (sessionRow) TableName() string { return "sessions" }

func fromSession(s session.Session) sessionRow {
	r := sessionRow{
		ID: s.ID, TaskID: s.TaskID, AgentProfileID: s.AgentProfileID, Cwd: s.Cwd,
		Title: s.Title, TitleSource: string(s.TitleSource), Archived: s.Archived, State: string(s.State), EventEpoch: s.EventEpoch,
		MCPServers:            string(s.MCPServers),
		AdditionalDirectories: stringsJSON(s.AdditionalDirectories),
		Plan:                  jsonText(s.Plan),
		Prompted:              s.Prompted, ContextLost: s.ContextLost, InjectContext: s.InjectContext, QueueHeld: s.QueueHeld, AutoContinue: s.AutoContinue,
		ModeChoice: s.ModeChoice, ConfigChoices: objectText(s.ConfigChoices), Sandbox: jsonText(s.Sandbox),
		LastRewind: rewindText(s.LastRewind), Usage: usageText(s.Usage), Budget: budgetText(s.Budget),
		CreatedAt: toDBTime(s.CreatedAt), UpdatedAt: toDBTime(s.UpdatedAt),
		ClosedAt: toDBTimePtr(s.ClosedAt),
	}
	if o := s.ForkedFrom; o != nil {
		r.ForkedFromSession, r.ForkedFromPrompt, r.ForkHandoff = o.SessionID, o.PromptID, o.Handoff
	}
	return r
}

// usageText is a session's or turn's usage as its column holds it (NULL
// for none).
func usageText(u session.Usage) *string {
	if u.IsZero() {
		return nil
	}
	b, _ := json.Marshal(u)
	t := string(b)
	return &t
}

// usageOf reads a usage column.
func usageOf(t *string) (session.Usage, error) {
	var u session.Usage
	if t == nil {
		return u, nil
	}
	err := json.Unmarshal([]byte(*t), &u)
	return u, err
}

// budgetText is a session's budget as its column holds it (NULL for
// none).
func budgetText(b session.Budget) *string {
	if b.IsZero() {
		return nil
	}
	j, _ := json.Marshal(b)
	t := string(j)
	return &t
}

// rewindText is a session's last rewind as its column holds it.
func rewindText(r *session.Rewind) *string {
	if r == nil {
		return nil
	}
	b, _ := json.Marshal(r)
	t := string(b)
	return &t
}

func toSession(r sessionRow) (session.Session, error) {
	dirs, err := fromStringsJSON(r.AdditionalDirectories, "sessions.additional_directories")
	if err != nil {
		return session.Session{}, err
	}
	var rewind *session.Rewind
	if r.LastRewind != nil {
		rewind = &session.Rewind{}
		if err := json.Unmarshal([]byte(*r.LastRewind), rewind); err != nil {
			return session.Session{}, fmt.Errorf("store: sessions.last_rewind of %s: %w", r.ID, err)
		}
	}
	var origin *session.ForkOrigin
	if r.ForkedFromSession != "" {
		origin = &session.ForkOrigin{SessionID: r.ForkedFromSession, PromptID: r.ForkedFromPrompt, Handoff: r.ForkHandoff}
	}
	usage, err := usageOf(r.Usage)
	if err != nil {
		return session.Session{}, fmt.Errorf("store: sessions.usage of %s: %w", r.ID, err)
	}
	var budget session.Budget
	if r.Budget != nil {
		if err := json.Unmarshal([]byte(*r.Budget), &budget); err != nil {
			return session.Session{}, fmt.Errorf("store: sessions.budget of %s: %w", r.ID, err)
		}
	}
	return session.Session{
		LastRewind: rewind, ForkedFrom: origin, Usage: usage, Budget: budget,
		ID: r.ID, TaskID: r.TaskID, AgentProfileID: r.AgentProfileID, Cwd: r.Cwd,
		Title: r.Title, TitleSource: session.TitleSource(r.TitleSource), Archived: r.Archived,
		State: session.SessionState(r.State), EventEpoch: r.EventEpoch,
		MCPServers:            json.RawMessage(r.MCPServers),
		AdditionalDirectories: dirs,
		Plan:                  fromJSONText(r.Plan),
		Prompted:              r.Prompted, ContextLost: r.ContextLost, InjectContext: r.InjectContext, QueueHeld: r.QueueHeld, AutoContinue: r.AutoContinue,
		ModeChoice: r.ModeChoice, ConfigChoices: json.RawMessage(objectText(json.RawMessage(r.ConfigChoices))),
		Sandbox:   fromJSONText(r.Sandbox),
		CreatedAt: r.CreatedAt.t, UpdatedAt: r.UpdatedAt.t,
		ClosedAt: fromDBTimePtr(r.ClosedAt),
	}, nil
}

func toSessions(rows []sessionRow) ([]session.Session, error) {
	out := make([]session.Session, 0, len(rows))
	for _, r := range rows {
		s, err := toSession(r)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// executors ----------------------------------------------------------------------

type executorRow struct {
	SessionID             string  `gorm:"column:session_id;primaryKey"`
	Runtime               string  `gorm:"column:runtime"`
	Status                string  `gorm:"column:status"`
	AgentExecutionID      string  `gorm:"column:agent_execution_id"`
	PID                   int     `gorm:"column:pid"`
	Host                  string  `gorm:"column:host"`
	HostOffset            uint64  `gorm:"column:host_offset"`
	HostOffsetBase        uint64  `gorm:"column:host_offset_base"`
	ResumeToken           string  `gorm:"column:resume_token"`
	SupportsSessionResume bool    `gorm:"column:supports_session_resume"`
	SupportsLoad          bool    `gorm:"column:supports_load"`
	SupportsWorkspaceOnly bool    `gorm:"column:supports_workspace_only"`
	WorktreePath          string  `gorm:"column:worktree_path"`
	WorktreeBranch        string  `gorm:"column:worktree_branch"`
	WorktreeRepo          string  `gorm:"column:worktree_repo"`
	WorktreeState         string  `gorm:"column:worktree_state"`
	LastSeenAt            *dbTime `gorm:"column:last_seen_at"`
	ErrorMessage          string  `gorm:"column:error_message"`
	ErrorCode             string  `gorm:"column:error_code"`
	ErrorProfile          string  `gorm:"column:error_profile"`
	ExitCode              *int    `gorm:"column:exit_code"`
	ExitSignal            string  `gorm:"column:exit_signal"`
	Sandbox               string  `gorm:"column:sandbox"`
	SandboxReason         string  `gorm:"column:sandbox_reason"`
	UpdatedAt             dbTime  `gorm:"column:updated_at"`
}

func (executorRow) TableName() string { return "executors_running" }

func fromExecutor(e session.Executor) executorRow {
	return executorRow{
		SessionID: e.SessionID, Runtime: string(e.Runtime), Status: string(e.Status),
		AgentExecutionID: e.AgentExecutionID, PID: e.PID, Host: e.Host, HostOffset: e.HostOffset,
		HostOffsetBase: e.HostOffsetBase, ResumeToken: e.ResumeToken,
		SupportsSessionResume: e.SupportsSessionResume, SupportsLoad: e.SupportsLoad,
		SupportsWorkspaceOnly: e.SupportsWorkspaceOnly,
		WorktreePath:          e.WorktreePath, WorktreeBranch: e.WorktreeBranch,
		WorktreeRepo: e.WorktreeRepo, WorktreeState: string(e.WorktreeState),
		LastSeenAt: toDBTimePtr(e.LastSeenAt), ErrorMessage: e.ErrorMessage,
		ErrorCode: e.ErrorCode, ErrorProfile: e.ErrorProfile,
		ExitCode: e.ExitCode, ExitSignal: e.ExitSignal, Sandbox: e.Sandbox, SandboxReason: e.SandboxReason,
		UpdatedAt: toDBTime(e.UpdatedAt),
	}
}

func toExecutor(r executorRow) session.Executor {
	return session.Executor{
		SessionID: r.SessionID, Runtime: session.Runtime(r.Runtime), Status: session.ExecutorStatus(r.Status),
		AgentExecutionID: r.AgentExecutionID, PID: r.PID, Host: r.Host, HostOffset: r.HostOffset,
		HostOffsetBase: r.HostOffsetBase, ResumeToken: r.ResumeToken,
		SupportsSessionResume: r.SupportsSessionResume, SupportsLoad: r.SupportsLoad,
		SupportsWorkspaceOnly: r.SupportsWorkspaceOnly,
		WorktreePath:          r.WorktreePath, WorktreeBranch: r.WorktreeBranch,
		WorktreeRepo: r.WorktreeRepo, WorktreeState: session.WorktreeState(r.WorktreeState),
		LastSeenAt: fromDBTimePtr(r.LastSeenAt), ErrorMessage: r.ErrorMessage,
		ErrorCode: r.ErrorCode, ErrorProfile: r.ErrorProfile,
		ExitCode: r.ExitCode, ExitSignal: r.ExitSignal, Sandbox: r.Sandbox, SandboxReason: r.SandboxReason,
		UpdatedAt: r.UpdatedAt.t,
	}
}

// turns --------------------------------------------------------------------------

type turnRow struct {
	SessionID         string  `gorm:"column:session_id;primaryKey"`
	PromptID          string  `gorm:"column:prompt_id;primaryKey"`
	Seq               int64   `gorm:"column:seq"`
	Kind              string  `gorm:"column:kind"`
	State             string  `gorm:"column:state"`
	Prompt            *string `gorm:"column:prompt"`
	StopReason        string  `gorm:"column:stop_reason"`
	ErrorCode         string  `gorm:"column:error_code"`
	ErrorMessage      string  `gorm:"column:error_message"`
	InterruptReason   string  `gorm:"column:interrupt_reason"`
	ExitCode          *int    `gorm:"column:exit_code"`
	ExitSignal        string  `gorm:"column:exit_signal"`
	ContinuesPromptID string  `gorm:"column:continues_prompt_id"`
	CancelRequested   bool    `gorm:"column:cancel_requested"`
	ContextInjected   bool    `gorm:"column:context_injected"`
	Rewound           bool    `gorm:"column:rewound"`
	Interruption      *string `gorm:"column:interruption"`
	WorkspaceChanges  *string `gorm:"column:workspace_changes"`
	Usage             *string `gorm:"column:usage"`
	CreatedAt         dbTime  `gorm:"column:created_at"`
	StartedAt         *dbTime `gorm:"column:started_at"`
	DeliveredAt       *dbTime `gorm:"column:delivered_at"`
	EndedAt           *dbTime `gorm:"column:ended_at"`
	StalledAt         *dbTime `gorm:"column:stalled_at"`
}

func (turnRow) TableName() string { return "turns" }

func fromTurn(t session.Turn) turnRow {
	return turnRow{
		SessionID: t.SessionID, PromptID: t.PromptID, Seq: t.Seq,
		Kind: string(t.Kind), State: string(t.State), Prompt: jsonText(t.Prompt),
		StopReason: t.StopReason, ErrorCode: t.ErrorCode, ErrorMessage: t.ErrorMessage,
		InterruptReason: t.InterruptReason, ExitCode: t.ExitCode, ExitSignal: t.ExitSignal,
		ContinuesPromptID: t.ContinuesPromptID, CancelRequested: t.CancelRequested, ContextInjected: t.ContextInjected,
		Rewound: t.Rewound, Interruption: jsonText(t.Interruption), WorkspaceChanges: jsonText(t.WorkspaceChanges), Usage: usageText(t.Usage),
		CreatedAt: toDBTime(t.CreatedAt), StartedAt: toDBTimePtr(t.StartedAt),
		DeliveredAt: toDBTimePtr(t.DeliveredAt), EndedAt: toDBTimePtr(t.EndedAt), StalledAt: toDBTimePtr(t.StalledAt),
	}
}

func toTurn(r turnRow) session.Turn {
	usage, _ := usageOf(r.Usage) // JSON by its CHECK, written from session.Usage
	return session.Turn{
		Usage:     usage,
		SessionID: r.SessionID, PromptID: r.PromptID, Seq: r.Seq,
		Kind: session.TurnKind(r.Kind), State: session.TurnState(r.State), Prompt: fromJSONText(r.Prompt),
		StopReason: r.StopReason, ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage,
		InterruptReason: r.InterruptReason, ExitCode: r.ExitCode, ExitSignal: r.ExitSignal,
		ContinuesPromptID: r.ContinuesPromptID, CancelRequested: r.CancelRequested, ContextInjected: r.ContextInjected,
		Rewound: r.Rewound, Interruption: fromJSONText(r.Interruption), WorkspaceChanges: fromJSONText(r.WorkspaceChanges),
		CreatedAt: r.CreatedAt.t, StartedAt: fromDBTimePtr(r.StartedAt),
		DeliveredAt: fromDBTimePtr(r.DeliveredAt), EndedAt: fromDBTimePtr(r.EndedAt), StalledAt: fromDBTimePtr(r.StalledAt),
	}
}

// messages -----------------------------------------------------------------------

type messageRow struct {
	ID        int64   `gorm:"column:id;primaryKey;autoIncrement"`
	SessionID string  `gorm:"column:session_id"`
	PromptID  string  `gorm:"column:prompt_id"`
	Role      string  `gorm:"column:role"`
	Text      string  `gorm:"column:text"`
	Content   *string `gorm:"column:content"`
	CreatedAt dbTime  `gorm:"column:created_at"`
	UpdatedAt dbTime  `gorm:"column:updated_at"`
}

func (messageRow) TableName() string { return "messages" }

func fromMessage(m session.Message) messageRow {
	return messageRow{
		ID: m.ID, SessionID: m.SessionID, PromptID: m.PromptID, Role: string(m.Role),
		Text: m.Text, Content: jsonText(m.Content),
		CreatedAt: toDBTime(m.CreatedAt), UpdatedAt: toDBTime(m.UpdatedAt),
	}
}

func toMessage(r messageRow) session.Message {
	return session.Message{
		ID: r.ID, SessionID: r.SessionID, PromptID: r.PromptID, Role: session.MessageRole(r.Role),
		Text: r.Text, Content: fromJSONText(r.Content),
		CreatedAt: r.CreatedAt.t, UpdatedAt: r.UpdatedAt.t,
	}
}

// tool calls ---------------------------------------------------------------------

// toolCallRow is a tool call of a turn: its key is the session, the turn
// and the agent's id (session.ToolCallKey).
type toolCallRow struct {
	SessionID   string  `gorm:"column:session_id;primaryKey"`
	ToolCallID  string  `gorm:"column:tool_call_id;primaryKey"`
	PromptID    string  `gorm:"column:prompt_id;primaryKey"`
	Title       string  `gorm:"column:title"`
	Kind        string  `gorm:"column:kind"`
	Status      string  `gorm:"column:status"`
	Interrupted bool    `gorm:"column:interrupted"`
	Content     *string `gorm:"column:content"`
	Locations   *string `gorm:"column:locations"`
	RawInput    *string `gorm:"column:raw_input"`
	RawOutput   *string `gorm:"column:raw_output"`
	CreatedAt   dbTime  `gorm:"column:created_at"`
	UpdatedAt   dbTime  `gorm:"column:updated_at"`
}

func (toolCallRow) TableName() string { return "tool_calls" }

func fromToolCall(c session.ToolCall) toolCallRow {
	return toolCallRow{
		SessionID: c.SessionID, ToolCallID: c.ToolCallID, PromptID: c.PromptID,
		Title: c.Title, Kind: c.Kind, Status: string(c.Status), Interrupted: c.Interrupted,
		Content: jsonText(c.Content), Locations: jsonText(c.Locations),
		RawInput: jsonText(c.RawInput), RawOutput: jsonText(c.RawOutput),
		CreatedAt: toDBTime(c.CreatedAt), UpdatedAt: toDBTime(c.UpdatedAt),
	}
}

func toToolCall(r toolCallRow) session.ToolCall {
	return session.ToolCall{
		SessionID: r.SessionID, ToolCallID: r.ToolCallID, PromptID: r.PromptID,
		Title: r.Title, Kind: r.Kind, Status: session.ToolCallStatus(r.Status), Interrupted: r.Interrupted,
		Content: fromJSONText(r.Content), Locations: fromJSONText(r.Locations),
		RawInput: fromJSONText(r.RawInput), RawOutput: fromJSONText(r.RawOutput),
		CreatedAt: r.CreatedAt.t, UpdatedAt: r.UpdatedAt.t,
	}
}

// permissions --------------------------------------------------------------------

type permissionRow struct {
	ID               string  `gorm:"column:id;primaryKey"`
	SessionID        string  `gorm:"column:session_id;primaryKey"`
	PromptID         string  `gorm:"column:prompt_id"`
	ToolCallID       string  `gorm:"column:tool_call_id"`
	Title            string  `gorm:"column:title"`
	Options          *string `gorm:"column:options"`
	State            string  `gorm:"column:state"`
	SelectedOptionID string  `gorm:"column:selected_option_id"`
	CreatedAt        dbTime  `gorm:"column:created_at"`
	ResolvedAt       *dbTime `gorm:"column:resolved_at"`
}

func (permissionRow) TableName() string { return "permission_requests" }

func fromPermission(p session.Permission) permissionRow {
	return permissionRow{
		ID: p.ID, SessionID: p.SessionID, PromptID: p.PromptID, ToolCallID: p.ToolCallID,
		Title: p.Title, Options: jsonText(p.Options), State: string(p.State),
		SelectedOptionID: p.SelectedOptionID,
		CreatedAt:        toDBTime(p.CreatedAt), ResolvedAt: toDBTimePtr(p.ResolvedAt),
	}
}

func toPermission(r permissionRow) session.Permission {
	return session.Permission{
		ID: r.ID, SessionID: r.SessionID, PromptID: r.PromptID, ToolCallID: r.ToolCallID,
		Title: r.Title, Options: fromJSONText(r.Options), State: session.PermissionState(r.State),
		SelectedOptionID: r.SelectedOptionID,
		CreatedAt:        r.CreatedAt.t, ResolvedAt: fromDBTimePtr(r.ResolvedAt),
	}
}

// agent profiles -----------------------------------------------------------------

type agentProfileRow struct {
	ID                      string  `gorm:"column:id;primaryKey"`
	DisplayName             string  `gorm:"column:display_name"`
	Command                 string  `gorm:"column:command"`
	Args                    string  `gorm:"column:args"`
	Env                     string  `gorm:"column:env"`
	Source                  string  `gorm:"column:source"`
	Available               bool    `gorm:"column:available"`
	UnavailableReason       string  `gorm:"column:unavailable_reason"`
	NativeSessionResume     bool    `gorm:"column:native_session_resume"`
	HistoryContextInjection bool    `gorm:"column:history_context_injection"`
	ResumeArgs              string  `gorm:"column:resume_args"`
	Capabilities            *string `gorm:"column:capabilities"`
	ProbedAt                *dbTime `gorm:"column:probed_at"`
	Credentials             *string `gorm:"column:credentials"`
	UpdatedAt               dbTime  `gorm:"column:updated_at"`
}

func (agentProfileRow) TableName() string { return "agent_profiles" }

func fromAgentProfile(p AgentProfile) agentProfileRow {
	return agentProfileRow{
		ID: p.ID, DisplayName: p.DisplayName, Command: p.Command,
		Args: stringsJSON(p.Args), Env: mapJSON(p.Env), Source: p.Source,
		Available: p.Available, UnavailableReason: p.UnavailableReason,
		NativeSessionResume:     p.NativeSessionResume,
		HistoryContextInjection: p.HistoryContextInjection,
		ResumeArgs:              stringsJSON(p.ResumeArgs),
		Capabilities:            jsonText(p.Capabilities), ProbedAt: toDBTimePtr(p.ProbedAt),
		Credentials: jsonText(p.Credentials),
		UpdatedAt:   toDBTime(p.UpdatedAt),
	}
}

func toAgentProfile(r agentProfileRow) (AgentProfile, error) {
	args, err := fromStringsJSON(r.Args, "agent_profiles.args")
	if err != nil {
		return AgentProfile{}, err
	}
	env, err := fromMapJSON(r.Env, "agent_profiles.env")
	if err != nil {
		return AgentProfile{}, err
	}
	resumeArgs, err := fromStringsJSON(r.ResumeArgs, "agent_profiles.resume_args")
	if err != nil {
		return AgentProfile{}, err
	}
	return AgentProfile{
		ID: r.ID, DisplayName: r.DisplayName, Command: r.Command,
		Args: args, Env: env, Source: r.Source,
		Available: r.Available, UnavailableReason: r.UnavailableReason,
		NativeSessionResume:     r.NativeSessionResume,
		HistoryContextInjection: r.HistoryContextInjection,
		ResumeArgs:              resumeArgs,
		Capabilities:            fromJSONText(r.Capabilities), ProbedAt: fromDBTimePtr(r.ProbedAt),
		Credentials: fromJSONText(r.Credentials),
		UpdatedAt:   r.UpdatedAt.t,
	}, nil
}
