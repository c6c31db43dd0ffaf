package demoagent

import (
	"context"
	"encoding/json"
	"fmt"

	acp "github.com/coder/acp-go-sdk"
)

// The demo agent's session modes and its one config option, a documented
// interface (README's demo agent table): modes default, plan and auto, the
// select option "model" with demo-fast and demo-smart. Like real agents it
// keeps them per connection only: a restarted agent starts every session
// in its defaults, so the client has to give its choice again.
const (
	defaultMode  = "default"
	modelOption  = "model"
	defaultModel = "demo-fast"
)

var demoModes = []acp.SessionMode{
	{Id: defaultMode, Name: "Default", Description: acp.Ptr("Ask before edits")},
	{Id: "plan", Name: "Plan", Description: acp.Ptr("Plan only, no edits")},
	{Id: "auto", Name: "Auto", Description: acp.Ptr("Edit without asking")},
}

var demoModels = []acp.SessionConfigSelectOption{
	{Value: defaultModel, Name: "Demo fast"},
	{Value: "demo-smart", Name: "Demo smart"},
}

// options are a session's current mode and model.
type options struct {
	mode, model string
}

func (s *session) currentOptions() options {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.options.withDefaults()
}

// withDefaults fills what was never set with the agent's defaults.
func (o options) withDefaults() options {
	if o.mode == "" {
		o.mode = defaultMode
	}
	if o.model == "" {
		o.model = defaultModel
	}
	return o
}

func modeState(o options) *acp.SessionModeState {
	o = o.withDefaults()
	return &acp.SessionModeState{AvailableModes: demoModes, CurrentModeId: acp.SessionModeId(o.mode)}
}

func configOptions(o options) []acp.SessionConfigOption {
	o = o.withDefaults()
	models := acp.SessionConfigSelectOptionsUngrouped(demoModels)
	return []acp.SessionConfigOption{{Select: &acp.SessionConfigOptionSelect{
		Id: modelOption, Name: "Model", Type: "select", CurrentValue: acp.SessionConfigValueId(o.model),
		Options: acp.SessionConfigSelectOptions{Ungrouped: &models},
	}}}
}

func (a *agent) session(id acp.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[string(id)]
	if s == nil {
		return nil, a.unknownSession(id)
	}
	return s, nil
}

// SetSessionMode switches the mode and confirms it with current_mode_update,
// as real agents do.
func (a *agent) SetSessionMode(_ context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	known := false
	for _, m := range demoModes {
		known = known || m.Id == p.ModeId
	}
	if !known {
		return acp.SetSessionModeResponse{}, acp.NewInvalidParams(map[string]any{"error": "unknown mode", "modeId": string(p.ModeId)})
	}
	s.mu.Lock()
	s.options.mode = string(p.ModeId)
	s.mu.Unlock()
	_ = a.conn.SessionUpdate(a.serveCtx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.SessionUpdate{
		CurrentModeUpdate: &acp.SessionCurrentModeUpdate{CurrentModeId: p.ModeId}}})
	return acp.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption sets the model; it is the only option.
func (a *agent) SetSessionConfigOption(_ context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	if p.ValueId == nil {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"error": "the demo agent has no boolean options"})
	}
	s, err := a.session(p.ValueId.SessionId)
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	if p.ValueId.ConfigId != modelOption {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"error": "unknown config option", "configId": string(p.ValueId.ConfigId)})
	}
	known := false
	for _, m := range demoModels {
		known = known || m.Value == p.ValueId.Value
	}
	if !known {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"error": "unknown model", "value": string(p.ValueId.Value)})
	}
	s.mu.Lock()
	s.options.model = string(p.ValueId.Value)
	s.mu.Unlock()
	return acp.SetSessionConfigOptionResponse{ConfigOptions: configOptions(s.currentOptions())}, nil
}

// describeOptions is the reply of /options: what the agent itself is in.
func describeOptions(o options) string {
	return fmt.Sprintf("mode=%s model=%s", o.mode, o.model)
}

// describeMCP is the reply of /mcp: the MCP servers the session was given,
// as the agent stored them.
func (s *session) describeMCP() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(s.file.McpServers)
	return "mcpServers=" + string(b)
}
