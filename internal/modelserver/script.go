package modelserver

import (
	"encoding/json"
	"slices"
	"strings"
)

// readToolNames are the file-read tools of the agents the suite runs, in
// order of preference: claude-agent-acp's Read, qwen-code's read_file.
var readToolNames = []string{"Read", "read_file", "mcp__acp__Read"}

// readPathKeys are the input properties that name the file to read.
var readPathKeys = []string{"file_path", "absolute_path", "path"}

// writeToolNames are the file-write tools: claude-agent-acp's Write,
// qwen-code's write_file. Both take a path and a "content".
var writeToolNames = []string{"Write", "write_file", "mcp__acp__Write"}

// ReadTool returns the request's file-read tool and the name of its path
// property, or false if the agent offered none.
func (r Request) ReadTool() (Tool, string, bool) { return r.fileTool(readToolNames) }

// WriteTool returns the request's file-write tool and the name of its path
// property, or false if the agent offered none.
func (r Request) WriteTool() (Tool, string, bool) { return r.fileTool(writeToolNames) }

// fileTool finds the first offered tool of names that has a path property.
func (r Request) fileTool(names []string) (Tool, string, bool) {
	for _, name := range names {
		i := slices.IndexFunc(r.Tools, func(t Tool) bool { return t.Name == name })
		if i < 0 {
			continue
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(r.Tools[i].Schema, &schema)
		for _, key := range readPathKeys {
			if _, ok := schema.Properties[key]; ok {
				return r.Tools[i], key, true
			}
		}
	}
	return Tool{}, "", false
}

// HasToolResult reports whether the conversation holds the result of the
// tool call id.
func (r Request) HasToolResult(id string) (Part, bool) {
	for _, p := range r.ToolResults() {
		if p.ToolCallID == id {
			return p, true
		}
	}
	return Part{}, false
}

// Say answers every request with text.
func Say(text string) Script {
	return func(Request) Reply { return Reply{Text: text} }
}

// ReadCallID is the id of the tool call ReadFile makes.
const ReadCallID = "toolu_scripted_read_1"

// ReadFile asks the agent's read tool for path (absolute) with preface as
// the text before the call; once the tool's result is in the conversation
// it answers final. A request that offers no read tool (an agent's side
// request, e.g. a title) gets final too.
func ReadFile(path, preface, final string) Script {
	return func(r Request) Reply {
		if _, ok := r.HasToolResult(ReadCallID); ok {
			return Reply{Text: final}
		}
		tool, key, ok := r.ReadTool()
		if !ok {
			return Reply{Text: final}
		}
		return Reply{Text: preface, ToolCall: &ToolCall{ID: ReadCallID, Name: tool.Name, Input: map[string]any{key: path}}}
	}
}

// WriteCallID is the id of the tool call WriteFile makes.
const WriteCallID = "toolu_scripted_write_1"

// WriteFile asks the agent's write tool to put content at path (absolute),
// with preface as the text before the call; the agent asks the user's
// permission first. Once the tool's result is in the conversation, allowed
// or refused, it answers final.
func WriteFile(path, content, preface, final string) Script {
	return func(r Request) Reply {
		if _, ok := r.HasToolResult(WriteCallID); ok {
			return Reply{Text: final}
		}
		tool, key, ok := r.WriteTool()
		if !ok {
			return Reply{Text: final}
		}
		return Reply{Text: preface, ToolCall: &ToolCall{ID: WriteCallID, Name: tool.Name, Input: map[string]any{key: path, "content": content}}}
	}
}

// WriteThenStall is WriteFile whose answer, once the tool's result is in
// the conversation, stalls: the first n words of text, then nothing until
// gate is released (an agent that wrote a file and was cut off while the
// model went on).
func WriteThenStall(path, content, preface, text string, n int, gate *Gate) Script {
	write := WriteFile(path, content, preface, "")
	return func(r Request) Reply {
		if _, ok := r.HasToolResult(WriteCallID); ok {
			return Reply{Text: text, Stall: gate, StallAfter: n}
		}
		return write(r)
	}
}

// Stall streams the first n words of text, then holds the reply at gate
// until it is released, then streams the rest.
func Stall(text string, n int, gate *Gate) Script {
	return func(Request) Reply { return Reply{Text: text, Stall: gate, StallAfter: n} }
}

// Fail answers every request with an HTTP error status and message.
func Fail(status int, message string) Script {
	return func(Request) Reply { return Reply{Status: status, Text: message} }
}

// Contains reports whether any text part or tool result of the
// conversation contains s.
func (r Request) Contains(s string) bool {
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			if (p.Type == TextPart || p.Type == ToolResultPart) && strings.Contains(p.Text, s) {
				return true
			}
		}
	}
	return false
}

// StallThenReadFile streams the first n words of preface, holds the reply
// at gate until it is released, then finishes preface and asks the
// agent's read tool for path; once the tool's result is in the
// conversation it answers final (two messages of the model, each with an
// id of its own). A request that offers no read tool gets final.
func StallThenReadFile(path, preface string, n int, gate *Gate, final string) Script {
	read := ReadFile(path, preface, final)
	return func(r Request) Reply {
		reply := read(r)
		if reply.ToolCall != nil {
			reply.Stall, reply.StallAfter = gate, n
		}
		return reply
	}
}
