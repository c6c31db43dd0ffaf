package demoagent_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/demoagent"
)

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestInitializeCapabilities(t *testing.T) {
	tests := []struct {
		flags      []string
		wantLoad   bool
		wantResume bool
		wantAuth   int
		noImage    bool
	}{
		{flags: nil, wantLoad: true, wantResume: true},
		{flags: []string{"--no-load"}, wantLoad: false, wantResume: true},
		{flags: []string{"--no-resume"}, wantLoad: true, wantResume: false},
		{flags: []string{"--resume-unsupported"}, wantLoad: true, wantResume: true},
		{flags: []string{"--no-load", "--no-resume"}, wantLoad: false, wantResume: false},
		{flags: []string{"--auth-required"}, wantLoad: true, wantResume: true, wantAuth: 1},
		{flags: []string{"--no-image"}, wantLoad: true, wantResume: true, noImage: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(append([]string{"flags"}, tt.flags...), " "), func(t *testing.T) {
			h := startAgent(t, t.TempDir(), tt.flags...)
			resp := h.initialize(acp.ClientCapabilities{})
			if resp.ProtocolVersion != 1 {
				t.Errorf("protocolVersion: got %d, want 1", resp.ProtocolVersion)
			}
			caps := resp.AgentCapabilities
			if caps.LoadSession != tt.wantLoad {
				t.Errorf("loadSession: got %v, want %v", caps.LoadSession, tt.wantLoad)
			}
			if got := caps.SessionCapabilities.Resume != nil; got != tt.wantResume {
				t.Errorf("sessionCapabilities.resume advertised: got %v, want %v", got, tt.wantResume)
			}
			pc := caps.PromptCapabilities
			if pc.Image == tt.noImage || pc.Audio || !pc.EmbeddedContext {
				t.Errorf("promptCapabilities: got %+v, want image=%v audio=false embeddedContext=true", pc, !tt.noImage)
			}
			if resp.AgentInfo == nil || resp.AgentInfo.Name != "tether-demo-agent" {
				t.Errorf("agentInfo: got %+v, want name tether-demo-agent", resp.AgentInfo)
			}
			if len(resp.AuthMethods) != tt.wantAuth {
				t.Errorf("authMethods: got %d, want %d", len(resp.AuthMethods), tt.wantAuth)
			}
		})
	}
}

func TestPlainPrompt(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		clientFS  bool
		wantTitle string
		wantTool  string // substring of the tool result
		wantReply string // substring of the reply
	}{
		{name: "readme", files: map[string]string{"README.md": "hello readme", "a.txt": "aaa"},
			wantTitle: "Read README.md", wantTool: "hello readme", wantReply: "I looked at README.md (12 bytes)"},
		{name: "first file by name", files: map[string]string{"b.txt": "bee", "a.txt": "ay"},
			wantTitle: "Read a.txt", wantTool: "ay", wantReply: "I looked at a.txt (2 bytes)"},
		{name: "client fs", files: map[string]string{"README.md": "via client"}, clientFS: true,
			wantTitle: "Read README.md", wantTool: "via client", wantReply: "README.md (10 bytes)"},
		{name: "no files", wantTitle: "Read working directory", wantTool: "no files", wantReply: "no files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cwd := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, cwd, name, content)
			}
			h := startAgent(t, t.TempDir())
			h.initialize(acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: tt.clientFS}})
			sid := h.newSession(cwd)
			h.mustPrompt(sid, "  hi there  ", acp.StopReasonEndTurn)

			us := conversation(h.client.updatesFor(sid))
			gotKinds := kinds(us)
			wantPrefix := []string{"plan", "tool_call", "tool_call_update", "plan"}
			if len(gotKinds) < 7 || !slices.Equal(gotKinds[:4], wantPrefix) {
				t.Fatalf("update kinds: got %v, want %v then >= 3 agent_message_chunk", gotKinds, wantPrefix)
			}
			for _, k := range gotKinds[4:] {
				if k != "agent_message_chunk" {
					t.Fatalf("update kinds: got %v, want only agent_message_chunk after the plan", gotKinds)
				}
			}
			if n := len(us[0].Plan.Entries); n < 2 || n > 3 {
				t.Errorf("plan entries: got %d, want 2-3", n)
			}
			for _, e := range us[3].Plan.Entries {
				if e.Status != acp.PlanEntryStatusCompleted {
					t.Errorf("final plan entry %q: got status %q, want completed", e.Content, e.Status)
				}
			}
			tc := us[1].ToolCall
			if tc.Kind != acp.ToolKindRead || tc.Title != tt.wantTitle {
				t.Errorf("tool_call: got kind %q title %q, want read %q", tc.Kind, tc.Title, tt.wantTitle)
			}
			tu := us[2].ToolCallUpdate
			if tu.ToolCallId != tc.ToolCallId || tu.Status == nil || *tu.Status != acp.ToolCallStatusCompleted {
				t.Errorf("tool_call_update: got %+v, want completed for %s", tu, tc.ToolCallId)
			}
			if got := toolContent(tu); !strings.Contains(got, tt.wantTool) {
				t.Errorf("tool result: got %q, want it to contain %q", got, tt.wantTool)
			}
			got := reply(us)
			if !strings.HasPrefix(got, "You said: hi there.") || !strings.Contains(got, tt.wantReply) {
				t.Errorf("reply: got %q, want prefix %q and %q", got, "You said: hi there.", tt.wantReply)
			}
			h.client.mu.Lock()
			reads := len(h.client.reads)
			h.client.mu.Unlock()
			if wantReads := map[bool]int{true: 1, false: 0}[tt.clientFS]; reads != wantReads {
				t.Errorf("fs/read_text_file calls: got %d, want %d", reads, wantReads)
			}
		})
	}
}

func TestAvailableCommandsAfterNewResponse(t *testing.T) {
	h := startAgent(t, t.TempDir())
	h.initialize(acp.ClientCapabilities{})
	sid := h.newSession(t.TempDir())
	var cmds []acp.AvailableCommand
	waitFor(t, "available_commands_update", func() bool {
		for _, u := range h.client.updatesFor(sid) {
			if u.AvailableCommandsUpdate != nil {
				cmds = u.AvailableCommandsUpdate.AvailableCommands
				return true
			}
		}
		return false
	})
	var names []string
	for _, c := range cmds {
		names = append(names, c.Name)
	}
	for _, want := range []string{"echo", "stream", "tool", "permission", "hang", "sleep", "crash", "crash-in-tool", "error", "thought", "unknown-update", "work"} {
		if !slices.Contains(names, want) {
			t.Errorf("available commands: got %v, want %q among them", names, want)
		}
	}
	// On the wire, the session/new result must come first.
	respAt, updAt := -1, -1
	for i, l := range h.wire.lines() {
		if strings.Contains(l, `"result"`) && strings.Contains(l, string(sid)) && respAt < 0 {
			respAt = i
		}
		if strings.Contains(l, "available_commands_update") && updAt < 0 {
			updAt = i
		}
	}
	if respAt < 0 || updAt < respAt {
		t.Errorf("wire order: got response at line %d and update at line %d, want update after response", respAt, updAt)
	}
}

func TestStreamAndSimpleCommands(t *testing.T) {
	tests := []struct {
		prompt string
		want   []string
	}{
		{"/stream 4", []string{"agent_message_chunk:chunk 1\n", "agent_message_chunk:chunk 2\n", "agent_message_chunk:chunk 3\n", "agent_message_chunk:chunk 4\n"}},
		{"/stream 0", nil},
		{"/stream 3 2 5", []string{"agent_message_chunk:chunk 1\n", "agent_message_chunk:chunk 2\n", "agent_message_chunk:chunk 3\n"}},
		{"/stream 3 2", []string{"agent_message_chunk:usage: /stream N [EVERY MS]"}},
		{"/stamped 3 2", []string{"agent_message_chunk:usage: /stamped N [EVERY MS]"}},
		{"/stamped 0", nil},
		{"/echo hello   world", []string{"agent_message_chunk:hello   world"}},
		{"/thought pondering", []string{"agent_thought_chunk:pondering", "agent_message_chunk:Done thinking."}},
		{"/sleep 10", []string{"agent_message_chunk:sleeping 10 ms\n", "agent_message_chunk:done"}},
		{"/nope x", []string{"agent_message_chunk:unknown command /nope"}},
	}
	h := startAgent(t, t.TempDir())
	h.initialize(acp.ClientCapabilities{})
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			sid := h.newSession(t.TempDir())
			h.mustPrompt(sid, tt.prompt, acp.StopReasonEndTurn)
			var got []string
			for _, u := range conversation(h.client.updatesFor(sid)) {
				if u.UserMessageChunk == nil {
					got = append(got, text(u))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("updates: got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStampedChunks: /stamped streams like /stream, each chunk carrying
// the time it was sent, taken while the prompt ran and never going back.
func TestStampedChunks(t *testing.T) {
	h := startAgent(t, t.TempDir())
	h.initialize(acp.ClientCapabilities{})
	sid := h.newSession(t.TempDir())
	before := time.Now().UnixNano()
	h.mustPrompt(sid, "/stamped 5 2 1", acp.StopReasonEndTurn)
	after := time.Now().UnixNano()
	var got []string
	for _, u := range conversation(h.client.updatesFor(sid)) {
		if u.UserMessageChunk == nil {
			got = append(got, text(u))
		}
	}
	if len(got) != 5 {
		t.Fatalf("updates: got %q, want 5 stamped chunks", got)
	}
	prev := before
	for i, g := range got {
		var n int
		var at int64
		if _, err := fmt.Sscanf(g, "agent_message_chunk:chunk %d %d\n", &n, &at); err != nil || n != i+1 {
			t.Fatalf("chunk %d: got %q, want \"chunk %d <unix ns>\\n\" (%v)", i+1, g, i+1, err)
		}
		if at < prev || at > after {
			t.Errorf("chunk %d: got stamp %d, want between %d and %d", n, at, prev, after)
		}
		prev = at
	}
}

func TestToolCommands(t *testing.T) {
	cwd := t.TempDir()
	writeFile(t, cwd, "notes.txt", strings.Repeat("x", 300))
	outside := filepath.Join(filepath.Dir(cwd), "outside.txt")
	tests := []struct {
		prompt     string
		wantStatus acp.ToolCallStatus
		wantText   string
	}{
		{"/tool read notes.txt", acp.ToolCallStatusCompleted, strings.Repeat("x", 200)},
		{"/tool read " + filepath.Join(cwd, "notes.txt"), acp.ToolCallStatusCompleted, "xxx"},
		{"/tool read ../outside.txt", acp.ToolCallStatusFailed, "escapes"},
		{"/tool read " + outside, acp.ToolCallStatusFailed, "escapes"},
		{"/tool read missing.txt", acp.ToolCallStatusFailed, "missing.txt"},
		{"/tool fail", acp.ToolCallStatusFailed, "simulated error"},
		{"/tool sleep 5", acp.ToolCallStatusCompleted, "slept 5 ms"},
	}
	h := startAgent(t, t.TempDir())
	h.initialize(acp.ClientCapabilities{})
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			sid := h.newSession(cwd)
			h.mustPrompt(sid, tt.prompt, acp.StopReasonEndTurn)
			us := conversation(h.client.updatesFor(sid))
			if got := kinds(us); !slices.Equal(got, []string{"tool_call", "tool_call_update"}) {
				t.Fatalf("kinds: got %v, want tool_call, tool_call_update", got)
			}
			tu := us[1].ToolCallUpdate
			if tu.Status == nil || *tu.Status != tt.wantStatus {
				t.Errorf("status: got %v, want %q", tu.Status, tt.wantStatus)
			}
			if got := toolContent(tu); !strings.Contains(got, tt.wantText) {
				t.Errorf("content: got %q, want it to contain %q", got, tt.wantText)
			}
		})
	}
}

func TestPermission(t *testing.T) {
	t.Run("selected", func(t *testing.T) {
		h := startAgent(t, t.TempDir())
		h.initialize(acp.ClientCapabilities{})
		var asked acp.RequestPermissionRequest
		h.client.permission = func(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
			asked = p
			return selected("allow_always"), nil
		}
		sid := h.newSession(t.TempDir())
		h.mustPrompt(sid, "/permission", acp.StopReasonEndTurn)
		var ids []string
		for _, o := range asked.Options {
			ids = append(ids, string(o.OptionId)+"/"+string(o.Kind))
		}
		if want := []string{"allow_once/allow_once", "allow_always/allow_always", "reject_once/reject_once"}; !slices.Equal(ids, want) {
			t.Errorf("options: got %v, want %v", ids, want)
		}
		us := conversation(h.client.updatesFor(sid))
		if got, want := kinds(us), []string{"tool_call", "agent_message_chunk", "tool_call_update"}; !slices.Equal(got, want) {
			t.Fatalf("kinds: got %v, want %v", got, want)
		}
		if us[0].ToolCall.Kind != acp.ToolKindEdit || us[0].ToolCall.Status != acp.ToolCallStatusPending {
			t.Errorf("tool_call: got kind %q status %q, want edit pending", us[0].ToolCall.Kind, us[0].ToolCall.Status)
		}
		// The question carries the diff it asks about, for a client to show.
		if c := asked.ToolCall.Content; len(c) != 1 || c[0].Diff == nil || !strings.HasSuffix(c[0].Diff.Path, "demo.txt") || c[0].Diff.OldText != nil || c[0].Diff.NewText != "A line the demo agent would add.\n" {
			t.Errorf("permission tool call content: got %+v, want the diff adding a line to a new demo.txt", c)
		}
		if got := reply(us); got != "Permission outcome: selected allow_always" {
			t.Errorf("reply: got %q, want %q", got, "Permission outcome: selected allow_always")
		}
		if st := us[2].ToolCallUpdate.Status; st == nil || *st != acp.ToolCallStatusCompleted {
			t.Errorf("tool status: got %v, want completed", st)
		}
	})
	t.Run("run COMMAND", func(t *testing.T) {
		h := startAgent(t, t.TempDir())
		h.initialize(acp.ClientCapabilities{})
		var asked acp.RequestPermissionRequest
		h.client.permission = func(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
			asked = p
			return selected("reject_once"), nil
		}
		sid := h.newSession(t.TempDir())
		h.mustPrompt(sid, "/permission run go test ./...", acp.StopReasonEndTurn)
		in, _ := asked.ToolCall.RawInput.(map[string]any)
		if asked.ToolCall.Kind == nil || *asked.ToolCall.Kind != acp.ToolKindExecute || in["command"] != "go test ./..." {
			t.Errorf("permission tool call: got kind %v rawInput %v, want execute with command %q", asked.ToolCall.Kind, asked.ToolCall.RawInput, "go test ./...")
		}
		us := conversation(h.client.updatesFor(sid))
		if got := reply(us); got != "Permission outcome: selected reject_once" {
			t.Errorf("reply: got %q", got)
		}
	})
	// "answers" is a client that, as ACP requires, answers the pending
	// request with "cancelled" after sending session/cancel; "silent" never
	// answers, and the agent gives up on the request after a grace period.
	for _, answers := range []bool{true, false} {
		t.Run(fmt.Sprintf("cancelled answers=%v", answers), func(t *testing.T) { permissionCancelled(t, answers) })
	}
}

func permissionCancelled(t *testing.T, answers bool) {
	t.Helper()
	h := startAgent(t, t.TempDir())
	h.initialize(acp.ClientCapabilities{})
	asked, cancelSent := make(chan struct{}), make(chan struct{})
	h.client.permission = func(ctx context.Context, _ acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		close(asked)
		if answers {
			<-cancelSent
		} else {
			<-ctx.Done() // ends when the agent abandons the request
		}
		return cancelledOutcome(), nil
	}
	sid := h.newSession(t.TempDir())
	result := make(chan acp.PromptResponse, 1)
	go func() {
		resp, err := h.prompt(sid, "/permission")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		result <- resp
	}()
	<-asked
	if err := h.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	close(cancelSent)
	select {
	case resp := <-result:
		if resp.StopReason != acp.StopReasonCancelled {
			t.Errorf("stopReason: got %q, want cancelled", resp.StopReason)
		}
	case <-time.After(waitTimeout):
		t.Fatal("prompt did not return after cancel")
	}
	if got := reply(h.client.updatesFor(sid)); got != "Permission outcome: cancelled" {
		t.Errorf("reply: got %q, want %q", got, "Permission outcome: cancelled")
	}
}

func TestHangCancel(t *testing.T) {
	h := startAgent(t, t.TempDir())
	h.initialize(acp.ClientCapabilities{})
	sid := h.newSession(t.TempDir())
	result := make(chan acp.PromptResponse, 1)
	go func() {
		resp, err := h.prompt(sid, "/hang")
		if err != nil {
			t.Errorf("prompt /hang: %v", err)
		}
		result <- resp
	}()
	waitFor(t, "hanging chunk", func() bool { return strings.Contains(reply(h.client.updatesFor(sid)), "hanging") })

	// A second prompt while one runs is refused, and does not end the first.
	_, err := h.prompt(sid, "/echo second")
	re := rpcError(t, err)
	if re.Code != -32603 || re.Message != "prompt already running" {
		t.Errorf("second prompt: got %d %q, want -32603 %q", re.Code, re.Message, "prompt already running")
	}
	select {
	case resp := <-result:
		t.Fatalf("first prompt ended early with %q", resp.StopReason)
	case <-time.After(50 * time.Millisecond):
	}

	if err := h.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-result:
		if resp.StopReason != acp.StopReasonCancelled {
			t.Errorf("stopReason: got %q, want cancelled", resp.StopReason)
		}
	case <-time.After(waitTimeout):
		t.Fatal("prompt /hang did not return after cancel")
	}
	// The session takes prompts again.
	h.mustPrompt(sid, "/echo after", acp.StopReasonEndTurn)
}

func TestLoadAfterRestartReplaysHistory(t *testing.T) {
	state, cwd := t.TempDir(), t.TempDir()
	first := startAgent(t, state)
	first.initialize(acp.ClientCapabilities{})
	sid := first.newSession(cwd)
	first.mustPrompt(sid, "/echo one", acp.StopReasonEndTurn)
	first.mustPrompt(sid, "/stream 2", acp.StopReasonEndTurn)
	first.mustPrompt(sid, "/tool fail", acp.StopReasonEndTurn)
	sent := conversation(first.client.updatesFor(sid))
	first.stop()

	second := startAgent(t, state)
	second.initialize(acp.ClientCapabilities{})
	if _, err := second.conn.LoadSession(second.ctx(), acp.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	// The SDK hands updates sent before a response to the client before
	// returning that response, so everything replayed is recorded now.
	got := second.client.updatesFor(sid)
	var gotText []string
	for _, u := range got {
		gotText = append(gotText, text(u))
	}
	// History interleaves the user prompts (never sent live) with exactly
	// what was streamed.
	wantText := []string{
		"user_message_chunk:/echo one", "agent_message_chunk:one",
		"user_message_chunk:/stream 2", "agent_message_chunk:chunk 1\n", "agent_message_chunk:chunk 2\n",
		"user_message_chunk:/tool fail", "tool_call", "tool_call_update",
	}
	if !slices.Equal(gotText, wantText) {
		t.Errorf("replay: got %q, want %q", gotText, wantText)
	}
	var replayedAgent []acp.SessionUpdate
	for _, u := range got {
		if u.UserMessageChunk == nil {
			replayedAgent = append(replayedAgent, u)
		}
	}
	wantJSON, _ := json.Marshal(sent)
	gotJSON, _ := json.Marshal(replayedAgent)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("replayed agent updates:\ngot  %s\nwant %s", gotJSON, wantJSON)
	}
	// And on the wire: every replayed update precedes the load result.
	lines := second.wire.lines()
	last := lines[len(lines)-1]
	if !strings.Contains(last, `"result"`) {
		t.Errorf("last line before load returned: got %s, want the session/load result", last)
	}
	// The loaded session takes prompts.
	second.client.reset()
	second.mustPrompt(sid, "/echo again", acp.StopReasonEndTurn)
	if got := reply(second.client.updatesFor(sid)); got != "again" {
		t.Errorf("reply after load: got %q, want %q", got, "again")
	}
}

func TestResumeReplaysNothing(t *testing.T) {
	state, cwd := t.TempDir(), t.TempDir()
	first := startAgent(t, state)
	first.initialize(acp.ClientCapabilities{})
	sid := first.newSession(cwd)
	first.mustPrompt(sid, "/echo one", acp.StopReasonEndTurn)
	first.stop()

	second := startAgent(t, state)
	second.initialize(acp.ClientCapabilities{})
	if _, err := second.conn.ResumeSession(second.ctx(), acp.ResumeSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	time.Sleep(20 * time.Millisecond) // a late replay would show up here
	if got := second.client.updatesFor(sid); len(got) != 0 {
		t.Errorf("updates after resume: got %d (%v), want none", len(got), kinds(got))
	}
	second.mustPrompt(sid, "/echo two", acp.StopReasonEndTurn)
	if got := reply(second.client.updatesFor(sid)); got != "two" {
		t.Errorf("reply after resume: got %q, want %q", got, "two")
	}
}

func TestUnknownSession(t *testing.T) {
	tests := []struct {
		name        string
		flags       []string
		wantCode    int
		wantMessage string
		wantDetails any
	}{
		{name: "default", wantCode: -32002, wantMessage: "Resource not found"},
		{name: "internal error with details",
			flags:    []string{"--unknown-session-code", "-32603", "--unknown-session-message", "Internal error", "--unknown-session-details", "Invalid session identifier"},
			wantCode: -32603, wantMessage: "Internal error", wantDetails: "Invalid session identifier"},
	}
	const missing = acp.SessionId("demo-missing")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startAgent(t, t.TempDir(), tt.flags...)
			h.initialize(acp.ClientCapabilities{})
			cwd := t.TempDir()
			calls := map[string]func() error{
				"load": func() error {
					_, err := h.conn.LoadSession(h.ctx(), acp.LoadSessionRequest{SessionId: missing, Cwd: cwd, McpServers: []acp.McpServer{}})
					return err
				},
				"resume": func() error {
					_, err := h.conn.ResumeSession(h.ctx(), acp.ResumeSessionRequest{SessionId: missing, Cwd: cwd})
					return err
				},
				"prompt": func() error { _, err := h.prompt(missing, "hi"); return err },
			}
			for method, call := range calls {
				re := rpcError(t, call())
				if re.Code != tt.wantCode || re.Message != tt.wantMessage {
					t.Errorf("%s: got %d %q, want %d %q", method, re.Code, re.Message, tt.wantCode, tt.wantMessage)
				}
				if got := dataField(re, "uri"); got != string(missing) {
					t.Errorf("%s: data.uri got %v, want %s", method, got, missing)
				}
				if got := dataField(re, "details"); got != tt.wantDetails {
					t.Errorf("%s: data.details got %v, want %v", method, got, tt.wantDetails)
				}
			}
		})
	}
}

func TestLoadUnknownCreates(t *testing.T) {
	h := startAgent(t, t.TempDir(), "--load-unknown-creates")
	h.initialize(acp.ClientCapabilities{})
	sid := acp.SessionId("demo-forgotten")
	if _, err := h.conn.LoadSession(h.ctx(), acp.LoadSessionRequest{SessionId: sid, Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: got %v, want success", err)
	}
	if got := h.client.updatesFor(sid); len(got) != 0 {
		t.Errorf("replayed updates: got %d, want 0", len(got))
	}
	h.mustPrompt(sid, "/echo fresh", acp.StopReasonEndTurn)
}

func TestUnsupportedMethods(t *testing.T) {
	tests := []struct {
		flags    []string
		call     string
		wantCode int
	}{
		{[]string{"--no-load"}, "load", -32601},
		{[]string{"--no-resume"}, "resume", -32601},
		{[]string{"--resume-unsupported"}, "resume", -32601},
		{[]string{"--auth-required"}, "new", -32000},
		{[]string{"--auth-required"}, "load", -32000},
		{[]string{"--auth-required"}, "resume", -32000},
		{[]string{"--auth-required"}, "prompt", -32000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.flags, tt.call), func(t *testing.T) {
			state, cwd := t.TempDir(), t.TempDir()
			// A stored session, so that only the flag can make the call fail.
			seed := startAgent(t, state)
			seed.initialize(acp.ClientCapabilities{})
			sid := seed.newSession(cwd)
			seed.stop()

			h := startAgent(t, state, tt.flags...)
			h.initialize(acp.ClientCapabilities{})
			var err error
			switch tt.call {
			case "new":
				_, err = h.conn.NewSession(h.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
			case "load":
				_, err = h.conn.LoadSession(h.ctx(), acp.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acp.McpServer{}})
			case "resume":
				_, err = h.conn.ResumeSession(h.ctx(), acp.ResumeSessionRequest{SessionId: sid, Cwd: cwd})
			case "prompt":
				_, err = h.prompt(sid, "hi")
			}
			if re := rpcError(t, err); re.Code != tt.wantCode {
				t.Errorf("%s: got code %d (%s), want %d", tt.call, re.Code, re.Message, tt.wantCode)
			}
		})
	}
}

func TestErrorCommand(t *testing.T) {
	h := startAgent(t, t.TempDir())
	h.initialize(acp.ClientCapabilities{})
	sid := h.newSession(t.TempDir())
	_, err := h.prompt(sid, "/error -32042 something broke")
	re := rpcError(t, err)
	if re.Code != -32042 || re.Message != "something broke" {
		t.Errorf("got %d %q, want -32042 %q", re.Code, re.Message, "something broke")
	}
	_, err = h.prompt(sid, "/error 500 plain")
	if re := rpcError(t, err); re.Code != 500 {
		t.Errorf("got code %d, want 500", re.Code)
	}
}

func TestUnknownUpdateOnWire(t *testing.T) {
	h := startAgent(t, t.TempDir())
	h.initialize(acp.ClientCapabilities{})
	sid := h.newSession(t.TempDir())
	h.mustPrompt(sid, "/unknown-update", acp.StopReasonEndTurn)
	var raw string
	for _, l := range h.wire.lines() {
		if strings.Contains(l, "tether_demo_unknown") {
			raw = l
		}
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind string `json:"sessionUpdate"`
			} `json:"update"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(raw), &msg); err != nil {
		t.Fatalf("unknown update line %q: %v", raw, err)
	}
	if msg.Method != "session/update" || msg.Params.SessionID != string(sid) || msg.Params.Update.Kind != "tether_demo_unknown" {
		t.Errorf("unknown update: got %+v, want session/update for %s of kind tether_demo_unknown", msg, sid)
	}
	if got := reply(h.client.updatesFor(sid)); got != "sent an unknown update" {
		t.Errorf("reply: got %q, want %q", got, "sent an unknown update")
	}
}

// TestCrashKeepsSentHistory must not run in parallel: it swaps the exit hook.
func TestCrashKeepsSentHistory(t *testing.T) {
	for _, tt := range []struct {
		prompt   string
		wantCode int
		wantLast string
	}{
		{"/crash", 3, "agent_message_chunk:crashing…"},
		{"/crash-in-tool", 4, "tool_call"},
	} {
		t.Run(tt.prompt, func(t *testing.T) {
			state, cwd := t.TempDir(), t.TempDir()
			var h *harness
			codes := make(chan int, 1)
			restore := demoagent.SetExitForTest(func(code int) { codes <- code; h.kill() })
			defer restore()
			h = startAgent(t, state)
			h.initialize(acp.ClientCapabilities{})
			sid := h.newSession(cwd)
			if _, err := h.prompt(sid, tt.prompt); err == nil {
				t.Fatalf("prompt %s: got success, want a disconnect error", tt.prompt)
			}
			if code := <-codes; code != tt.wantCode {
				t.Errorf("exit code: got %d, want %d", code, tt.wantCode)
			}

			again := startAgent(t, state)
			again.initialize(acp.ClientCapabilities{})
			if _, err := again.conn.LoadSession(again.ctx(), acp.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
				t.Fatalf("session/load after crash: %v", err)
			}
			got := again.client.updatesFor(sid)
			if len(got) != 2 || text(got[0]) != "user_message_chunk:"+tt.prompt || text(got[1]) != tt.wantLast {
				var ts []string
				for _, u := range got {
					ts = append(ts, text(u))
				}
				t.Errorf("replay after crash: got %q, want [user prompt, %s]", ts, tt.wantLast)
			}
		})
	}
}

func TestBadFlags(t *testing.T) {
	err := demoagent.Run(context.Background(), []string{"--no-such-flag"}, strings.NewReader(""), &strings.Builder{}, &strings.Builder{})
	if err == nil {
		t.Errorf("Run with an unknown flag: got nil error, want one")
	}
}

func TestStartupDelay(t *testing.T) {
	start := time.Now()
	h := startAgent(t, t.TempDir(), "--startup-delay", "100ms")
	h.initialize(acp.ClientCapabilities{})
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("initialize answered after %v, want >= 100ms", d)
	}
}

func TestStreamManyChunks(t *testing.T) {
	// More chunks than the SDK's 1024-entry notification queue: the fake
	// must be able to produce them quickly for the daemon's backpressure
	// tests, so persistence has to stay linear. This test's client is the
	// SDK's, which closes the connection when its queue overflows (the
	// daemon reads agents with its own reader for that reason): under
	// -race on a loaded machine it fell 1024 behind a burst of 2000, so
	// the agent pauses briefly after every 100.
	h := startAgent(t, t.TempDir())
	h.initialize(acp.ClientCapabilities{})
	sid := h.newSession(t.TempDir())
	h.mustPrompt(sid, "/stream 2000 100 10", acp.StopReasonEndTurn)
	// The SDK hands notifications to the client on a goroutine of its own,
	// so the prompt's answer may overtake the last of them under load:
	// they must all arrive, not all before the answer.
	waitFor(t, "2000 chunks", func() bool { return len(conversation(h.client.updatesFor(sid))) >= 2000 })
	if got := len(conversation(h.client.updatesFor(sid))); got != 2000 {
		t.Errorf("chunks: got %d, want 2000", got)
	}
}

func TestStateDirFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TETHER_DEMO_STATE_DIR", dir)
	h := startAgent(t, "")
	h.initialize(acp.ClientCapabilities{})
	h.newSession(t.TempDir())
	h.stop()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("files in $TETHER_DEMO_STATE_DIR: got %d, want 1 session file", len(entries))
	}
}

// TestAttachments: the reply names each non-text block as it arrived, so a
// client's test sees an image's real size and an embedded file's lines.
func TestAttachments(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	tests := []struct {
		name  string
		block acp.ContentBlock
		want  string
	}{
		{"image", acp.ImageBlock(base64.StdEncoding.EncodeToString(png), "image/png"), "an image (image/png, 12 bytes)"},
		{"image not base64", acp.ImageBlock("data:image/png;base64,AAAA", "image/png"), "an image (image/png) whose data is not base64"},
		{"embedded file", acp.ContentBlock{Resource: &acp.ContentBlockResource{Type: "resource", Resource: acp.EmbeddedResourceResource{
			TextResourceContents: &acp.TextResourceContents{Uri: "file:///w/notes.md", Text: "a\nb\nc\n"}}}}, "notes.md (embedded, 3 lines)"},
		{"link", acp.ResourceLinkBlock("src/main.go", "file:///w/src/main.go"), "a link to src/main.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startAgent(t, t.TempDir())
			h.initialize(acp.ClientCapabilities{})
			sid := h.newSession(t.TempDir())
			resp, err := h.conn.Prompt(h.ctx(), acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock("look"), tt.block}})
			if err != nil || resp.StopReason != acp.StopReasonEndTurn {
				t.Fatalf("prompt: got %v %v, want end_turn", resp.StopReason, err)
			}
			if got := reply(conversation(h.client.updatesFor(sid))); !strings.Contains(got, "You attached "+tt.want+".") {
				t.Errorf("reply: got %q, want it to say %q", got, "You attached "+tt.want+".")
			}
		})
	}
}
