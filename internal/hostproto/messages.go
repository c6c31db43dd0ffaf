package hostproto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/tether/tether/internal/errcode"
)

// Type is a message's discriminator, the `type` member of its frame.
type Type string

// The message types. Existing values never change meaning; a new message
// comes with a new protocol version, so a peer never receives a type its
// negotiated version does not have.
const (
	TypeHello         Type = "hello"
	TypeWelcome       Type = "welcome"
	TypeRefused       Type = "refused"
	TypeCommand       Type = "command"
	TypeCommandResult Type = "command_result"
	TypeRecord        Type = "record"
	TypeAck           Type = "ack"
	TypePing          Type = "ping"
	TypePong          Type = "pong"
)

// Message is one protocol message: one Go type per message type.
type Message interface {
	// Type names the message on the wire.
	Type() Type
}

// newMessage returns a zero message of type t for decoding, or nil if t is
// not a message type.
func newMessage(t Type) Message {
	switch t {
	case TypeHello:
		return &Hello{}
	case TypeWelcome:
		return &Welcome{}
	case TypeRefused:
		return &Refused{}
	case TypeCommand:
		return &Command{}
	case TypeCommandResult:
		return &CommandResult{}
	case TypeRecord:
		return &Record{}
	case TypeAck:
		return &Ack{}
	case TypePing:
		return &Ping{}
	case TypePong:
		return &Pong{}
	}
	return nil
}

// Hello is the client's first frame: who it is, what it speaks, and its
// credential. Its shape never changes incompatibly, so that any two
// versions can at least tell each other that they do not match.
type Hello struct {
	// MinVersion and MaxVersion bound the protocol versions the client
	// speaks (inclusive).
	MinVersion int `json:"minVersion"`
	MaxVersion int `json:"maxVersion"`
	// Token is the shared secret the host was configured with.
	Token         string `json:"token"`
	DaemonID      string `json:"daemonId"`
	DaemonVersion string `json:"daemonVersion"`
}

// LogValue keeps the token out of logs.
func (h Hello) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("minVersion", h.MinVersion), slog.Int("maxVersion", h.MaxVersion),
		slog.String("daemonId", h.DaemonID), slog.String("daemonVersion", h.DaemonVersion))
}

// Welcome accepts a Hello: the version both sides speak from now on and
// the sessions the host holds, so that the daemon knows which it can
// attach (CommandAttach) and which its host lost.
type Welcome struct {
	Version     int    `json:"version"`
	HostID      string `json:"hostId"`
	HostVersion string `json:"hostVersion"`
	// Sessions are the daemon session ids the host has an outbox for.
	Sessions []string `json:"sessions,omitempty"`
}

// Refused rejects a Hello; the host closes the connection after it.
type Refused struct {
	Code    errcode.Code `json:"code"`
	Message string       `json:"message"`
}

// CommandKind is what a Command asks the host to do.
type CommandKind string

// The command kinds, one per operation the daemon drives on a host's agent.
const (
	CommandStart  CommandKind = "start"
	CommandAttach CommandKind = "attach"
	CommandStatus CommandKind = "status"
	CommandNew    CommandKind = "new"
	CommandLoad   CommandKind = "load"
	CommandResume CommandKind = "resume"
	// CommandFork opens a copy of a stored ACP session (the unstable
	// session/fork). It is sent only to an agent whose capabilities say
	// Fork, which only a host that knows the command reports.
	CommandFork             CommandKind = "fork"
	CommandPrompt           CommandKind = "prompt"
	CommandCancel           CommandKind = "cancel"
	CommandPermissionAnswer CommandKind = "permission_answer"
	CommandStop             CommandKind = "stop"
	CommandSetMode          CommandKind = "set_mode"
	CommandSetConfigOption  CommandKind = "set_config_option"
	// CommandWorkspace (version 3) performs a workspace operation
	// (payload workspace.Request, result workspace.Result) on the host's
	// file system, for a session whose agent may or may not run.
	CommandWorkspace CommandKind = "workspace"
)

// Known reports whether k is a kind this version defines. The codec keeps
// unknown kinds so that the host can answer them with an error result
// instead of dropping the connection.
func (k CommandKind) Known() bool {
	switch k {
	case CommandStart, CommandAttach, CommandStatus, CommandNew, CommandLoad, CommandResume, CommandFork, CommandPrompt, CommandCancel,
		CommandPermissionAnswer, CommandStop, CommandSetMode, CommandSetConfigOption, CommandWorkspace:
		return true
	}
	return false
}

// Since is the protocol version that introduced k: a daemon never sends a
// command to a host whose negotiated version predates it.
func (k CommandKind) Since() int {
	if k == CommandWorkspace {
		return 3
	}
	return 1
}

// Fenced reports whether a command of kind k that names a session is
// checked against the session's generation (version 4): every kind but
// status, which names none.
func (k CommandKind) Fenced() bool { return k != CommandStatus }

// Command asks the host to act on a session (SessionID, the daemon's
// session id; empty for CommandStatus). ID is unique per command and kept
// across retries, so a command resent after a reconnect is applied once
// (see Dedup). Payload is the kind's payload type (payloads.go).
type Command struct {
	ID        string      `json:"id"`
	Kind      CommandKind `json:"kind"`
	SessionID string      `json:"sessionId"`
	// Generation (version 4) is the daemon's fencing token for the
	// session: the generation of its lease, which grows at every change
	// of the session's owner when several daemons share a database. The
	// host refuses a command older than the newest it accepted for the
	// session (errcode.HostSessionFenced); 0, what a daemon of one node
	// sends and an older daemon omits, is unfenced as long as no command
	// carried more.
	Generation uint64          `json:"generation,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

// CommandResult answers the Command with the same ID: Error when it
// failed, else Result (possibly empty).
type CommandResult struct {
	ID     string          `json:"id"`
	Error  *ErrorBody      `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// ErrorBody is a domain error on the wire. RPC, when set, is the agent's
// own JSON-RPC error the command failed with, and Auth says it failed in
// the start's authenticate; CommandResult.Err rebuilds both, so that the
// daemon handles a host's agent's errors as it would a local one's.
type ErrorBody struct {
	Code    errcode.Code `json:"code"`
	Message string       `json:"message"`
	RPC     *RPCError    `json:"rpc,omitempty"`
	Auth    *AuthFailure `json:"auth,omitempty"`
}

// Err returns the result's error, or nil: see ErrorBody.Error.
func (r CommandResult) Err() error {
	if r.Error == nil {
		return nil
	}
	return r.Error.Error()
}

// RecordKind is what an outbox record carries.
type RecordKind string

// The record kinds: what the host's agents produce for the daemon.
const (
	// RecordUpdate is an agent's session/update as the host decoded it
	// (payload Update); version 1 has only this form.
	RecordUpdate        RecordKind = "update"
	RecordRequest       RecordKind = "request"
	RecordRequestClosed RecordKind = "request_closed"
	RecordExit          RecordKind = "exit"
	// RecordACPUpdate (version 2) is an agent's session/update
	// notification as the agent wrote it, the JSON-RPC message itself
	// (acp.LineHandler): the daemon decodes it as it would read it from
	// its own agent (acp.UpdateDecoder). On a version 1 connection the
	// host sends it as a RecordUpdate instead.
	RecordACPUpdate RecordKind = "acp_update"
)

// Known reports whether k is a kind some version defines.
func (k RecordKind) Known() bool {
	return k == RecordUpdate || k == RecordRequest || k == RecordRequestClosed || k == RecordExit || k == RecordACPUpdate
}

// Since is the protocol version that introduced k.
func (k RecordKind) Since() int {
	if k == RecordACPUpdate {
		return 2
	}
	return 1
}

// Record is one outbox record sent to the daemon, which acknowledges it
// (Ack) once it has committed it. Each session has an outbox of its own on
// the host, so Offset counts from 1 per session.
type Record struct {
	Offset    uint64     `json:"offset"`
	SessionID string     `json:"sessionId"`
	Kind      RecordKind `json:"kind"`
	// Payload stays the last field, so the last member of the frame: the
	// hand-written reader (record.go) takes the rest of the body for it.
	// A field added later goes before it.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Ack tells the host that the daemon committed every record of the
// session up to Offset.
type Ack struct {
	SessionID string `json:"sessionId"`
	Offset    uint64 `json:"offset"`
}

// Ping asks the peer for a Pong with the same Nonce (liveness).
type Ping struct {
	Nonce uint64 `json:"nonce"`
}

// Pong answers the Ping with the same Nonce.
type Pong struct {
	Nonce uint64 `json:"nonce"`
}

// Type implements Message.
func (*Hello) Type() Type { return TypeHello }

// Type implements Message.
func (*Welcome) Type() Type { return TypeWelcome }

// Type implements Message.
func (*Refused) Type() Type { return TypeRefused }

// Type implements Message.
func (*Command) Type() Type { return TypeCommand }

// Type implements Message.
func (*CommandResult) Type() Type { return TypeCommandResult }

// Type implements Message.
func (*Record) Type() Type { return TypeRecord }

// Type implements Message.
func (*Ack) Type() Type { return TypeAck }

// Type implements Message.
func (*Ping) Type() Type { return TypePing }

// Type implements Message.
func (*Pong) Type() Type { return TypePong }

// Encode returns m's frame body: m's JSON object with the `type` member
// first.
func Encode(m Message) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("hostproto: encode %s: %w", m.Type(), err)
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("hostproto: encode %s: not a JSON object: %s", m.Type(), body)
	}
	typ, _ := json.Marshal(m.Type()) // a string always marshals
	out := make([]byte, 0, len(body)+len(typ)+9)
	out = append(out, `{"type":`...)
	out = append(out, typ...)
	if rest := body[1:]; !bytes.Equal(rest, []byte("}")) {
		out = append(out, ',')
		out = append(out, rest...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// Decode parses a frame body into its typed message. A body that is not a
// JSON object with a known `type` fails with errcode.HostProtocolError.
func Decode(body []byte) (Message, error) {
	return decode(body, nil, nil)
}

// decode is Decode with the session id of the last record read and the
// Record to fill, if any (see decodeRecordInto).
func decode(body []byte, lastSession *string, rec *Record) (Message, error) {
	if r, ok := decodeRecordInto(body, lastSession, rec); ok {
		return r, nil
	}
	var head struct {
		Type *Type `json:"type"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, errcode.Wrap(errcode.HostProtocolError, err, "frame is not a JSON object")
	}
	if head.Type == nil {
		return nil, errcode.New(errcode.HostProtocolError, "frame has no type")
	}
	m := newMessage(*head.Type)
	if m == nil {
		return nil, errcode.New(errcode.HostProtocolError, "unknown message type %q", *head.Type)
	}
	if err := json.Unmarshal(body, m); err != nil {
		return nil, errcode.Wrap(errcode.HostProtocolError, err, "malformed %s message", *head.Type)
	}
	return m, nil
}
