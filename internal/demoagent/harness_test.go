package demoagent_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/demoagent"
)

const waitTimeout = 5 * time.Second

// recClient is a minimal ACP client that records what the agent sends.
type recClient struct {
	mu      sync.Mutex
	updates []acp.SessionNotification
	reads   []string
	// permission answers session/request_permission; nil selects allow_once.
	permission func(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
}

func (c *recClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n)
	return nil
}

func (c *recClient) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	f := c.permission
	c.mu.Unlock()
	if f != nil {
		return f(ctx, p)
	}
	return selected("allow_once"), nil
}

func selected(id string) acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
		Selected: &acp.RequestPermissionOutcomeSelected{OptionId: acp.PermissionOptionId(id)}}}
}

func cancelledOutcome() acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
		Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
}

func (c *recClient) ReadTextFile(_ context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	c.mu.Lock()
	c.reads = append(c.reads, p.Path)
	c.mu.Unlock()
	b, err := os.ReadFile(p.Path)
	if err != nil {
		return acp.ReadTextFileResponse{}, err
	}
	return acp.ReadTextFileResponse{Content: string(b)}, nil
}

func (c *recClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (c *recClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *recClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *recClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *recClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *recClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

// updatesFor returns the updates recorded for sid, in arrival order.
func (c *recClient) updatesFor(sid acp.SessionId) []acp.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []acp.SessionUpdate
	for _, n := range c.updates {
		if n.SessionId == sid {
			out = append(out, n.Update)
		}
	}
	return out
}

func (c *recClient) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = nil
}

// lineRecorder keeps every line the agent wrote, to check wire order.
type lineRecorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *lineRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func (r *lineRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Split(strings.TrimSpace(r.buf.String()), "\n")
}

// harness runs demoagent.Run in-process, connected to a client over pipes.
type harness struct {
	t      *testing.T
	conn   *acp.ClientSideConnection
	client *recClient
	wire   *lineRecorder
	inR    *io.PipeReader
	inW    *io.PipeWriter
	outW   *io.PipeWriter
	done   chan error
	once   sync.Once
}

// startAgent runs an agent over stateDir ("" leaves --state-dir unset).
func startAgent(t *testing.T, stateDir string, flags ...string) *harness {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &harness{t: t, client: &recClient{}, wire: &lineRecorder{}, inR: inR, inW: inW, outW: outW, done: make(chan error, 1)}
	args := flags
	if stateDir != "" {
		args = append([]string{"--state-dir", stateDir}, flags...)
	}
	go func() {
		err := demoagent.Run(context.Background(), args, inR, outW, io.Discard)
		outW.Close()
		h.done <- err
	}()
	h.conn = acp.NewClientSideConnection(h.client, inW, io.TeeReader(outR, h.wire))
	h.conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(h.stop)
	return h
}

// stop closes the agent's stdin, as a client shutting down does, and waits
// for Run to return.
func (h *harness) stop() {
	h.t.Helper()
	h.once.Do(func() {
		h.inW.Close()
		select {
		case err := <-h.done:
			if err != nil {
				h.t.Errorf("Run: got error %v, want nil", err)
			}
		case <-time.After(waitTimeout):
			h.t.Errorf("Run did not return after stdin was closed")
		}
	})
}

// kill simulates the agent process dying: both pipes break.
func (h *harness) kill() {
	h.outW.CloseWithError(io.ErrClosedPipe)
	h.inR.CloseWithError(io.ErrClosedPipe)
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) initialize(caps acp.ClientCapabilities) acp.InitializeResponse {
	h.t.Helper()
	resp, err := h.conn.Initialize(h.ctx(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientCapabilities: caps})
	if err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
	return resp
}

func (h *harness) newSession(cwd string) acp.SessionId {
	h.t.Helper()
	resp, err := h.conn.NewSession(h.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		h.t.Fatalf("session/new: %v", err)
	}
	return resp.SessionId
}

func (h *harness) prompt(sid acp.SessionId, text string) (acp.PromptResponse, error) {
	return h.conn.Prompt(h.ctx(), acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

func (h *harness) mustPrompt(sid acp.SessionId, text string, want acp.StopReason) {
	h.t.Helper()
	resp, err := h.prompt(sid, text)
	if err != nil {
		h.t.Fatalf("prompt %q: %v", text, err)
	}
	if resp.StopReason != want {
		h.t.Fatalf("prompt %q: got stopReason %q, want %q", text, resp.StopReason, want)
	}
}

// waitFor polls until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kind names an update by its sessionUpdate discriminator.
func kind(u acp.SessionUpdate) string {
	switch {
	case u.UserMessageChunk != nil:
		return "user_message_chunk"
	case u.AgentMessageChunk != nil:
		return "agent_message_chunk"
	case u.AgentThoughtChunk != nil:
		return "agent_thought_chunk"
	case u.ToolCall != nil:
		return "tool_call"
	case u.ToolCallUpdate != nil:
		return "tool_call_update"
	case u.Plan != nil:
		return "plan"
	case u.AvailableCommandsUpdate != nil:
		return "available_commands_update"
	default:
		return "other"
	}
}

// conversation drops updates that are not part of a turn.
func conversation(us []acp.SessionUpdate) []acp.SessionUpdate {
	var out []acp.SessionUpdate
	for _, u := range us {
		if k := kind(u); k != "available_commands_update" && k != "other" {
			out = append(out, u)
		}
	}
	return out
}

func kinds(us []acp.SessionUpdate) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = kind(u)
	}
	return out
}

// text renders a chunk update as "kind:text" for compact comparisons.
func text(u acp.SessionUpdate) string {
	var c *acp.ContentBlock
	switch {
	case u.UserMessageChunk != nil:
		c = &u.UserMessageChunk.Content
	case u.AgentMessageChunk != nil:
		c = &u.AgentMessageChunk.Content
	case u.AgentThoughtChunk != nil:
		c = &u.AgentThoughtChunk.Content
	}
	if c == nil || c.Text == nil {
		return kind(u)
	}
	return kind(u) + ":" + c.Text.Text
}

// reply concatenates the agent message chunks.
func reply(us []acp.SessionUpdate) string {
	var b strings.Builder
	for _, u := range us {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			b.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

func toolContent(u *acp.SessionToolCallUpdate) string {
	var b strings.Builder
	for _, c := range u.Content {
		if c.Content != nil && c.Content.Content.Text != nil {
			b.WriteString(c.Content.Content.Text.Text)
		}
	}
	return b.String()
}

// rpcError extracts the JSON-RPC error from a client call.
func rpcError(t *testing.T, err error) *acp.RequestError {
	t.Helper()
	var re *acp.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("got error %v (%T), want *acp.RequestError", err, err)
	}
	return re
}

func dataField(re *acp.RequestError, key string) any {
	m, _ := re.Data.(map[string]any)
	return m[key]
}
