package session

import (
	"encoding/json"
	"time"
)

// TaskState is a task's lifecycle state (DESIGN.md section 2).
type TaskState string

// Task states.
const (
	TaskTodo       TaskState = "TODO"
	TaskInProgress TaskState = "IN_PROGRESS"
	TaskReview     TaskState = "REVIEW"
	TaskCompleted  TaskState = "COMPLETED"
	TaskFailed     TaskState = "FAILED"
	TaskCancelled  TaskState = "CANCELLED"
)

// SessionState is a session's lifecycle state (DESIGN.md section 2).
type SessionState string

// Session states.
const (
	SessionCreated         SessionState = "CREATED"
	SessionStarting        SessionState = "STARTING"
	SessionRunning         SessionState = "RUNNING"
	SessionWaitingForInput SessionState = "WAITING_FOR_INPUT"
	SessionCompleted       SessionState = "COMPLETED"
	SessionFailed          SessionState = "FAILED"
	SessionCancelled       SessionState = "CANCELLED"
)

// Active reports whether the session has (or should have) a live agent.
func (s SessionState) Active() bool {
	return s == SessionStarting || s == SessionRunning || s == SessionWaitingForInput
}

// Terminal reports whether the session is over; terminal sessions block
// prompt, resume and continue.
func (s SessionState) Terminal() bool {
	return s == SessionCompleted || s == SessionFailed || s == SessionCancelled
}

// TurnKind says why a turn exists.
type TurnKind string

// Turn kinds.
const (
	TurnInitial  TurnKind = "initial"
	TurnPrompt   TurnKind = "prompt"
	TurnContinue TurnKind = "continue"
)

// TurnState is a turn's lifecycle state.
type TurnState string

// Turn states. Every turn ends in one of the last four.
const (
	TurnQueued      TurnState = "queued"
	TurnRunning     TurnState = "running"
	TurnCompleted   TurnState = "completed"
	TurnCancelled   TurnState = "cancelled"
	TurnFailed      TurnState = "failed"
	TurnInterrupted TurnState = "interrupted"
)

// Terminal reports whether the turn has a durable outcome.
func (s TurnState) Terminal() bool {
	return s == TurnCompleted || s == TurnCancelled || s == TurnFailed || s == TurnInterrupted
}

// MessageRole says who produced a transcript message.
type MessageRole string

// Message roles.
const (
	RoleUser    MessageRole = "user"
	RoleAgent   MessageRole = "agent"
	RoleThought MessageRole = "thought"
	RoleSystem  MessageRole = "system"
)

// ToolCallStatus mirrors ACP's tool call status.
type ToolCallStatus string

// Tool call statuses.
const (
	ToolPending    ToolCallStatus = "pending"
	ToolInProgress ToolCallStatus = "in_progress"
	ToolCompleted  ToolCallStatus = "completed"
	ToolFailed     ToolCallStatus = "failed"
)

// PermissionState is the lifecycle of a permission request.
type PermissionState string

// Permission states.
const (
	PermissionPending   PermissionState = "pending"
	PermissionSelected  PermissionState = "selected"
	PermissionCancelled PermissionState = "cancelled"
	PermissionExpired   PermissionState = "expired"
)

// ExecutorStatus is the state of the process hosting a session's agent.
type ExecutorStatus string

// Executor statuses.
const (
	ExecutorStarting ExecutorStatus = "starting"
	ExecutorReady    ExecutorStatus = "ready"
	// ExecutorReconnecting: the agent runs in an executor host the daemon
	// has lost its connection to (a daemon restart, a network cut); the
	// daemon is reconnecting, and the turn goes on on the host.
	ExecutorReconnecting ExecutorStatus = "reconnecting"
	ExecutorError        ExecutorStatus = "error"
	ExecutorStopped      ExecutorStatus = "stopped"
)

// Runtime says where an agent process lives.
type Runtime string

// Runtimes.
const (
	RuntimeStandalone Runtime = "standalone"
	RuntimeDetached   Runtime = "detached"
	RuntimeRemote     Runtime = "remote"
)

// Task is a unit of work with a workspace.
type Task struct {
	ID        string
	Title     string
	Workspace string
	State     TaskState
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Session is one conversation with one agent profile in one directory.
type Session struct {
	ID             string
	TaskID         string
	AgentProfileID string
	Cwd            string
	Title          string
	// TitleSource is where Title comes from ("" for no title).
	TitleSource TitleSource
	// Archived sessions are left out of the session list unless asked for.
	Archived bool
	State    SessionState
	// EventEpoch identifies the current history of the session's event log.
	EventEpoch string
	// MCPServers is the JSON array sent as mcpServers (never null).
	MCPServers json.RawMessage
	// AdditionalDirectories are resent on load/resume.
	AdditionalDirectories []string
	// Plan is the latest ACP plan (JSON array of entries) or nil.
	Plan json.RawMessage
	// Prompted is true once any turn has been admitted.
	Prompted bool
	// ContextLost is true when a restore could not give the agent its history.
	ContextLost bool
	// InjectContext is true while the next prompt owes the resume context
	// (history injection after a restore fell back to a fresh session).
	InjectContext bool
	// ModeChoice is the mode the user chose ("" for the agent's default),
	// reapplied after every start and restore.
	ModeChoice string
	// ConfigChoices is a JSON object of config option id -> chosen value
	// (string value id or boolean), reapplied like ModeChoice.
	ConfigChoices json.RawMessage
	// QueueHeld is true while the queued turns wait for the user: they were
	// queued when tetherd restarted (see migrations/00008_queue_held.sql).
	QueueHeld bool
	// AutoContinue: after an interruption that was not the user's doing,
	// the turn is continued once by itself (sessions/autocontinue.go).
	AutoContinue bool
	// Sandbox is the session's own sandbox policy (JSON, as
	// internal/sandbox's Policy), nil for the profile's.
	Sandbox json.RawMessage
	// ForkedFrom is where a fork came from (session.forked), nil for a
	// session that is no fork.
	ForkedFrom *ForkOrigin
	// LastRewind is the session's latest rewind or undo (session.rewound),
	// nil before any: what an undo undoes.
	LastRewind *Rewind
	// Usage is what the session's agent says it used (usage.updated).
	Usage Usage
	// Budget is what the session may use, and its stall watchdog
	// (session.budget_changed; the profile's when it was created).
	Budget    Budget
	CreatedAt time.Time
	UpdatedAt time.Time
	ClosedAt  *time.Time
	// LastActivityAt is when the session's latest event was recorded (nil
	// before any), as the session list reads it: not part of the log's
	// fold, the log's head is.
	LastActivityAt *time.Time
}

// TakeLogged sets on s every field of from that the session's events
// change (its state, title, archive, plan, held queue, restore facts and
// the user's choices), field by field: the ids and what no event changes
// stay as s has them, so a holder whose other goroutines read those may
// take a reloaded record without a race. A field a new event changes is
// added here, beside its declaration.
func (s *Session) TakeLogged(from Session) {
	s.State, s.Prompted, s.QueueHeld = from.State, from.Prompted, from.QueueHeld
	s.ContextLost, s.InjectContext, s.Plan = from.ContextLost, from.InjectContext, from.Plan
	s.ModeChoice, s.ConfigChoices = from.ModeChoice, from.ConfigChoices
	s.Title, s.TitleSource, s.Archived = from.Title, from.TitleSource, from.Archived
	s.LastRewind = from.LastRewind
}

// ForkOrigin is the session and turn a fork was made from.
type ForkOrigin struct {
	SessionID string `json:"sessionId"`
	PromptID  string `json:"promptId"`
	// Handoff: the fork continues the same workspace with another agent.
	Handoff bool `json:"handoff,omitempty"`
}

// Rewind is one rewind (or undo) of a session, as session.rewound
// recorded it: what an undo needs to undo it.
type Rewind struct {
	// ID names the rewind and its safety checkpoint (the files as they
	// were before it).
	ID string `json:"id"`
	// ToPromptID is the turn whose end the files went back to ("" for an
	// undo); Undoes the rewind an undo undid.
	ToPromptID string `json:"toPromptId,omitempty"`
	Undoes     string `json:"undoes,omitempty"`
	// Rewound are the turns it marked rewound, Restored those it
	// unmarked (an undo's).
	Rewound  []string `json:"rewound"`
	Restored []string `json:"restored,omitempty"`
	// Turns is how many turns the session had then: a turn admitted since
	// makes it no longer undoable.
	Turns int       `json:"turns"`
	At    time.Time `json:"at"`
}

// Executor is the executors_running row of a session: one per session,
// repaired, never silently deleted.
// WorktreeState is where a session's worktree stands.
type WorktreeState string

// Worktree states.
const (
	WorktreeActive  WorktreeState = "active"
	WorktreeKept    WorktreeState = "kept"
	WorktreeRemoved WorktreeState = "removed"
)

type Executor struct {
	SessionID        string
	Runtime          Runtime
	Status           ExecutorStatus
	AgentExecutionID string
	PID              int
	// Host names the executor host the agent runs in: "local" for the
	// detached runtime, a configured name for a remote one, "" for
	// standalone.
	Host string
	// HostOffset is the last record of the host's outbox for this session
	// that the daemon has committed, counted over the session's life: the
	// record's own offset in its agent's outbox plus HostOffsetBase. It is
	// committed with what the record caused: in the event that change
	// wrote (Event.HostOffset) or, for a record that caused no event, by
	// SetExecutorOffset; reads return the larger of the two.
	// UpdateExecutor leaves it.
	HostOffset uint64
	// HostOffsetBase is where the current agent's outbox numbering starts
	// (its record n is HostOffset base+n): a new agent's outbox starts
	// again at 1 (ResetExecutorOffset). Attaching resumes after
	// HostOffset-HostOffsetBase.
	HostOffsetBase uint64
	// ResumeToken is the agent's ACP session id.
	ResumeToken           string
	SupportsSessionResume bool
	SupportsLoad          bool
	SupportsWorkspaceOnly bool
	WorktreePath          string
	WorktreeBranch        string
	// WorktreeRepo is the repository the worktree belongs to (its top
	// level); WorktreeState is WorktreeActive, WorktreeKept or
	// WorktreeRemoved, "" for a session without a worktree.
	WorktreeRepo  string
	WorktreeState WorktreeState
	// Sandbox says whether the agent of the last start runs in its
	// sandbox ("on", "off"; "" before any start); SandboxReason why not.
	Sandbox       string
	SandboxReason string
	LastSeenAt    *time.Time
	ErrorMessage  string
	// ErrorCode is the stable code of the failure behind status error
	// (errcode values, e.g. agent_auth_required), or, while the status is
	// starting or reconnecting, of why the executor host cannot be
	// reached (executor_unavailable); empty otherwise.
	ErrorCode string
	// ErrorProfile fingerprints the agent profile the failure happened with
	// (agents.Profile.Fingerprint), so a changed profile is tried again.
	ErrorProfile string
	ExitCode     *int
	ExitSignal   string
	UpdatedAt    time.Time
}

// ShownErrorCode is the code clients are given with the executor's
// status: a failure's (status error), or why the host cannot be reached
// while the executor starts or reconnects; "" for any other status, whose
// ErrorCode is a leftover.
func (e Executor) ShownErrorCode() string {
	switch e.Status {
	case ExecutorError, ExecutorStarting, ExecutorReconnecting:
		return e.ErrorCode
	}
	return ""
}

// Turn is one prompt and everything the agent did for it.
type Turn struct {
	SessionID string
	PromptID  string
	// Seq orders turns within a session (1-based, assigned by the store).
	Seq   int64
	Kind  TurnKind
	State TurnState
	// Prompt is the JSON array of ACP content blocks sent to the agent.
	Prompt            json.RawMessage
	StopReason        string
	ErrorCode         string
	ErrorMessage      string
	InterruptReason   string
	ExitCode          *int
	ExitSignal        string
	ContinuesPromptID string
	// CancelRequested records the user's cancel intent durably.
	CancelRequested bool
	// ContextInjected marks the turn whose prompt carried the resume context.
	ContextInjected bool
	// Rewound: a rewind took the workspace back to before this turn; it
	// stays in the transcript, out of the agent's context.
	Rewound bool
	// Usage is what the agent says the turn used (usage.updated).
	Usage Usage
	// StalledAt is when the running turn was found stalled (turn.stalled),
	// nil while its agent is heard from (turn.stall_ended) and once it ends.
	StalledAt *time.Time
	// Interruption is, for a continue turn, the recovery summary (JSON) it
	// was admitted on.
	Interruption json.RawMessage
	// WorkspaceChanges is, for an interrupted turn, what its executor
	// found changed in the workspace since the turn's checkpoint (JSON,
	// recovery.WorkspaceChanges); nil until looked at.
	WorkspaceChanges json.RawMessage
	CreatedAt        time.Time
	StartedAt        *time.Time
	// DeliveredAt is when the prompt was written to the agent (its
	// session/prompt request), nil while the agent is not known to have
	// it. A continuation uses it to neither repeat nor drop the request.
	DeliveredAt *time.Time
	EndedAt     *time.Time
}

// Message is a transcript message; consecutive chunks of one role in one
// turn are aggregated into one message.
type Message struct {
	ID        int64
	SessionID string
	PromptID  string
	Role      MessageRole
	Text      string
	// Content holds non-text blocks (JSON array) when the agent sent any.
	Content   json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ToolCall is one tool invocation reported by the agent, in the turn
// PromptID: its key is its ToolCallKey.
type ToolCall struct {
	SessionID   string
	ToolCallID  string
	PromptID    string
	Title       string
	Kind        string
	Status      ToolCallStatus
	Interrupted bool
	Content     json.RawMessage
	Locations   json.RawMessage
	RawInput    json.RawMessage
	RawOutput   json.RawMessage
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Key is c's ToolCallKey.
func (c ToolCall) Key() ToolCallKey {
	return ToolCallKey{PromptID: c.PromptID, ToolCallID: c.ToolCallID}
}

// ToolCallKey names a tool call within its session: its turn and the id
// its agent gave it. ACP promises tool call ids unique within one ACP
// session only, and a tether session spans several (a restore by history
// injection, or any new agent process, opens a fresh one, whose agent may
// number its tool calls from the start again); a turn runs on one ACP
// session (an agent lost mid-turn ends it; a continuation is a new turn),
// so within a turn the id names one call. The store's key is the same
// (tool_calls: session_id, prompt_id, tool_call_id), and so is the Web
// Shell's.
type ToolCallKey struct {
	PromptID   string
	ToolCallID string
}

// String is k as diagnostics name it: "promptID/toolCallID".
func (k ToolCallKey) String() string { return k.PromptID + "/" + k.ToolCallID }

// Permission is a session/request_permission from the agent, surfaced to
// clients until answered.
type Permission struct {
	ID               string
	SessionID        string
	PromptID         string
	ToolCallID       string
	Title            string
	Options          json.RawMessage
	State            PermissionState
	SelectedOptionID string
	CreatedAt        time.Time
	ResolvedAt       *time.Time
}
