package modelserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// answer is a streamed reply as a client reassembles it.
type answer struct {
	status    int
	text      string
	toolName  string
	toolID    string
	toolInput map[string]any
	stop      string
	// events lists the SSE event types (Anthropic) or "chunk"/"[DONE]".
	events []string
}

// conversation is a request body in either API's shape.
type conversation struct {
	prompt     string
	toolResult string // non-empty: the conversation ends with a result of ReadCallID
	tools      []string
}

func anthropicBody(c conversation) map[string]any {
	msgs := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": c.prompt}}}}
	if c.toolResult != "" {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": ReadCallID, "name": "Read", "input": map[string]any{"file_path": "/x"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": ReadCallID, "content": c.toolResult}}})
	}
	var tools []any
	for _, name := range c.tools {
		tools = append(tools, map[string]any{"name": name, "input_schema": map[string]any{"type": "object",
			"properties": map[string]any{"file_path": map[string]any{"type": "string"}}}})
	}
	return map[string]any{"model": "claude-test", "stream": true, "max_tokens": 100,
		"system": []any{map[string]any{"type": "text", "text": "you are a test"}}, "messages": msgs, "tools": tools}
}

func openAIBody(c conversation) map[string]any {
	msgs := []any{map[string]any{"role": "system", "content": "you are a test"}, map[string]any{"role": "user", "content": c.prompt}}
	if c.toolResult != "" {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": ReadCallID, "type": "function",
				"function": map[string]any{"name": "read_file", "arguments": `{"absolute_path":"/x"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": ReadCallID, "content": c.toolResult})
	}
	var tools []any
	for _, name := range c.tools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": name,
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"absolute_path": map[string]any{"type": "string"}}}}})
	}
	return map[string]any{"model": "gpt-test", "stream": true, "messages": msgs, "tools": tools}
}

// call posts a conversation on api and reassembles the streamed answer.
func call(t *testing.T, s *Server, api API, c conversation) answer {
	t.Helper()
	path, body := "/v1/messages?beta=true", anthropicBody(c)
	if api == OpenAI {
		path, body = "/v1/chat/completions", openAIBody(c)
	}
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.URL()+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		return a
	}
	var input strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			a.events = append(a.events, "[DONE]")
			continue
		}
		var ev struct {
			Type         string `json:"type"`
			ContentBlock struct {
				Type, ID, Name string
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("bad event %s: %v", data, err)
		}
		if api == Anthropic {
			a.events = append(a.events, ev.Type)
			switch {
			case ev.Type == "content_block_start" && ev.ContentBlock.Type == "tool_use":
				a.toolID, a.toolName = ev.ContentBlock.ID, ev.ContentBlock.Name
			case ev.Delta.Type == "text_delta":
				a.text += ev.Delta.Text
			case ev.Delta.Type == "input_json_delta":
				input.WriteString(ev.Delta.PartialJSON)
			case ev.Type == "message_delta":
				a.stop = ev.Delta.StopReason
			}
			continue
		}
		a.events = append(a.events, "chunk")
		for _, ch := range ev.Choices {
			a.text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					a.toolID, a.toolName = tc.ID, tc.Function.Name
				}
				input.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != nil {
				a.stop = *ch.FinishReason
			}
		}
	}
	if input.Len() > 0 {
		if err := json.Unmarshal([]byte(input.String()), &a.toolInput); err != nil {
			t.Fatalf("tool input %q: %v", input.String(), err)
		}
	}
	return a
}

func TestScripts(t *testing.T) {
	const final = "FINAL: the file says hello"
	cases := []struct {
		name   string
		script Script
		conv   conversation
		// want per API: text, stop reason (anthropic, openai)
		status     int
		text       string
		stops      [2]string
		toolName   [2]string
		toolInput  [2]map[string]any
		lastEvents [2]string
	}{
		{name: "plain text", script: Say("hello there, world"), conv: conversation{prompt: "hi"},
			status: 200, text: "hello there, world", stops: [2]string{"end_turn", "stop"}, lastEvents: [2]string{"message_stop", "[DONE]"}},
		{name: "read tool call", script: ReadFile("/tmp/a.txt", "Let me read it.", final),
			conv:   conversation{prompt: "read a.txt", tools: []string{"Bash", "Read", "read_file"}},
			status: 200, text: "Let me read it.", stops: [2]string{"tool_use", "tool_calls"},
			toolName:   [2]string{"Read", "Read"},
			toolInput:  [2]map[string]any{{"file_path": "/tmp/a.txt"}, {"absolute_path": "/tmp/a.txt"}},
			lastEvents: [2]string{"message_stop", "[DONE]"}},
		{name: "final text after the tool result", script: ReadFile("/tmp/a.txt", "Let me read it.", final),
			conv:   conversation{prompt: "read a.txt", tools: []string{"Read"}, toolResult: "hello"},
			status: 200, text: final, stops: [2]string{"end_turn", "stop"}, lastEvents: [2]string{"message_stop", "[DONE]"}},
		{name: "no read tool offered", script: ReadFile("/tmp/a.txt", "Let me read it.", final),
			conv:   conversation{prompt: "title please"},
			status: 200, text: final, stops: [2]string{"end_turn", "stop"}, lastEvents: [2]string{"message_stop", "[DONE]"}},
		{name: "http error", script: Fail(529, "overloaded"), conv: conversation{prompt: "hi"}, status: 529},
	}
	for _, tc := range cases {
		for i, api := range []API{Anthropic, OpenAI} {
			t.Run(tc.name+"/"+string(api), func(t *testing.T) {
				s := Start(t, tc.script)
				conv := tc.conv
				if api == OpenAI && len(conv.tools) > 0 {
					conv.tools = []string{"run_shell", "read_file"}
				}
				a := call(t, s, api, conv)
				if a.status != tc.status {
					t.Fatalf("status: got %d, want %d", a.status, tc.status)
				}
				if tc.status != 200 {
					return
				}
				if a.text != tc.text {
					t.Errorf("text: got %q, want %q", a.text, tc.text)
				}
				if a.stop != tc.stops[i] {
					t.Errorf("stop reason: got %q, want %q", a.stop, tc.stops[i])
				}
				wantTool := tc.toolName[0]
				if api == OpenAI && wantTool != "" {
					wantTool = "read_file"
				}
				if a.toolName != wantTool {
					t.Errorf("tool: got %q, want %q", a.toolName, wantTool)
				}
				if wantTool != "" && a.toolID != ReadCallID {
					t.Errorf("tool call id: got %q, want %q", a.toolID, ReadCallID)
				}
				if want := tc.toolInput[i]; want != nil && (len(a.toolInput) != 1 || a.toolInput[keyOf(want)] != want[keyOf(want)]) {
					t.Errorf("tool input: got %v, want %v", a.toolInput, want)
				}
				if got := a.events[len(a.events)-1]; got != tc.lastEvents[i] {
					t.Errorf("last event: got %q, want %q (all: %v)", got, tc.lastEvents[i], a.events)
				}
			})
		}
	}
}

func keyOf(m map[string]any) string {
	for k := range m {
		return k
	}
	return ""
}

// TestRecordsConversation checks that the log holds what the agent sent,
// in the same shape for both APIs.
func TestRecordsConversation(t *testing.T) {
	for _, api := range []API{Anthropic, OpenAI} {
		t.Run(string(api), func(t *testing.T) {
			s := Start(t, Say("ok"))
			call(t, s, api, conversation{prompt: "the prompt", tools: []string{"read_file"}, toolResult: "file contents"})
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("requests: got %d, want 1", len(reqs))
			}
			r := reqs[0]
			if r.API != api || r.System != "you are a test" || !r.Stream {
				t.Errorf("got api %q system %q stream %v, want %q, %q, true", r.API, r.System, r.Stream, api, "you are a test")
			}
			if got := r.Messages[0].Text(); got != "the prompt" {
				t.Errorf("first user message: got %q, want %q", got, "the prompt")
			}
			res, ok := r.HasToolResult(ReadCallID)
			if !ok || res.Text != "file contents" {
				t.Errorf("tool result: got %+v (found %v), want %q", res, ok, "file contents")
			}
			if got := r.ToolNames(); len(got) != 1 || got[0] != "read_file" {
				t.Errorf("tools: got %v, want [read_file]", got)
			}
			if !r.Contains("file contents") {
				t.Error("Contains(file contents): got false, want true")
			}
		})
	}
}

// TestStall checks that a stalled reply holds after N deltas until released.
func TestStall(t *testing.T) {
	for _, api := range []API{Anthropic, OpenAI} {
		t.Run(string(api), func(t *testing.T) {
			gate := NewGate()
			s := Start(t, Stall("one two three four", 2, gate))
			got := make(chan answer, 1)
			go func() { got <- call(t, s, api, conversation{prompt: "hi"}) }()
			<-gate.Reached()
			select {
			case a := <-got:
				t.Fatalf("reply finished before release: %+v", a)
			default:
			}
			gate.Release()
			if a := <-got; a.text != "one two three four" {
				t.Errorf("text: got %q, want %q", a.text, "one two three four")
			}
		})
	}
}

// TestStallEndsWithServer checks that Close does not wait for a release.
func TestStallEndsWithServer(t *testing.T) {
	gate := NewGate()
	s := Start(t, Stall("one two", 1, gate))
	done := make(chan struct{})
	go func() {
		defer close(done)
		b, _ := json.Marshal(anthropicBody(conversation{prompt: "hi"}))
		resp, err := http.Post(s.URL()+"/v1/messages", "application/json", bytes.NewReader(b))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-gate.Reached()
	s.Close()
	<-done
}

func TestProbes(t *testing.T) {
	s := Start(t, Say("ok"))
	for _, tc := range []struct{ method, path string }{{"HEAD", "/"}, {"GET", "/v1/models"}, {"GET", "/anything"}} {
		req, _ := http.NewRequest(tc.method, s.URL()+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s: got %d, want 200", tc.method, tc.path, resp.StatusCode)
		}
	}
	if got := s.Probes(); len(got) != 3 || got[0] != "HEAD /" {
		t.Errorf("probes: got %v, want 3 starting with HEAD /", got)
	}
	if len(s.Requests()) != 0 {
		t.Errorf("model requests: got %d, want 0", len(s.Requests()))
	}
}

// TestRecordsImages: a picture in the user's message is an image part with
// its media type and base64 data, in either API's shape.
func TestRecordsImages(t *testing.T) {
	cases := []struct {
		name, path, body string
	}{
		{"anthropic", "/v1/messages", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"see"},` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}}]}]}`},
		{"openai", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"see"},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}}]}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, Say("ok"))
			resp, err := http.Post(s.URL()+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("requests: got %d, want 1", len(reqs))
			}
			u := reqs[0].LastUser()
			if got := u.Images(); len(got) != 1 || got[0].MediaType != "image/png" || got[0].Data != "iVBORw==" {
				t.Errorf("images: got %+v, want one image/png iVBORw==", got)
			}
			if got := u.Text(); got != "see" {
				t.Errorf("text: got %q, want %q", got, "see")
			}
		})
	}
}
