package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/terminal"
	"github.com/tether/tether/internal/workspace"
)

// The terminal API (internal/terminal): a session's interactive terminals
// on its executor, as REST calls and as a WebSocket that bridges them. The
// WebSocket's output loop is a chain of long-poll reads by offset, so the
// same code serves a terminal in this daemon and one on a host, and a
// client reconnecting with the offset it reached misses nothing.

// terminalReadWait is how long each read of the WebSocket's output loop
// waits for output.
const terminalReadWait = 15 * time.Second

func terminalOf(t terminal.Info) Terminal {
	return Terminal{Id: t.ID, Cwd: t.Cwd, Cols: t.Cols, Rows: t.Rows, Offset: t.Offset, Exited: t.Exited, ExitCode: t.ExitCode, StartedAt: t.StartedAt}
}

func (h *handlers) ListTerminals(ctx context.Context, req ListTerminalsRequestObject) (ListTerminalsResponseObject, error) {
	res, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpTerminalList})
	if err != nil {
		return nil, err
	}
	out := TerminalList{Terminals: make([]Terminal, 0, len(res.Terminals))}
	for _, t := range res.Terminals {
		if t.Command == "" { // commands are listed as commands
			out.Terminals = append(out.Terminals, terminalOf(t))
		}
	}
	return ListTerminals200JSONResponse(out), nil
}

func (h *handlers) OpenTerminal(ctx context.Context, req OpenTerminalRequestObject) (OpenTerminalResponseObject, error) {
	r := workspace.Request{Op: workspace.OpTerminalOpen}
	if b := req.Body; b != nil {
		r.Cols, r.Rows = deref(b.Cols), deref(b.Rows)
	}
	res, err := h.workspace(ctx, req.Id, r)
	if err != nil {
		return nil, err
	}
	return OpenTerminal201JSONResponse(terminalOf(*res.Terminal)), nil
}

func (h *handlers) CloseTerminal(ctx context.Context, req CloseTerminalRequestObject) (CloseTerminalResponseObject, error) {
	res, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpTerminalClose, Terminal: req.TerminalId})
	if err != nil {
		return nil, err
	}
	return CloseTerminal200JSONResponse(terminalOf(*res.Terminal)), nil
}

func (h *handlers) WriteTerminal(ctx context.Context, req WriteTerminalRequestObject) (WriteTerminalResponseObject, error) {
	if _, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpTerminalWrite, Terminal: req.TerminalId, Data: []byte(req.Body.Text)}); err != nil {
		return nil, err
	}
	return WriteTerminal204Response{}, nil
}

func (h *handlers) ReadTerminal(ctx context.Context, req ReadTerminalRequestObject) (ReadTerminalResponseObject, error) {
	res, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpTerminalRead, Terminal: req.TerminalId,
		Offset: deref(req.Params.Offset), WaitMS: deref(req.Params.Wait)})
	if err != nil {
		return nil, err
	}
	c := res.Output
	// No output within the wait is "" in base64, never null: data is a
	// required string of the contract.
	data := c.Data
	if data == nil {
		data = []byte{}
	}
	return ReadTerminal200JSONResponse(TerminalOutput{Offset: c.Offset, End: c.End, Data: data, Exited: c.Exited, ExitCode: c.ExitCode}), nil
}

func (h *handlers) ResizeTerminal(ctx context.Context, req ResizeTerminalRequestObject) (ResizeTerminalResponseObject, error) {
	if _, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpTerminalResize, Terminal: req.TerminalId,
		Cols: req.Body.Cols, Rows: req.Body.Rows}); err != nil {
		return nil, err
	}
	res, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpTerminalList})
	if err != nil {
		return nil, err
	}
	for _, t := range res.Terminals {
		if t.ID == req.TerminalId {
			return ResizeTerminal200JSONResponse(terminalOf(t)), nil
		}
	}
	return nil, errcode.New(errcode.TerminalNotFound, "no terminal %q in this session", req.TerminalId)
}

// AttachTerminal checks the terminal (a problem+json answer, before any
// upgrade) and answers with the WebSocket bridge.
func (h *handlers) AttachTerminal(ctx context.Context, req AttachTerminalRequestObject) (AttachTerminalResponseObject, error) {
	r, _ := ctx.Value(httpRequestKey{}).(*http.Request)
	if r == nil {
		return nil, errcode.New(errcode.Internal, "no HTTP request to upgrade")
	}
	off := deref(req.Params.Offset)
	if _, err := h.workspace(ctx, req.Id, workspace.Request{Op: workspace.OpTerminalRead, Terminal: req.TerminalId, Offset: off}); err != nil {
		return nil, err
	}
	return &terminalSocket{h: h, r: r, session: req.Id, terminal: req.TerminalId, offset: off}, nil
}

// httpRequestKey carries the request into the handlers that need it
// whole (the WebSocket upgrade, a stream's protocol version): withHTTPRequest
// puts it there.
type httpRequestKey struct{}

// withHTTPRequest is the strict middleware that gives AttachTerminal and
// the event streams their request.
func withHTTPRequest(f StrictHandlerFunc, operationID string) StrictHandlerFunc {
	switch operationID {
	case "AttachTerminal", "StreamSessionEvents", "StreamGlobalEvents": // the streams may park (sseparked.go)
	default:
		return f
	}
	return func(c echo.Context, request any) (any, error) {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), httpRequestKey{}, r)))
		return f(c, request)
	}
}

// terminalSocket is the WebSocket bridge of one terminal.
type terminalSocket struct {
	h                 *handlers
	r                 *http.Request
	session, terminal string
	offset            int64
}

// socketMessage is a text frame of the terminal WebSocket, either way.
type socketMessage struct {
	Type     string `json:"type"`
	Offset   *int64 `json:"offset,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Cols     int    `json:"cols,omitempty"`
	Rows     int    `json:"rows,omitempty"`
	Error    string `json:"error,omitempty"`
}

// VisitAttachTerminalResponse upgrades and runs the bridge until either
// side ends.
func (s *terminalSocket) VisitAttachTerminalResponse(w http.ResponseWriter) error {
	// The page's own origin is always let in; other origins only if
	// --cors-origin names them (as hosts: that is what Accept matches).
	var origins []string
	for _, o := range s.h.cfg.CORSOrigins {
		if u, err := url.Parse(o); err == nil && u.Host != "" {
			origins = append(origins, u.Host)
		}
	}
	c, err := websocket.Accept(w, s.r, &websocket.AcceptOptions{OriginPatterns: origins})
	if err != nil {
		return nil // Accept answered the client
	}
	defer c.CloseNow()
	ctx, cancel := context.WithCancel(s.r.Context())
	defer cancel()
	send := func(m socketMessage) error {
		b, _ := json.Marshal(m)
		return c.Write(ctx, websocket.MessageText, b)
	}
	if err := send(socketMessage{Type: "hello", Offset: &s.offset}); err != nil {
		return nil
	}
	go func() {
		defer cancel()
		s.input(ctx, c)
	}()
	off := s.offset
	for {
		res, err := s.h.workspace(ctx, s.session, workspace.Request{Op: workspace.OpTerminalRead, Terminal: s.terminal, Offset: off,
			WaitMS: int(terminalReadWait / time.Millisecond)})
		if err != nil {
			if ctx.Err() == nil {
				_ = send(socketMessage{Type: "error", Error: string(errcode.CodeOf(err))})
				_ = c.Close(websocket.StatusTryAgainLater, "terminal unavailable")
			}
			return nil
		}
		out := res.Output
		if len(out.Data) > 0 {
			frame := make([]byte, 8+len(out.Data))
			binary.BigEndian.PutUint64(frame, uint64(out.Offset))
			copy(frame[8:], out.Data)
			if err := c.Write(ctx, websocket.MessageBinary, frame); err != nil {
				return nil
			}
		}
		off = out.End
		if out.Exited {
			_ = send(socketMessage{Type: "exit", ExitCode: out.ExitCode})
			_ = c.Close(websocket.StatusNormalClosure, "the shell exited")
			return nil
		}
	}
}

// input types the client's binary frames and applies its resizes.
func (s *terminalSocket) input(ctx context.Context, c *websocket.Conn) {
	c.SetReadLimit(1 << 20)
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		req := workspace.Request{Op: workspace.OpTerminalWrite, Terminal: s.terminal, Data: data}
		if typ == websocket.MessageText {
			var m socketMessage
			if json.Unmarshal(data, &m) != nil || m.Type != "resize" {
				continue
			}
			req = workspace.Request{Op: workspace.OpTerminalResize, Terminal: s.terminal, Cols: m.Cols, Rows: m.Rows}
		}
		if _, err := s.h.workspace(ctx, s.session, req); err != nil {
			var de *errcode.Error
			if errors.As(err, &de) && de.Code == errcode.TerminalExited {
				return
			}
		}
	}
}

func commandOf(c store.Command) Command {
	out := Command{Id: c.ID, Command: c.Command, State: CommandState(c.State), ExitCode: c.ExitCode, CreatedAt: c.CreatedAt, EndedAt: c.EndedAt,
		OutputBytes: c.OutputBytes, DroppedBytes: c.DroppedBytes}
	if c.Truncated != "" {
		t := CommandTruncated(c.Truncated)
		out.Truncated = &t
	}
	return out
}

func (h *handlers) RunCommand(ctx context.Context, req RunCommandRequestObject) (RunCommandResponseObject, error) {
	c, err := h.cfg.Sessions.RunCommand(ctx, req.Id, req.Body.Command)
	if err != nil {
		return nil, err
	}
	return RunCommand202JSONResponse(commandOf(c)), nil
}

func (h *handlers) ListCommands(ctx context.Context, req ListCommandsRequestObject) (ListCommandsResponseObject, error) {
	cs, err := h.cfg.Sessions.ListCommands(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	out := CommandList{Commands: make([]Command, 0, len(cs))}
	for _, c := range cs {
		out.Commands = append(out.Commands, commandOf(c))
	}
	return ListCommands200JSONResponse(out), nil
}
