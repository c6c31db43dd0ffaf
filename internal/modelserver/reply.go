package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Reply is what the model answers to one request.
type Reply struct {
	// Text is streamed as one delta per word (its concatenation is Text);
	// with Status set it is the error message instead.
	Text string
	// ToolCall, if set, follows Text; the reply then stops for tool use.
	ToolCall *ToolCall
	// Stall, if set, holds the stream after StallAfter text deltas until
	// the gate is released (or the client goes away, or the server stops).
	Stall      *Gate
	StallAfter int
	// Status, if set, answers with this HTTP error status and no stream.
	Status int
}

// ToolCall is a call of one of the agent's tools.
type ToolCall struct {
	ID    string
	Name  string
	Input map[string]any
}

// Gate holds stalled replies until the test releases it.
type Gate struct {
	reachedOnce, releaseOnce sync.Once
	reached, release         chan struct{}
}

// NewGate returns a gate that holds replies until Release.
func NewGate() *Gate {
	return &Gate{reached: make(chan struct{}), release: make(chan struct{})}
}

// Reached is closed once a reply has stalled at the gate.
func (g *Gate) Reached() <-chan struct{} { return g.reached }

// Release lets every stalled reply go on; later replies pass at once.
func (g *Gate) Release() { g.releaseOnce.Do(func() { close(g.release) }) }

func (g *Gate) arrive() { g.reachedOnce.Do(func() { close(g.reached) }) }

// deltas splits text after every space, so that the pieces join to text.
func deltas(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexByte(text, ' ')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// replyStream writes one Reply in one API's wire format.
type replyStream struct {
	w         http.ResponseWriter
	done      <-chan struct{}
	cancelled <-chan struct{}
	reply     Reply
	model     string
	// n numbers the request (1 for the first): each reply has an id of
	// its own, as a real model's, which agents pass on as the ACP
	// messageId of its text.
	n int
}

// id is the reply's message id in the API's format.
func (s *replyStream) id(prefix string) string { return fmt.Sprintf("%s_scripted_%d", prefix, s.n) }

// stall waits at the reply's gate before delta i; false: give up the reply.
func (s *replyStream) stall(i int) bool {
	g := s.reply.Stall
	if g == nil || i != s.reply.StallAfter {
		return true
	}
	g.arrive()
	select {
	case <-g.release:
		return true
	case <-s.done:
	case <-s.cancelled:
	}
	return false
}

func (s *replyStream) inputJSON() string {
	b, _ := json.Marshal(s.reply.ToolCall.Input)
	return string(b)
}

func (s *replyStream) event(name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *replyStream) sseHeaders() {
	s.w.Header().Set("Content-Type", "text/event-stream")
	s.w.Header().Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
}

var usage = map[string]any{"input_tokens": 10, "output_tokens": 10}

// anthropic writes the reply as a Messages API answer.
func (s *replyStream) anthropic(stream bool) {
	stop := "end_turn"
	if s.reply.ToolCall != nil {
		stop = "tool_use"
	}
	if !stream {
		var content []any
		if s.reply.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": s.reply.Text})
		}
		if c := s.reply.ToolCall; c != nil {
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Input})
		}
		s.w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(s.w).Encode(map[string]any{"id": s.id("msg"), "type": "message", "role": "assistant",
			"model": s.model, "content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	s.sseHeaders()
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": s.id("msg"),
		"type": "message", "role": "assistant", "model": s.model, "content": []any{}, "stop_reason": nil,
		"stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	index := 0
	if s.reply.Text != "" || s.reply.Stall != nil {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for i, d := range deltas(s.reply.Text) {
			if !s.stall(i) {
				return
			}
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": d}})
		}
		if !s.stall(len(deltas(s.reply.Text))) {
			return
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if c := s.reply.ToolCall; c != nil {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		in := s.inputJSON()
		for _, part := range []string{in[:len(in)/2], in[len(in)/2:]} {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

// openAI writes the reply as a chat-completions answer.
func (s *replyStream) openAI(stream bool) {
	finish := "stop"
	if s.reply.ToolCall != nil {
		finish = "tool_calls"
	}
	openAIUsage := map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": s.reply.Text}
		if c := s.reply.ToolCall; c != nil {
			msg["tool_calls"] = []any{map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": s.inputJSON()}}}
		}
		s.w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(s.w).Encode(map[string]any{"id": s.id("chatcmpl"), "object": "chat.completion",
			"created": 0, "model": s.model, "usage": openAIUsage,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}})
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": s.id("chatcmpl"), "object": "chat.completion.chunk", "created": 0,
			"model": s.model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	s.sseHeaders()
	s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for i, d := range deltas(s.reply.Text) {
		if !s.stall(i) {
			return
		}
		s.event("", chunk(map[string]any{"content": d}, nil))
	}
	if !s.stall(len(deltas(s.reply.Text))) {
		return
	}
	if c := s.reply.ToolCall; c != nil {
		in := s.inputJSON()
		s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": in[:len(in)/2]}}}}, nil))
		s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": in[len(in)/2:]}}}}, nil))
	}
	last := chunk(map[string]any{}, finish)
	last["usage"] = openAIUsage
	s.event("", last)
	fmt.Fprint(s.w, "data: [DONE]\n\n")
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
