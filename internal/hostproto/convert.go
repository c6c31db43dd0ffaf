package hostproto

import (
	"context"
	"encoding/json"
	"errors"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
)

// Conversions between the acp values the daemon and the host use and
// their wire form. Each pair round-trips: X(FromX(v)) equals v.

// FromCapabilities converts what an agent announced.
func FromCapabilities(c acp.Capabilities) Capabilities {
	out := Capabilities{ProtocolVersion: c.ProtocolVersion, LoadSession: c.LoadSession, Resume: c.Resume, Fork: c.Fork,
		Image: c.Image, Audio: c.Audio, EmbeddedContext: c.EmbeddedContext, AgentName: c.AgentName, AgentVersion: c.AgentVersion}
	for _, m := range c.AuthMethods {
		out.AuthMethods = append(out.AuthMethods, AuthMethod(m))
	}
	return out
}

// ACP returns c as acp.Capabilities.
func (c Capabilities) ACP() acp.Capabilities {
	out := acp.Capabilities{ProtocolVersion: c.ProtocolVersion, LoadSession: c.LoadSession, Resume: c.Resume, Fork: c.Fork,
		Image: c.Image, Audio: c.Audio, EmbeddedContext: c.EmbeddedContext, AgentName: c.AgentName, AgentVersion: c.AgentVersion}
	for _, m := range c.AuthMethods {
		out.AuthMethods = append(out.AuthMethods, acp.AuthMethod(m))
	}
	return out
}

// FromSessionParams converts session/new and load parameters.
func FromSessionParams(p acp.SessionParams) SessionParams { return SessionParams(p) }

// ACP returns p as acp.SessionParams.
func (p SessionParams) ACP() acp.SessionParams { return acp.SessionParams(p) }

// FromSessionOptions converts an agent's modes and config options.
func FromSessionOptions(o acp.SessionOptions) SessionOptions { return SessionOptions(o) }

// ACP returns o as acp.SessionOptions.
func (o SessionOptions) ACP() acp.SessionOptions { return acp.SessionOptions(o) }

// FromUpdate converts one session/update.
func FromUpdate(u acp.Update) Update {
	out := Update{AcpSessionID: u.SessionID, Kind: u.Kind, Text: u.Text, Block: u.Block, MessageID: u.MessageID, Data: u.Data}
	if u.Tool != nil {
		t := FromToolCall(*u.Tool)
		out.Tool = &t
	}
	return out
}

// ACP returns u as acp.Update.
func (u Update) ACP() acp.Update {
	out := acp.Update{SessionID: u.AcpSessionID, Kind: u.Kind, Text: u.Text, Block: u.Block, MessageID: u.MessageID, Data: u.Data}
	if u.Tool != nil {
		t := u.Tool.ACP()
		out.Tool = &t
	}
	return out
}

// FromToolCall converts a tool call start or update.
func FromToolCall(t acp.ToolCall) ToolCall { return ToolCall(t) }

// ACP returns t as acp.ToolCall.
func (t ToolCall) ACP() acp.ToolCall { return acp.ToolCall(t) }

// FromPermissionRequest converts an agent's question; id is the host's
// number for it.
func FromPermissionRequest(id string, r acp.PermissionRequest) PermissionRequest {
	return PermissionRequest{RequestID: id, AcpSessionID: r.SessionID, Tool: FromToolCall(r.Tool), Options: r.Options}
}

// ACP returns r as acp.PermissionRequest (without the host's id).
func (r PermissionRequest) ACP() acp.PermissionRequest {
	return acp.PermissionRequest{SessionID: r.AcpSessionID, Tool: r.Tool.ACP(), Options: r.Options}
}

// FromExit converts how an agent ended.
func FromExit(e acp.Exit) Exit { return Exit{Code: e.Code, Signal: e.Signal, Stderr: e.Stderr} }

// ACP returns e as acp.Exit (Lost has no acp counterpart; the caller
// reads it).
func (e Exit) ACP() acp.Exit { return acp.Exit{Code: e.Code, Signal: e.Signal, Stderr: e.Stderr} }

// ErrorFrom turns the error a command failed with into its wire form: an
// *errcode.Error keeps its code; an agent's JSON-RPC error (also inside
// an *acp.AuthenticateError) travels as RPC, a deadline as
// errcode.Timeout, anything else as errcode.Internal.
func ErrorFrom(err error) *ErrorBody {
	if err == nil {
		return nil
	}
	body := &ErrorBody{Code: errcode.Internal, Message: err.Error()}
	var de *errcode.Error
	if errors.As(err, &de) {
		body.Code, body.Message = de.Code, de.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		body.Code = errcode.Timeout
	}
	var ae *acp.AuthenticateError
	if errors.As(err, &ae) {
		body.Auth = &AuthFailure{Method: ae.Method, Capabilities: FromCapabilities(ae.Capabilities)}
	}
	var re *sdk.RequestError
	if errors.As(err, &re) {
		rpc := &RPCError{Code: re.Code, Message: re.Message}
		if re.Data != nil {
			if b, jerr := json.Marshal(re.Data); jerr == nil {
				rpc.Data = b
			}
		}
		body.RPC = rpc
	}
	return body
}

// Error rebuilds the error ErrorFrom encoded: an agent's JSON-RPC error as
// the *sdk.RequestError acp.Classify reads (inside an
// *acp.AuthenticateError when Auth is set), errcode.Timeout wrapping
// context.DeadlineExceeded, anything else as an *errcode.Error.
func (b *ErrorBody) Error() error {
	var err error
	switch {
	case b.RPC != nil:
		re := &sdk.RequestError{Code: b.RPC.Code, Message: b.RPC.Message}
		if len(b.RPC.Data) > 0 {
			var d any
			if json.Unmarshal(b.RPC.Data, &d) == nil {
				re.Data = d
			}
		}
		err = re
	case b.Code == errcode.Timeout:
		err = errcode.Wrap(errcode.Timeout, context.DeadlineExceeded, "%s", b.Message)
	default:
		err = errcode.New(b.Code, "%s", b.Message)
	}
	if b.Auth != nil {
		err = &acp.AuthenticateError{Method: b.Auth.Method, Capabilities: b.Auth.Capabilities.ACP(), Err: err}
	}
	return err
}
