package agents

import (
	"encoding/json"
	"fmt"

	"github.com/tether/tether/internal/acp"
)

// capabilitiesJSON is the stored form of acp.Capabilities (camelCase, as
// in the API), kept separate so acp stays free of persistence concerns.
type capabilitiesJSON struct {
	ProtocolVersion    int                    `json:"protocolVersion"`
	LoadSession        bool                   `json:"loadSession"`
	Resume             bool                   `json:"resume"`
	PromptCapabilities promptCapabilitiesJSON `json:"promptCapabilities"`
	AgentName          string                 `json:"agentName,omitempty"`
	AgentVersion       string                 `json:"agentVersion,omitempty"`
	AuthMethods        []authMethodJSON       `json:"authMethods,omitempty"`
}

type authMethodJSON struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Type        string         `json:"type,omitempty"`
	Vars        []string       `json:"vars,omitempty"`
	Optional    []string       `json:"optionalVars,omitempty"`
	Args        []string       `json:"args,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

type promptCapabilitiesJSON struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

// MarshalCapabilities encodes caps in the form stored in
// store.AgentProfile.Capabilities.
func MarshalCapabilities(caps acp.Capabilities) json.RawMessage {
	b, err := json.Marshal(capabilitiesJSON{
		ProtocolVersion: caps.ProtocolVersion,
		LoadSession:     caps.LoadSession,
		Resume:          caps.Resume,
		PromptCapabilities: promptCapabilitiesJSON{
			Image: caps.Image, Audio: caps.Audio, EmbeddedContext: caps.EmbeddedContext,
		},
		AgentName:    caps.AgentName,
		AgentVersion: caps.AgentVersion,
		AuthMethods:  authMethodsJSON(caps.AuthMethods),
	})
	if err != nil {
		// Only plain values are marshalled; this cannot happen.
		panic(err)
	}
	return b
}

// UnmarshalCapabilities decodes what MarshalCapabilities produced.
func UnmarshalCapabilities(b json.RawMessage) (acp.Capabilities, error) {
	var c capabilitiesJSON
	if err := json.Unmarshal(b, &c); err != nil {
		return acp.Capabilities{}, fmt.Errorf("agent capabilities: %w", err)
	}
	return acp.Capabilities{
		ProtocolVersion: c.ProtocolVersion,
		LoadSession:     c.LoadSession,
		Resume:          c.Resume,
		Image:           c.PromptCapabilities.Image,
		Audio:           c.PromptCapabilities.Audio,
		EmbeddedContext: c.PromptCapabilities.EmbeddedContext,
		AgentName:       c.AgentName,
		AgentVersion:    c.AgentVersion,
		AuthMethods:     authMethodsOfJSON(c.AuthMethods),
	}, nil
}

func authMethodsJSON(ms []acp.AuthMethod) []authMethodJSON {
	var out []authMethodJSON
	for _, m := range ms {
		out = append(out, authMethodJSON(m))
	}
	return out
}

func authMethodsOfJSON(ms []authMethodJSON) []acp.AuthMethod {
	var out []acp.AuthMethod
	for _, m := range ms {
		out = append(out, acp.AuthMethod(m))
	}
	return out
}
