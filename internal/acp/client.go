package acp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
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
}

// PermissionOutcome is the user's answer: an option, or cancelled.
type PermissionOutcome struct {
	Cancelled bool
	OptionID  string
}

// client implements sdk.Client: the methods an agent may call on us.
type client struct {
	handler Handler
	root    string
	logger  *slog.Logger
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
	out, err := c.handler.RequestPermission(ctx, req)
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

func (c *client) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	path, err := c.confine(p.Path, false)
	if err != nil {
		return sdk.ReadTextFileResponse{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, sdk.NewInternalError(map[string]any{"path": p.Path, "error": err.Error()})
	}
	text := string(b)
	if p.Line != nil || p.Limit != nil {
		lines := strings.SplitAfter(text, "\n")
		start := 0
		if p.Line != nil && *p.Line > 1 {
			start = min(*p.Line-1, len(lines))
		}
		end := len(lines)
		if p.Limit != nil && *p.Limit >= 0 {
			end = min(start+*p.Limit, len(lines))
		}
		text = strings.Join(lines[start:end], "")
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

func (c *client) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	path, err := c.confine(p.Path, true)
	if err != nil {
		return sdk.WriteTextFileResponse{}, err
	}
	if err := os.WriteFile(path, []byte(p.Content), 0o644); err != nil {
		return sdk.WriteTextFileResponse{}, sdk.NewInternalError(map[string]any{"path": p.Path, "error": err.Error()})
	}
	return sdk.WriteTextFileResponse{}, nil
}

// confine resolves path (absolute, per ACP) and refuses anything that ends
// up outside the session's root, symlinks included. For writes the file may
// not exist yet, so its parent directory is resolved instead.
func (c *client) confine(path string, forWrite bool) (string, error) {
	if c.root == "" {
		return "", sdk.NewMethodNotFound("fs")
	}
	if !filepath.IsAbs(path) {
		return "", sdk.NewInvalidParams(map[string]any{"path": path, "error": "path must be absolute"})
	}
	root, err := filepath.EvalSymlinks(c.root)
	if err != nil {
		return "", sdk.NewInternalError(map[string]any{"error": "session directory is gone"})
	}
	clean := filepath.Clean(path)
	resolved, err := filepath.EvalSymlinks(clean)
	if err != nil && forWrite && errors.Is(err, os.ErrNotExist) {
		if _, lerr := os.Lstat(clean); lerr == nil {
			// The name exists but does not resolve: a dangling symlink,
			// which os.WriteFile would follow to wherever it points.
			return "", sdk.NewInvalidParams(map[string]any{"path": path, "error": "refusing to write through a dangling symlink"})
		}
		dir, derr := filepath.EvalSymlinks(filepath.Dir(clean))
		if derr != nil {
			return "", sdk.NewInvalidParams(map[string]any{"path": path, "error": derr.Error()})
		}
		resolved, err = filepath.Join(dir, filepath.Base(clean)), nil
	}
	if err != nil {
		return "", sdk.NewInvalidParams(map[string]any{"path": path, "error": err.Error()})
	}
	if resolved != root && !strings.HasPrefix(resolved, root+string(filepath.Separator)) {
		return "", sdk.NewInvalidParams(map[string]any{"path": path, "error": fmt.Sprintf("outside the session directory %s", c.root)})
	}
	return resolved, nil
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
