package modelserver

import (
	"encoding/json"
	"testing"
)

func TestWriteFileScript(t *testing.T) {
	tool := func(name, pathKey string) Tool {
		schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{
			pathKey: map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}})
		return Tool{Name: name, Schema: schema}
	}
	result := Message{Role: "user", Parts: []Part{{Type: ToolResultPart, ToolCallID: WriteCallID, Text: "ok"}}}
	cases := []struct {
		name     string
		req      Request
		wantTool string // "" for the final text
		wantKey  string
	}{
		{"claude's Write", Request{Tools: []Tool{tool("Bash", "command"), tool("Write", "file_path")}}, "Write", "file_path"},
		{"qwen's write_file", Request{Tools: []Tool{tool("read_file", "file_path"), tool("write_file", "file_path")}}, "write_file", "file_path"},
		{"no write tool offered", Request{Tools: []Tool{tool("Read", "file_path")}}, "", ""},
		{"after the tool's result", Request{Tools: []Tool{tool("Write", "file_path")}, Messages: []Message{result}}, "", ""},
	}
	script := WriteFile("/w/out.txt", "data\n", "Writing.", "FINAL")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := script(tc.req)
			if tc.wantTool == "" {
				if r.ToolCall != nil || r.Text != "FINAL" {
					t.Fatalf("got %+v, want the final text and no tool call", r)
				}
				return
			}
			if r.ToolCall == nil || r.ToolCall.Name != tc.wantTool || r.ToolCall.ID != WriteCallID || r.Text != "Writing." {
				t.Fatalf("got %+v, want a %s call %s after the preface", r, tc.wantTool, WriteCallID)
			}
			if got := r.ToolCall.Input; got[tc.wantKey] != "/w/out.txt" || got["content"] != "data\n" {
				t.Errorf("tool input: got %v, want %s and content", got, tc.wantKey)
			}
		})
	}
}
