package acp

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"
)

// SessionOptions is what an agent announced about a session's modes and
// config options in its session/new, load or resume response. Both are
// JSON as ACP sends them; nil when the agent sent none.
type SessionOptions struct {
	// Modes is an ACP SessionModeState: {availableModes, currentModeId}.
	Modes json.RawMessage
	// ConfigOptions is an array of ACP SessionConfigOption.
	ConfigOptions json.RawMessage
}

// announce records the options of the session the agent just opened.
func (c *Conn) announce(modes *sdk.SessionModeState, options []sdk.SessionConfigOption) {
	var out SessionOptions
	if modes != nil {
		out.Modes = marshalAny(modes)
	}
	if options != nil {
		out.ConfigOptions = marshalAny(options)
	}
	c.mu.Lock()
	c.announced = out
	c.mu.Unlock()
}

// SessionOptions returns what the last successful session/new, load or
// resume on this connection announced.
func (c *Conn) SessionOptions() SessionOptions {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.announced
}

// SetMode sends session/set_mode.
func (c *Conn) SetMode(ctx context.Context, sessionID, modeID string) error {
	_, err := c.conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: sdk.SessionId(sessionID), ModeId: sdk.SessionModeId(modeID)})
	return err
}

// SetConfigOption sends session/set_config_option with value, a JSON string
// (a value id) or boolean, and returns the full set of options the agent
// answered with.
func (c *Conn) SetConfigOption(ctx context.Context, sessionID, optionID string, value json.RawMessage) (json.RawMessage, error) {
	var req sdk.SetSessionConfigOptionRequest
	var b bool
	var id string
	switch {
	case json.Unmarshal(value, &b) == nil:
		req.Boolean = &sdk.SetSessionConfigOptionBoolean{SessionId: sdk.SessionId(sessionID), ConfigId: sdk.SessionConfigId(optionID), Type: "boolean", Value: b}
	case json.Unmarshal(value, &id) == nil:
		req.ValueId = &sdk.SetSessionConfigOptionValueId{SessionId: sdk.SessionId(sessionID), ConfigId: sdk.SessionConfigId(optionID), Value: sdk.SessionConfigValueId(id)}
	default:
		return nil, fmt.Errorf("config option value must be a string or a boolean, got %s", value)
	}
	resp, err := c.conn.SetSessionConfigOption(ctx, req)
	if err != nil {
		return nil, err
	}
	return marshalAny(resp.ConfigOptions), nil
}
