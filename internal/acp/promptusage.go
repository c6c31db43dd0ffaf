package acp

import (
	"bytes"
	"encoding/json"
	"sync"
)

// PromptUsageMeta is the _meta key under which the daemon hands a turn's
// token usage, from the agent's answer to session/prompt (ACP's unstable
// PromptResponse.usage: inputTokens, outputTokens, cachedReadTokens,
// cachedWriteTokens, thoughtTokens, totalTokens), on as a usage_update
// of its own: in order after every update of the turn, before the turn's
// end, on the path every update takes (an executor host forwards it as a
// line), so the daemon records it where it records the rest.
const PromptUsageMeta = "tether/promptUsage"

// prompts maps the JSON-RPC id of each session/prompt request in flight
// to its session: a response names no session.
type prompts struct {
	mu   sync.Mutex
	byID map[string]string
}

// sent notes a session/prompt request line written to the agent.
func (p *prompts) sent(line []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 || m.Params.SessionID == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byID == nil {
		p.byID = map[string]string{}
	}
	p.byID[string(bytes.TrimSpace(m.ID))] = m.Params.SessionID
}

// answered takes the session of the request id answers ("" for none).
func (p *prompts) answered(id json.RawMessage) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := string(bytes.TrimSpace(id))
	sid := p.byID[key]
	delete(p.byID, key)
	return sid
}

// usageLine is the session/update line that hands a prompt's answer's
// usage on (nil when the answer has none).
func usageLine(sessionID string, result json.RawMessage) []byte {
	var r struct {
		Usage json.RawMessage `json:"usage"`
	}
	if json.Unmarshal(result, &r) != nil || len(r.Usage) == 0 || string(r.Usage) == "null" {
		return nil
	}
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{
		"sessionId": sessionID,
		"update": map[string]any{"sessionUpdate": string(UpdateUsage), "used": 0, "size": 0,
			"_meta": map[string]json.RawMessage{PromptUsageMeta: r.Usage}},
	}})
	if err != nil {
		return nil
	}
	return append(line, '\n')
}
