package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"sync/atomic"
)

// resumeMethod is the one request whose params the SDK gets wrong.
var resumeMethod = []byte(`"method":"session/resume"`)

// promptMethod marks the session/prompt request, whose delivery the daemon
// records. Inside a JSON string the quotes would be escaped, so only the
// request's own method matches.
var promptMethod = []byte(`"method":"session/prompt"`)

// outgoing sits between the SDK and the agent's stdin. The SDK's
// ResumeSessionRequest marks mcpServers omitempty, so an empty list is left
// out of session/resume, while the daemon always sends `mcpServers: []`
// (agents on the official TS SDK reject requests without it). The SDK
// writes one whole message per Write, so each can be mended on its own,
// and so that a session/prompt is known to be written once its Write
// returns: then the one-shot promptSent hook runs (see PromptNotify).
type outgoing struct {
	w          io.Writer
	promptSent *atomic.Pointer[func()]
	// prompts hears each session/prompt request (for its answer's usage).
	prompts *prompts
}

// Write passes b on, with "mcpServers":[] added to a session/resume
// request that lacks it.
func (o outgoing) Write(b []byte) (int, error) {
	isPrompt := bytes.Contains(b, promptMethod)
	if isPrompt && o.prompts != nil {
		o.prompts.sent(b) // before the write: the answer may come at once
	}
	n, err := o.write(b)
	if err == nil && isPrompt {
		if f := o.promptSent.Swap(nil); f != nil {
			(*f)()
		}
	}
	return n, err
}

func (o outgoing) write(b []byte) (int, error) {
	if bytes.Contains(b, resumeMethod) {
		if fixed, ok := withEmptyMCPServers(b); ok {
			if _, err := o.w.Write(fixed); err != nil {
				return 0, err
			}
			return len(b), nil
		}
	}
	return o.w.Write(b)
}

// withEmptyMCPServers returns the message line with params.mcpServers set to
// [] if it has params without mcpServers; ok is false when nothing changed.
func withEmptyMCPServers(line []byte) ([]byte, bool) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil {
		return nil, false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil || params == nil {
		return nil, false
	}
	if _, ok := params["mcpServers"]; ok {
		return nil, false
	}
	params["mcpServers"] = json.RawMessage(`[]`)
	p, err := json.Marshal(params)
	if err != nil {
		return nil, false
	}
	msg["params"] = p
	out, err := json.Marshal(msg)
	if err != nil {
		return nil, false
	}
	return append(out, '\n'), true
}
