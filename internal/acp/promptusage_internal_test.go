package acp

import (
	"encoding/json"
	"testing"
)

// TestPromptUsageLine: a session/prompt's answer with usage becomes a
// usage_update line of the request's session carrying it under
// PromptUsageMeta, which decodes as an Update; an answer without usage,
// or to no session/prompt in flight, becomes none.
func TestPromptUsageLine(t *testing.T) {
	var p prompts
	p.sent([]byte(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`))
	if sid := p.answered(json.RawMessage(`8`)); sid != "" {
		t.Fatalf("an answer to request 8: got session %q, want none", sid)
	}
	if sid := p.answered(json.RawMessage(` 7 `)); sid != "s1" {
		t.Fatalf("the answer to request 7: got session %q, want s1", sid)
	}
	if sid := p.answered(json.RawMessage(`7`)); sid != "" {
		t.Fatalf("request 7 answered twice: got session %q", sid)
	}
	for _, tc := range []struct{ name, result string }{
		{"no usage", `{"stopReason":"end_turn"}`},
		{"null usage", `{"stopReason":"end_turn","usage":null}`},
		{"not JSON", `{`},
	} {
		if l := usageLine("s1", json.RawMessage(tc.result)); l != nil {
			t.Errorf("%s: got line %s, want none", tc.name, l)
		}
	}
	line := usageLine("s1", json.RawMessage(`{"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":2,"totalTokens":5}}`))
	var d UpdateDecoder
	u, ok := d.Decode(line)
	if !ok || u.Kind != UpdateUsage || u.SessionID != "s1" {
		t.Fatalf("decoded: got %+v %v, want a usage_update of s1", u, ok)
	}
	var data struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(u.Data, &data); err != nil || string(data.Meta[PromptUsageMeta]) != `{"inputTokens":3,"outputTokens":2,"totalTokens":5}` {
		t.Errorf("its data: got %s, want the usage under %s", u.Data, PromptUsageMeta)
	}
}

// TestChunkUsage: qwen's empty agent_message_chunk carrying _meta.usage
// is a usage report in the same terms as a prompt's answer's; a chunk
// with text keeps its text.
func TestChunkUsage(t *testing.T) {
	var d UpdateDecoder
	u, ok := d.Decode([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"_meta":{"usage":{"inputTokens":10,"outputTokens":10,"totalTokens":20},"durationMs":5}}}}`))
	if !ok || u.Kind != UpdateUsage {
		t.Fatalf("an empty chunk with usage: got %+v %v, want a usage report", u, ok)
	}
	var data struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(u.Data, &data); err != nil || string(data.Meta[PromptUsageMeta]) != `{"inputTokens":10,"outputTokens":10,"totalTokens":20}` {
		t.Errorf("its data: got %s", u.Data)
	}
	u, ok = d.Decode([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"_meta":{"usage":{"inputTokens":1}}}}}`))
	if !ok || u.Kind != UpdateAgentMessage || u.Text != "hi" {
		t.Errorf("a chunk with text and usage: got %+v %v, want the text chunk", u, ok)
	}
}
