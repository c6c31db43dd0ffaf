// Package modelserver is a scripted language-model server for tests: it
// speaks the streaming Anthropic Messages API (POST /v1/messages) and the
// streaming OpenAI chat-completions API (POST /v1/chat/completions) on
// 127.0.0.1, so that real coding agents run offline against replies a test
// decides. A Script picks each reply from the conversation the server
// receives, and every request is recorded with that conversation so that a
// test can assert what the model saw.
package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// API names the wire protocol a request came in on.
type API string

// The APIs the server speaks.
const (
	Anthropic API = "anthropic"
	OpenAI    API = "openai"
)

// Request is one model call as the server parsed it: the whole
// conversation the agent sent.
type Request struct {
	API    API
	Method string
	// Path is the URL path with its query, e.g. /v1/messages?beta=true.
	Path   string
	Model  string
	Stream bool
	// System is the system prompt, its text blocks joined by newlines.
	System   string
	Messages []Message
	Tools    []Tool
	// Body is the request body as received.
	Body []byte
}

// Message is one message of the conversation.
type Message struct {
	// Role is user, assistant, or (OpenAI) tool or system.
	Role  string
	Parts []Part
}

// PartType tells what a Part holds.
type PartType string

// The part types both APIs map onto.
const (
	TextPart       PartType = "text"
	ToolUsePart    PartType = "tool_use"
	ToolResultPart PartType = "tool_result"
	// ImagePart is a picture the user sent (MediaType, Data in base64).
	ImagePart PartType = "image"
)

// Part is one block of a message: text, a tool call the model made, or the
// result of one that the agent sends back.
type Part struct {
	Type PartType
	// Text is a text block's text or a tool result's content.
	Text string
	// ToolCallID links a tool call and its result.
	ToolCallID string
	// ToolName and Input describe a tool call.
	ToolName string
	Input    json.RawMessage
	// IsError marks a failed tool result (Anthropic is_error).
	IsError bool
	// MediaType and Data (base64) are an image part's picture.
	MediaType, Data string
}

// Tool is one tool the agent offered the model.
type Tool struct {
	Name string
	// Schema is the tool's JSON input schema.
	Schema json.RawMessage
}

// Text is the concatenated text of a message's text parts.
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == TextPart {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Images returns the message's image parts.
func (m Message) Images() []Part { return m.partsOf(ImagePart) }

// ToolResults returns the message's tool results.
func (m Message) ToolResults() []Part { return m.partsOf(ToolResultPart) }

func (m Message) partsOf(t PartType) []Part {
	var out []Part
	for _, p := range m.Parts {
		if p.Type == t {
			out = append(out, p)
		}
	}
	return out
}

// LastUser returns the last message whose role is user, or a zero Message.
func (r Request) LastUser() Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i]
		}
	}
	return Message{}
}

// ToolResults returns every tool result in the conversation, oldest first.
func (r Request) ToolResults() []Part {
	var out []Part
	for _, m := range r.Messages {
		out = append(out, m.ToolResults()...)
	}
	return out
}

// ToolNames lists the offered tools' names.
func (r Request) ToolNames() []string {
	out := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		out[i] = t.Name
	}
	return out
}

// Script decides the reply to one request. It runs on the server's
// handler goroutine, one call per request.
type Script func(Request) Reply

// Server is a running scripted model server.
type Server struct {
	srv *httptest.Server
	// done is closed when the server stops, releasing stalled replies.
	done chan struct{}

	mu     sync.Mutex
	script Script
	log    []Request
	probes []string
}

// Start runs a server on 127.0.0.1 that answers with script; it stops when
// the test ends.
func Start(tb testing.TB, script Script) *Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("modelserver: %v", err)
	}
	return StartOn(tb, ln, script)
}

// StartOn is Start on a listener of the test's (e.g. one inside a network
// namespace, where agents on a remote host reach it).
func StartOn(tb testing.TB, ln net.Listener, script Script) *Server {
	tb.Helper()
	s := &Server{script: script, done: make(chan struct{})}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	_ = s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.Start()
	tb.Cleanup(s.Close)
	return s
}

// URL is the server's base URL, e.g. http://127.0.0.1:PORT (no /v1).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server, releasing any stalled reply first.
func (s *Server) Close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetScript replaces the script for the requests that follow.
func (s *Server) SetScript(script Script) {
	s.mu.Lock()
	s.script = script
	s.mu.Unlock()
}

// Requests returns every model call received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Probes returns the non-model requests received ("HEAD /", "GET /v1/models").
func (s *Server) Probes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.probes...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var api API
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		api = Anthropic
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		api = OpenAI
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		s.probe(w, r)
		return
	default:
		http.Error(w, "modelserver: no such route", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req Request
	if api == Anthropic {
		req, err = parseAnthropic(body)
	} else {
		req, err = parseOpenAI(body)
	}
	if err != nil {
		http.Error(w, "modelserver: "+err.Error(), http.StatusBadRequest)
		return
	}
	req.API, req.Method, req.Path, req.Body = api, r.Method, r.URL.RequestURI(), body
	s.mu.Lock()
	s.log = append(s.log, req)
	script, n := s.script, len(s.log)
	s.mu.Unlock()
	reply := script(req)
	if reply.Status != 0 {
		writeError(w, api, reply)
		return
	}
	stream := &replyStream{w: w, done: s.done, cancelled: r.Context().Done(), reply: reply, model: req.Model, n: n}
	if api == Anthropic {
		stream.anthropic(req.Stream)
	} else {
		stream.openAI(req.Stream)
	}
}

// probe answers the HEAD and GET requests agents send before calling the
// model (connectivity checks, model lists).
func (s *Server) probe(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.probes = append(s.probes, r.Method+" "+r.URL.RequestURI())
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/v1/models" {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"scripted-model","object":"model","created":0,"owned_by":"modelserver"}]}`)
		return
	}
	fmt.Fprint(w, `{}`)
}

func writeError(w http.ResponseWriter, api API, reply Reply) {
	msg := reply.Text
	if msg == "" {
		msg = http.StatusText(reply.Status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(reply.Status)
	var body any
	if api == Anthropic {
		body = map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": msg}}
	} else {
		body = map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "code": reply.Status}}
	}
	_ = json.NewEncoder(w).Encode(body)
}
