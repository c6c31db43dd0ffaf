package hostproto

import (
	"encoding/json"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
)

// The payloads of commands, results and records (version 1). Each command
// kind has a payload type named after it and, where it answers more than
// success, a result type. They are wire types of their own, converted
// from and to the acp values the daemon and the host use, so that a field
// renamed inside either never changes the protocol.

// StartPayload is CommandStart's payload: launch the agent of a profile
// the host is configured with and perform the ACP handshake. The daemon
// names a profile id only, never a command line.
type StartPayload struct {
	ProfileID string `json:"profileId"`
	// ResumeToken, when set, is expanded into the profile's resume
	// arguments (agents that take their session id on the command line).
	ResumeToken string `json:"resumeToken,omitempty"`
	// Cwd is the agent's working directory on the host's machine.
	Cwd string `json:"cwd"`
	// FS offers the agent the fs/* capability, confined to Cwd.
	FS bool `json:"fs"`
	// InitTimeoutMS bounds the handshake; StopGraceMS is how long a stop
	// waits for the agent before killing it. Zero takes the host's default.
	InitTimeoutMS int64 `json:"initTimeoutMs,omitempty"`
	StopGraceMS   int64 `json:"stopGraceMs,omitempty"`
	// Sandbox is the session's own sandbox policy (internal/sandbox's
	// Policy as JSON), which the host lays over its profile's; absent for
	// none. A host before issue 31 ignores it.
	Sandbox json.RawMessage `json:"sandbox,omitempty"`
}

// Sandbox is what StartResult and AttachResult say of the agent's
// sandbox: State "on" or "off" (and Reason why not); "" from a host
// before issue 31.
type Sandbox struct {
	State  string `json:"sandbox,omitempty"`
	Reason string `json:"sandboxReason,omitempty"`
}

// StartResult answers CommandStart. The session's record stream starts at
// offset 1 on the connection the start came on.
type StartResult struct {
	Capabilities Capabilities `json:"capabilities"`
	PID          int          `json:"pid"`
	Sandbox
}

// AttachPayload is CommandAttach's payload: the daemon (after a restart or
// a reconnect) takes up the session's record stream after From, the last
// offset it committed. The host drops every record up to From and sends
// the rest, then new ones as they come.
type AttachPayload struct {
	From uint64 `json:"from"`
}

// AttachResult answers CommandAttach with what the daemon cannot rebuild
// from its own store: the agent as the host knows it. An agent that ended
// while no daemon listened is reported by its exit record in the stream,
// not here.
type AttachResult struct {
	Capabilities Capabilities `json:"capabilities"`
	PID          int          `json:"pid"`
	Sandbox
	Options SessionOptions `json:"options"`
	// Pending are the agent's permission requests still waiting for an
	// answer, oldest first.
	Pending []PermissionRequest `json:"pending,omitempty"`
	// NextOffset is the offset the session's next record will get.
	NextOffset uint64 `json:"nextOffset"`
	// Exited is set when the agent has ended already (it exited, or a
	// restarted host found the session without it): its exit record
	// comes after the records the daemon has not committed. A host
	// before issue 28 leaves it out.
	Exited bool `json:"exited,omitempty"`
}

// NewPayload is CommandNew's payload (session/new).
type NewPayload struct {
	Params SessionParams `json:"params"`
}

// NewResult answers CommandNew.
type NewResult struct {
	AcpSessionID string         `json:"acpSessionId"`
	Options      SessionOptions `json:"options"`
}

// RestorePayload is the payload of CommandLoad and CommandResume
// (session/load, session/resume), and of CommandFork (session/fork of
// AcpSessionID, the stored session copied; answered with a NewResult).
type RestorePayload struct {
	AcpSessionID string        `json:"acpSessionId"`
	Params       SessionParams `json:"params"`
}

// RestoreResult answers CommandLoad and CommandResume. A load's replayed
// history arrives as update records before it.
type RestoreResult struct {
	Options SessionOptions `json:"options"`
}

// PromptPayload is CommandPrompt's payload. The command id names the turn
// (the daemon derives it from the prompt id), so that a daemon that
// restarted mid-turn resends it and gets the turn's stop reason once the
// turn ends, instead of prompting twice.
type PromptPayload struct {
	AcpSessionID string          `json:"acpSessionId"`
	Prompt       json.RawMessage `json:"prompt"`
	// CheckpointTurn asks the host to record the workspace checkpoint of
	// this turn (workspace.OpCheckpoint) before the agent gets the prompt:
	// the executor takes it where the files are, in the same step. A host
	// that predates it ignores it (the report then has no checkpoint).
	CheckpointTurn string `json:"checkpointTurn,omitempty"`
}

// PromptResult answers CommandPrompt once the turn ended. The host sends it
// after every record the turn produced.
type PromptResult struct {
	StopReason string `json:"stopReason"`
}

// SessionPayload is the payload of commands that name only the agent's
// session: CommandCancel.
type SessionPayload struct {
	AcpSessionID string `json:"acpSessionId"`
}

// PermissionAnswerPayload is CommandPermissionAnswer's payload: the answer
// to the request the host numbered RequestID.
type PermissionAnswerPayload struct {
	RequestID string `json:"requestId"`
	Cancelled bool   `json:"cancelled,omitempty"`
	OptionID  string `json:"optionId,omitempty"`
}

// StopResult answers CommandStop once the agent is gone.
type StopResult struct {
	Exit Exit `json:"exit"`
}

// SetModePayload is CommandSetMode's payload (session/set_mode).
type SetModePayload struct {
	AcpSessionID string `json:"acpSessionId"`
	ModeID       string `json:"modeId"`
}

// SetConfigOptionPayload is CommandSetConfigOption's payload
// (session/set_config_option); Value is a JSON string or boolean.
type SetConfigOptionPayload struct {
	AcpSessionID string          `json:"acpSessionId"`
	OptionID     string          `json:"optionId"`
	Value        json.RawMessage `json:"value"`
}

// SetConfigOptionResult answers CommandSetConfigOption with the agent's
// full set of options.
type SetConfigOptionResult struct {
	ConfigOptions json.RawMessage `json:"configOptions"`
}

// StatusResult answers CommandStatus (no session): what `tetherd host ls`
// and GET /executors show of a host.
type StatusResult struct {
	StartedAt string          `json:"startedAt"`
	Sessions  []SessionStatus `json:"sessions"`
}

// SessionStatus is one session a host holds.
type SessionStatus struct {
	SessionID string `json:"sessionId"`
	ProfileID string `json:"profileId"`
	PID       int    `json:"pid"`
	// Running is set while a prompt is in flight.
	Running bool `json:"running"`
	// Exited is set once the agent ended (its exit record not yet acked).
	Exited bool `json:"exited"`
	// OutboxRecords and OutboxBytes are what the daemon has not
	// acknowledged yet.
	OutboxRecords uint64 `json:"outboxRecords"`
	OutboxBytes   int64  `json:"outboxBytes"`
}

// RPCError is an agent's JSON-RPC error, carried as the agent sent it so
// that the daemon classifies it exactly as it would a local agent's
// (acp.Classify).
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// AuthFailure says that the start's authenticate failed after a good
// initialize (acp.AuthenticateError); the error's RPC is the agent's.
type AuthFailure struct {
	Method       string       `json:"method"`
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities is acp.Capabilities on the wire.
type Capabilities struct {
	ProtocolVersion int  `json:"protocolVersion"`
	LoadSession     bool `json:"loadSession,omitempty"`
	Resume          bool `json:"resume,omitempty"`
	// Fork: the agent takes the unstable session/fork, and the host
	// CommandFork (a host too old to know the command never says so).
	Fork            bool         `json:"fork,omitempty"`
	Image           bool         `json:"image,omitempty"`
	Audio           bool         `json:"audio,omitempty"`
	EmbeddedContext bool         `json:"embeddedContext,omitempty"`
	AgentName       string       `json:"agentName,omitempty"`
	AgentVersion    string       `json:"agentVersion,omitempty"`
	AuthMethods     []AuthMethod `json:"authMethods,omitempty"`
}

// AuthMethod is acp.AuthMethod on the wire.
type AuthMethod struct {
	ID          string         `json:"id"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Type        string         `json:"type,omitempty"`
	Vars        []string       `json:"vars,omitempty"`
	Optional    []string       `json:"optional,omitempty"`
	Args        []string       `json:"args,omitempty"`
	Meta        map[string]any `json:"meta,omitempty"`
}

// SessionParams is acp.SessionParams on the wire.
type SessionParams struct {
	Cwd                   string          `json:"cwd"`
	MCPServers            json.RawMessage `json:"mcpServers,omitempty"`
	AdditionalDirectories []string        `json:"additionalDirectories,omitempty"`
}

// SessionOptions is acp.SessionOptions on the wire.
type SessionOptions struct {
	Modes         json.RawMessage `json:"modes,omitempty"`
	ConfigOptions json.RawMessage `json:"configOptions,omitempty"`
}

// Update is an update record's payload: acp.Update on the wire.
type Update struct {
	AcpSessionID string          `json:"acpSessionId"`
	Kind         acp.UpdateKind  `json:"kind"`
	Text         string          `json:"text,omitempty"`
	Block        json.RawMessage `json:"block,omitempty"`
	MessageID    string          `json:"messageId,omitempty"`
	Tool         *ToolCall       `json:"tool,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
}

// ToolCall is acp.ToolCall on the wire.
type ToolCall struct {
	ID        string          `json:"id"`
	Title     *string         `json:"title,omitempty"`
	Kind      *string         `json:"kind,omitempty"`
	Status    *string         `json:"status,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	Locations json.RawMessage `json:"locations,omitempty"`
	RawInput  json.RawMessage `json:"rawInput,omitempty"`
	RawOutput json.RawMessage `json:"rawOutput,omitempty"`
}

// PermissionRequest is a request record's payload, and an entry of
// AttachResult.Pending: the agent's session/request_permission, numbered
// by the host (RequestID, unique on the host) so that the daemon's answer
// — after any number of restarts — names it.
type PermissionRequest struct {
	RequestID    string                 `json:"requestId"`
	AcpSessionID string                 `json:"acpSessionId"`
	Tool         ToolCall               `json:"tool"`
	Options      []acp.PermissionOption `json:"options"`
}

// RequestClosed is a request_closed record's payload: the agent withdrew
// the request (or its turn ended) before the daemon answered it.
type RequestClosed struct {
	RequestID string `json:"requestId"`
}

// Exit is an exit record's payload, the last record of a session: how its
// agent ended. Lost is set when the host itself ended under the agent (it
// crashed or was killed) and found the session again on restart: the
// agent's own exit is then unknown. ErrorCode and Error, when set, say
// what else the host knows of the end: errcode.HostOutboxDamaged when
// it found the session's outbox damaged (Error says what, and which
// records are lost). A daemon that does not know the fields ignores them.
type Exit struct {
	Code      int          `json:"code"`
	Signal    string       `json:"signal,omitempty"`
	Stderr    string       `json:"stderr,omitempty"`
	Lost      bool         `json:"lost,omitempty"`
	ErrorCode errcode.Code `json:"errorCode,omitempty"`
	Error     string       `json:"error,omitempty"`
}

// Cause is the error ErrorCode and Error describe, nil if none.
func (e Exit) Cause() error {
	if e.ErrorCode == "" {
		return nil
	}
	return errcode.New(e.ErrorCode, "%s", e.Error)
}
