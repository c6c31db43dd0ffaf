package session

import (
	"encoding/json"
	"slices"
	"time"
)

// The domain events: the data of each event type of a session's log, one
// per `*Data` schema of api/openapi.yaml (the JSON tags are the contract's
// member names; server tests check every frame against the contract).
// Members always present in the contract's examples have no omitempty;
// optional ones do. Emit a pointer (`&session.TurnStartedData{...}`): the
// event writer (internal/events) fills the EventCommon members from the
// Draft.

// EventCommon holds the members every event payload may carry. The writer sets
// sessionId, taskId and promptId from the Draft when the payload leaves
// them empty, so emit sites name them once, on the Draft.
type EventCommon struct {
	SessionID string `json:"sessionId,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
	PromptID  string `json:"promptId,omitempty"`
}

// Base returns the common members, for the writer to fill.
func (c *EventCommon) Base() *EventCommon { return c }

// EventPayload is a typed event payload: a pointer to one of this file's types
// (they embed EventCommon). EventType is the type name the log stores it
// under (the contract's `type`).
type EventPayload interface {
	Base() *EventCommon
	EventType() string
}

// Payloads makes an empty payload of every event type the log stores: the
// one list of them (internal/events maps the type names to it for
// decoding). A new event type is its payload type here, its EventType, its
// evolve if it changes the state, and its line below.
func Payloads() []EventPayload {
	out := make([]EventPayload, len(payloads))
	for i, mk := range payloads {
		out[i] = mk()
	}
	return out
}

// GlobalPayload is a payload whose events also go to the global stream
// (GET /events): what lists of sessions and tasks follow. A new event type
// says so next to its EventType.
type GlobalPayload interface {
	EventPayload
	// OnGlobalStream marks the type; it does nothing.
	OnGlobalStream()
}

// sessionFields is a payload that changes only the Session record's own
// fields (what the user calls it, whether it is put away, whether its
// queue waits): the fold and the live actor both apply it with
// ApplyToSession, so they cannot disagree on what it changes.
type sessionFields interface {
	applyTo(sess *Session, at time.Time)
}

// ApplyToSession sets on sess what p, recorded at at, changes of the
// session's own fields, and reports whether p is such an event (a live
// holder of the session's record needs no case of its own for it).
func ApplyToSession(sess *Session, p EventPayload, at time.Time) bool {
	f, ok := p.(sessionFields)
	if ok {
		f.applyTo(sess, at)
	}
	return ok
}

// payloads are the stored types, each family's listed in its own file.
var payloads = slices.Concat(sessionPayloads, turnPayloads, transcriptPayloads, infoPayloads, usagePayloads, budgetPayloads)

// sessionPayloads are this file's types.
var sessionPayloads = []func() EventPayload{
	func() EventPayload { return &SessionCreatedData{} },
	func() EventPayload { return &SessionStateChangedData{} },
	func() EventPayload { return &ExecutorStatusData{} },
	func() EventPayload { return &SessionResumedData{} },
	func() EventPayload { return &RecoveryChangedData{} },
	func() EventPayload { return &AutoContinuedData{} },
	func() EventPayload { return &SessionClosedData{} },
	func() EventPayload { return &SessionOptionsChangedData{} },
	func() EventPayload { return &SessionChoicesChangedData{} },
	func() EventPayload { return &TaskCreatedData{} },
	func() EventPayload { return &TaskUpdatedData{} },
	func() EventPayload { return &TaskStateChangedData{} },
	func() EventPayload { return &CommandStartedData{} },
	func() EventPayload { return &CommandOutputData{} },
	func() EventPayload { return &CommandTruncatedData{} },
	func() EventPayload { return &CommandExitedData{} },
	func() EventPayload { return &SessionForkedData{} },
	func() EventPayload { return &SessionRewoundData{} },
}

// Session family.

// SessionCreatedData is the payload of session.created.
type SessionCreatedData struct {
	EventCommon
	AgentProfileID string       `json:"agentProfileId"`
	Cwd            string       `json:"cwd"`
	State          SessionState `json:"state"`
	Title          string       `json:"title"`
	TitleSource    TitleSource  `json:"titleSource,omitempty"`
	EventEpoch     string       `json:"eventEpoch"`
	// Runtime, Host and Worktree are the session's executor as it is
	// created, its agent stopped: where its agent will run.
	Runtime  Runtime           `json:"runtime,omitempty"`
	Host     string            `json:"host,omitempty"`
	Worktree *ExecutorWorktree `json:"worktree,omitempty"`
	// Sandbox is the session's own sandbox policy (Session.Sandbox).
	Sandbox json.RawMessage `json:"sandbox,omitempty"`
}

// EventType is session.created.
func (*SessionCreatedData) EventType() string { return "session.created" }

// OnGlobalStream: session.created also goes to GET /events.
func (*SessionCreatedData) OnGlobalStream() {}

// evolve folds SessionCreatedData into s (State.Evolve).
func (p *SessionCreatedData) evolve(s *State, e Event) error {
	s.Session = Session{ID: p.SessionID, TaskID: p.TaskID, AgentProfileID: p.AgentProfileID, Cwd: p.Cwd,
		State: p.State, Title: p.Title, TitleSource: p.TitleSource, EventEpoch: p.EventEpoch, Sandbox: p.Sandbox, CreatedAt: e.At, UpdatedAt: e.At}
	x := &ExecutorStatusData{EventCommon: p.EventCommon, Status: ExecutorStopped, Runtime: p.Runtime, Host: p.Host, Worktree: p.Worktree}
	s.Executor = x.Executor()
	s.Executor.UpdatedAt = e.At
	return nil
}

// SessionStateChangedData is the payload of session.state_changed.
type SessionStateChangedData struct {
	EventCommon
	State         SessionState `json:"state"`
	PreviousState SessionState `json:"previousState"`
}

// EventType is session.state_changed.
func (*SessionStateChangedData) EventType() string { return "session.state_changed" }

// OnGlobalStream: session.state_changed also goes to GET /events.
func (*SessionStateChangedData) OnGlobalStream() {}

// evolve folds SessionStateChangedData into s (State.Evolve).
func (p *SessionStateChangedData) evolve(s *State, e Event) error {
	s.Session.State, s.Session.UpdatedAt = p.State, e.At
	return nil
}

// ExecutorStatusData is the payload of session.executor_status: the
// session's executor record whole (but for its host offsets, which are
// bookkeeping of the host's outbox), so that its row is the projection
// of the latest one. ErrorCode is the code shown with the status
// (Executor.ShownErrorCode).
type ExecutorStatusData struct {
	EventCommon
	Status                ExecutorStatus    `json:"status"`
	Runtime               Runtime           `json:"runtime"`
	Host                  string            `json:"host,omitempty"`
	PID                   int               `json:"pid,omitempty"`
	Error                 string            `json:"error,omitempty"`
	ErrorCode             string            `json:"errorCode,omitempty"`
	ExitCode              *int              `json:"exitCode,omitempty"`
	ExitSignal            string            `json:"exitSignal,omitempty"`
	AgentExecutionID      string            `json:"agentExecutionId,omitempty"`
	ResumeToken           string            `json:"resumeToken,omitempty"`
	SupportsSessionResume bool              `json:"supportsSessionResume,omitempty"`
	SupportsLoad          bool              `json:"supportsLoad,omitempty"`
	SupportsWorkspaceOnly bool              `json:"supportsWorkspaceOnly,omitempty"`
	LastSeenAt            *time.Time        `json:"lastSeenAt,omitempty"`
	ErrorProfile          string            `json:"errorProfile,omitempty"`
	Worktree              *ExecutorWorktree `json:"worktree,omitempty"`
	Sandbox               string            `json:"sandbox,omitempty"`
	SandboxReason         string            `json:"sandboxReason,omitempty"`
}

// ExecutorWorktree is the session's git worktree as session.executor_status
// carries it.
type ExecutorWorktree struct {
	Repository string        `json:"repository"`
	Path       string        `json:"path"`
	Branch     string        `json:"branch"`
	State      WorktreeState `json:"state"`
}

// EventType is session.executor_status.
func (*ExecutorStatusData) EventType() string { return "session.executor_status" }

// OnGlobalStream: session.executor_status also goes to GET /events.
func (*ExecutorStatusData) OnGlobalStream() {}

// ExecutorStatusOf is the session.executor_status payload of executor e.
func ExecutorStatusOf(e Executor) *ExecutorStatusData {
	p := &ExecutorStatusData{Status: e.Status, Runtime: e.Runtime, Host: e.Host, PID: e.PID, Error: e.ErrorMessage,
		ErrorCode: e.ShownErrorCode(), ExitCode: e.ExitCode, ExitSignal: e.ExitSignal, AgentExecutionID: e.AgentExecutionID,
		ResumeToken: e.ResumeToken, SupportsSessionResume: e.SupportsSessionResume, SupportsLoad: e.SupportsLoad,
		SupportsWorkspaceOnly: e.SupportsWorkspaceOnly, LastSeenAt: e.LastSeenAt, ErrorProfile: e.ErrorProfile,
		Sandbox: e.Sandbox, SandboxReason: e.SandboxReason}
	if e.WorktreeState != "" {
		p.Worktree = &ExecutorWorktree{Repository: e.WorktreeRepo, Path: e.WorktreePath, Branch: e.WorktreeBranch, State: e.WorktreeState}
	}
	return p
}

// Executor is the executor record p carries (without host offsets).
// Its ErrorCode is the shown one: a leftover code of another status is
// not recorded.
func (p *ExecutorStatusData) Executor() Executor {
	e := Executor{SessionID: p.SessionID, Runtime: p.Runtime, Status: p.Status, AgentExecutionID: p.AgentExecutionID, PID: p.PID,
		Host: p.Host, ResumeToken: p.ResumeToken, SupportsSessionResume: p.SupportsSessionResume, SupportsLoad: p.SupportsLoad,
		SupportsWorkspaceOnly: p.SupportsWorkspaceOnly, LastSeenAt: p.LastSeenAt, ErrorMessage: p.Error, ErrorCode: p.ErrorCode,
		ErrorProfile: p.ErrorProfile, ExitCode: p.ExitCode, ExitSignal: p.ExitSignal, Sandbox: p.Sandbox, SandboxReason: p.SandboxReason}
	if w := p.Worktree; w != nil {
		e.WorktreeRepo, e.WorktreePath, e.WorktreeBranch, e.WorktreeState = w.Repository, w.Path, w.Branch, w.State
	}
	return e
}

// evolve folds ExecutorStatusData into s (State.Evolve): the executor
// record is the latest one, its host offsets kept.
func (p *ExecutorStatusData) evolve(s *State, e Event) error {
	x := p.Executor()
	x.HostOffset, x.HostOffsetBase, x.UpdatedAt = s.Executor.HostOffset, s.Executor.HostOffsetBase, e.At
	s.Executor = x
	return nil
}

// SessionResumedData is the payload of session.resumed.
type SessionResumedData struct {
	EventCommon
	Strategy        string `json:"strategy"`
	ContextRestored bool   `json:"contextRestored"`
	FallbackReason  string `json:"fallbackReason,omitempty"`
}

// EventType is session.resumed.
func (*SessionResumedData) EventType() string { return "session.resumed" }

// OnGlobalStream: session.resumed also goes to GET /events.
func (*SessionResumedData) OnGlobalStream() {}

// evolve folds SessionResumedData into s (State.Evolve).
func (p *SessionResumedData) evolve(s *State, e Event) error {
	s.Session.InjectContext, s.Session.ContextLost = p.Context()
	return nil
}

// Context is what a restore left the session owing its agent: the
// resume context once (inject: history injection) or nothing it can give
// (lost: neither native nor injected, the agent has no history).
func (d *SessionResumedData) Context() (inject, lost bool) {
	inject = d.Strategy == StrategyHistoryInjection
	return inject, !d.ContextRestored && !inject
}

// Restore strategies, as session.resumed reports them.
const (
	StrategyNativeResume = "native_resume"
	StrategyNativeLoad   = "native_load"
	// StrategyNativeFork: a fork's agent copied its origin's ACP session
	// (the unstable session/fork).
	StrategyNativeFork       = "native_fork"
	StrategyHistoryInjection = "history_injection"
	StrategyFresh            = "fresh"
)

// CommandStartedData is the payload of command.started.
type CommandStartedData struct {
	EventCommon
	CommandID string `json:"commandId"`
	Command   string `json:"command"`
}

// EventType is command.started.
func (*CommandStartedData) EventType() string { return "command.started" }

// CommandOutputData is the payload of command.output.
type CommandOutputData struct {
	EventCommon
	CommandID string `json:"commandId"`
	Offset    int64  `json:"offset"`
	Text      string `json:"text"`
}

// EventType is command.output.
func (*CommandOutputData) EventType() string { return "command.output" }

// CommandTruncatedData is the payload of command.truncated: the
// command's output from Offset on is not recorded, for Reason. Bytes is
// how much is missing when that is known now (an executor's overrun);
// a limit's Limit is the limit, and command.exited says how much was
// left out in all.
type CommandTruncatedData struct {
	EventCommon
	CommandID string `json:"commandId"`
	Offset    int64  `json:"offset"`
	Reason    string `json:"reason"`
	Bytes     int64  `json:"bytes,omitempty"`
	Limit     int64  `json:"limit,omitempty"`
}

// EventType is command.truncated.
func (*CommandTruncatedData) EventType() string { return "command.truncated" }

// Reasons of command.truncated: the daemon's limits (the command's own
// output, the session's commands together), and output its executor
// dropped before the daemon could read it (a host that predates held
// commands).
const (
	TruncatedCommandLimit = "command_limit"
	TruncatedSessionLimit = "session_limit"
	TruncatedOverrun      = "overrun"
)

// CommandExitedData is the payload of command.exited: how the command
// ended and how much of its output the log holds (OutputBytes) and left
// out (DroppedBytes; for a lost command, as far as known).
type CommandExitedData struct {
	EventCommon
	CommandID    string `json:"commandId"`
	State        string `json:"state"`
	ExitCode     *int   `json:"exitCode,omitempty"`
	OutputBytes  int64  `json:"outputBytes"`
	DroppedBytes int64  `json:"droppedBytes"`
}

// EventType is command.exited.
func (*CommandExitedData) EventType() string { return "command.exited" }

// AutoContinuedData is the payload of session.auto_continued; PromptID
// (in EventCommon) is the continuation's.
type AutoContinuedData struct {
	EventCommon
	ContinuesPromptID string `json:"continuesPromptId"`
	Reason            string `json:"reason"`
}

// EventType is session.auto_continued.
func (*AutoContinuedData) EventType() string { return "session.auto_continued" }

// OnGlobalStream: session.auto_continued also goes to GET /events.
func (*AutoContinuedData) OnGlobalStream() {}

// RecoveryChangedData is the payload of session.recovery_changed. Recovery
// comes first: the writer compares this Latest event's JSON with the last
// one stored, and payloads stored as maps had their keys sorted.
type RecoveryChangedData struct {
	Recovery Recovery `json:"recovery"`
	EventCommon
}

// EventType is session.recovery_changed.
func (*RecoveryChangedData) EventType() string { return "session.recovery_changed" }

// OnGlobalStream: session.recovery_changed also goes to GET /events.
func (*RecoveryChangedData) OnGlobalStream() {}

// SessionClosedData is the payload of session.closed.
type SessionClosedData struct {
	EventCommon
	State SessionState `json:"state"`
}

// EventType is session.closed.
func (*SessionClosedData) EventType() string { return "session.closed" }

// OnGlobalStream: session.closed also goes to GET /events.
func (*SessionClosedData) OnGlobalStream() {}

// evolve folds SessionClosedData into s (State.Evolve).
func (p *SessionClosedData) evolve(s *State, e Event) error {
	s.Session.State, s.Session.UpdatedAt = p.State, e.At
	return nil
}

// SessionOptionsChangedData is the payload of session.options_changed:
// the agent's own JSON for each member, absent when the agent never sent it.
type SessionOptionsChangedData struct {
	EventCommon
	CurrentMode       json.RawMessage `json:"currentMode,omitempty"`
	AvailableModes    json.RawMessage `json:"availableModes,omitempty"`
	ConfigOptions     json.RawMessage `json:"configOptions,omitempty"`
	AvailableCommands json.RawMessage `json:"availableCommands,omitempty"`
}

// EventType is session.options_changed.
func (*SessionOptionsChangedData) EventType() string { return "session.options_changed" }

// SessionChoicesChangedData is the payload of session.choices_changed:
// the mode and config option values the user chose, which every later
// start of the agent applies again.
type SessionChoicesChangedData struct {
	EventCommon
	ModeChoice    string          `json:"modeChoice,omitempty"`
	ConfigChoices json.RawMessage `json:"configChoices,omitempty"`
}

// EventType is session.choices_changed.
func (*SessionChoicesChangedData) EventType() string { return "session.choices_changed" }

// evolve folds SessionChoicesChangedData into s (State.Evolve).
func (p *SessionChoicesChangedData) evolve(s *State, e Event) error {
	s.Session.ModeChoice, s.Session.ConfigChoices = p.ModeChoice, p.ConfigChoices
	return nil
}

// Task family (task events belong to no session; Common.TaskID names the
// task, and a session that moved its task names itself in SessionID).

// TaskCreatedData is the payload of task.created: the task whole.
type TaskCreatedData struct {
	EventCommon
	Title     string    `json:"title"`
	Workspace string    `json:"workspace,omitempty"`
	State     TaskState `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
}

// EventType is task.created.
func (*TaskCreatedData) EventType() string { return "task.created" }

// OnGlobalStream: task.created also goes to GET /events.
func (*TaskCreatedData) OnGlobalStream() {}

// TaskUpdatedData is the payload of task.updated (a rename).
type TaskUpdatedData struct {
	EventCommon
	Title string `json:"title"`
}

// EventType is task.updated.
func (*TaskUpdatedData) EventType() string { return "task.updated" }

// OnGlobalStream: task.updated also goes to GET /events.
func (*TaskUpdatedData) OnGlobalStream() {}

// TaskStateChangedData is the payload of task.state_changed.
type TaskStateChangedData struct {
	EventCommon
	State         TaskState `json:"state"`
	PreviousState TaskState `json:"previousState"`
}

// EventType is task.state_changed.
func (*TaskStateChangedData) EventType() string { return "task.state_changed" }

// OnGlobalStream: task.state_changed also goes to GET /events.
func (*TaskStateChangedData) OnGlobalStream() {}
