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

// ModeState is the part of an ACP SessionModeState the daemon reads.
type ModeState struct {
	AvailableModes []struct {
		ID string `json:"id"`
	} `json:"availableModes"`
	CurrentModeID string `json:"currentModeId"`
}

// ParseModes decodes an ACP SessionModeState; ok is false when there is
// none (or it does not decode): then no mode can be checked against it.
func ParseModes(raw json.RawMessage) (s ModeState, ok bool) {
	return s, len(raw) > 0 && json.Unmarshal(raw, &s) == nil
}

// Has reports whether the agent offers mode id.
func (s ModeState) Has(id string) bool {
	for _, m := range s.AvailableModes {
		if m.ID == id {
			return true
		}
	}
	return false
}

// WithCurrentMode returns the mode state raw with its current mode
// replaced by id (raw unchanged when it does not decode).
func WithCurrentMode(raw json.RawMessage, id string) json.RawMessage {
	var s map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return raw
	}
	s["currentModeId"] = marshalAny(id)
	return marshalAny(s)
}

// AvailableModes is the list of modes of an ACP SessionModeState (nil
// when there is none).
func AvailableModes(modes json.RawMessage) json.RawMessage {
	var s struct {
		AvailableModes json.RawMessage `json:"availableModes"`
	}
	if len(modes) == 0 || json.Unmarshal(modes, &s) != nil || len(s.AvailableModes) == 0 || string(s.AvailableModes) == "null" {
		return nil
	}
	return s.AvailableModes
}

// ConfigOption is the part of an ACP SessionConfigOption the daemon
// reads: a select (currentValue a value id, options flat or grouped) or a
// boolean.
type ConfigOption struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	CurrentValue json.RawMessage `json:"currentValue"`
	Options      json.RawMessage `json:"options"`
}

// FindConfigOption finds option id in an array of ACP
// SessionConfigOption.
func FindConfigOption(options json.RawMessage, id string) (ConfigOption, bool) {
	var all []ConfigOption
	_ = json.Unmarshal(options, &all)
	for _, o := range all {
		if o.ID == id {
			return o, true
		}
	}
	return ConfigOption{}, false
}

// Accepts reports whether value is valid for the option: a boolean for a
// boolean option, one of the offered value ids for a select.
func (o ConfigOption) Accepts(value json.RawMessage) bool {
	if o.Type == "boolean" {
		var b bool
		return json.Unmarshal(value, &b) == nil
	}
	var id string
	var flat []struct {
		Value   string `json:"value"`
		Options []struct {
			Value string `json:"value"`
		} `json:"options"`
	}
	if json.Unmarshal(value, &id) != nil || json.Unmarshal(o.Options, &flat) != nil {
		return false
	}
	for _, e := range flat {
		if e.Value == id {
			return true
		}
		for _, g := range e.Options {
			if g.Value == id {
				return true
			}
		}
	}
	return false
}

// SameValue compares two JSON scalars (config option values) by meaning.
func SameValue(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && x == y
}
