package acp

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/workspace"
)

// PermissionOption is one choice offered by the agent.
type PermissionOption struct {
	ID   string `json:"optionId"`
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// PermissionRequest is session/request_permission in the daemon's terms.
type PermissionRequest struct {
	SessionID string
	Tool      ToolCall
	Options   []PermissionOption
	// ID is the executor host's number for the request, unique on that
	// host, and Offset its position in the host's outbox; both are empty
	// for an agent that is the daemon's own child. A request with an ID
	// may reach the daemon again after a restart (still pending on the
	// host): the daemon keeps one permission for it, under that id.
	ID     string
	Offset uint64
}

// PermissionOutcome is the user's answer: an option, or cancelled.
type PermissionOutcome struct {
	Cancelled bool
	OptionID  string
}

// ErrNoAnswer is what a Handler's RequestPermission returns when it
// cannot take the request at all (the session stopped taking anything:
// the daemon stops, or the session moved to another node), as opposed to
// the user or the daemon answering "cancelled". A local agent hears
// "cancelled", as for any error (its process ends with the daemon); an
// executor host's agent (internal/executor) hears nothing: the request
// stays pending on the host, and the next daemon's attach reports it
// again, to be answered there.
var ErrNoAnswer = errors.New("acp: no answer: the session takes no permission request")

// ErrAgentGone is the cause (context.Cause) of a Handler.RequestPermission
// context that ended because the connection to the agent did (it exited,
// or its stream broke), as opposed to the agent withdrawing the request:
// the caller then learns the outcome from the agent's exit, not from ctx.
var ErrAgentGone = errors.New("acp: the connection to the agent ended")

// client implements sdk.Client: the methods an agent may call on us.
type client struct {
	handler Handler
	// files serves fs/*; nil when the capability is not offered.
	files  *workspace.Root
	logger *slog.Logger
	// gone is the connection's Done, once the connection exists.
	gone atomic.Pointer[<-chan struct{}]
}

var _ sdk.Client = (*client)(nil)

// SessionUpdate is never called: inbound consumes every session/update
// before the SDK reads the line (it needs the window credit the SDK's
// dispatch cannot carry).
func (c *client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.logger.Error("session/update reached the SDK dispatch; dropped", "session", n.SessionId)
	return nil
}

func (c *client) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	req := PermissionRequest{SessionID: string(p.SessionId)}
	t := p.ToolCall
	req.Tool = ToolCall{ID: string(t.ToolCallId), Title: t.Title, Content: marshalNonEmpty(t.Content), RawInput: marshalAny(t.RawInput)}
	if t.Kind != nil {
		k := string(*t.Kind)
		req.Tool.Kind = &k
	}
	for _, o := range p.Options {
		req.Options = append(req.Options, PermissionOption{ID: string(o.OptionId), Name: o.Name, Kind: string(o.Kind)})
	}
	hctx, cancel := c.handlerContext(ctx)
	defer cancel()
	out, err := c.handler.RequestPermission(hctx, req)
	if err != nil || out.Cancelled {
		// A turn that ends while the question is open answers "cancelled",
		// as ACP requires, rather than leaving the agent waiting.
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{
			Cancelled: &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"},
		}}, nil
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{
		Selected: &sdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: sdk.PermissionOptionId(out.OptionID)},
	}}, nil
}

// handlerContext is ctx (the SDK's context of one agent request), whose
// cause says ErrAgentGone when it ends with the whole connection. The SDK
// ends a request's context both when the agent withdraws it and when the
// connection closes; only the first is an answer for the request itself.
func (c *client) handlerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		// The connection's context is the parent of the request's, so it
		// is already done when the request's ends with it.
		if g := c.gone.Load(); g != nil {
			select {
			case <-*g:
				cancel(ErrAgentGone)
				return
			default:
			}
		}
		cancel(context.Cause(ctx))
	})
	return hctx, func() { stop(); cancel(nil) }
}

// ReadTextFile and WriteTextFile are served by the session's workspace
// root; this adapter only turns its refusals into errors the agent can read.
func (c *client) ReadTextFile(ctx context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	if c.files == nil {
		return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsReadTextFile)
	}
	text, err := c.files.ReadText(ctx, p.Path, p.Line, p.Limit)
	if err != nil {
		return sdk.ReadTextFileResponse{}, fileError(err)
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

func (c *client) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	if c.files == nil {
		return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsWriteTextFile)
	}
	if err := c.files.WriteText(ctx, p.Path, p.Content); err != nil {
		return sdk.WriteTextFileResponse{}, fileError(err)
	}
	return sdk.WriteTextFileResponse{}, nil
}

// fileError maps a workspace refusal to JSON-RPC: the agent's mistakes are
// invalid params, the daemon's trouble (busy, timeout, I/O) is an internal
// error. The message is the workspace's own sentence, written for the
// agent (it names the file size and the way to read a range, for example);
// data carries the machine-readable reason.
func fileError(err error) error {
	var fe *workspace.FileError
	if !errors.As(err, &fe) {
		return err // context.Canceled: the SDK answers "request cancelled"
	}
	data := map[string]any{"path": fe.Path, "reason": string(fe.Kind)}
	if fe.Kind == workspace.FileTooLarge {
		data["size"], data["limit"] = fe.Size, fe.Limit
	}
	code := -32603
	if fe.Kind.AgentFault() {
		code = -32602
	}
	return &sdk.RequestError{Code: code, Message: fe.Message, Data: data}
}

// Terminals are not offered (the capability is not advertised).

func (c *client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
}

func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalKill)
}

func (c *client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalOutput)
}

func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalRelease)
}

func (c *client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalWaitForExit)
}
