package acp

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// Kinds of authentication method (ACP AuthMethod's "type").
const (
	AuthAgent    = "agent"    // the agent does it itself once asked (authenticate)
	AuthEnvVar   = "env_var"  // the user sets variables in the agent's environment
	AuthTerminal = "terminal" // the user runs the agent once in a terminal to log in
)

// AuthMethod is one way an agent accepts credentials, as it announced it in
// initialize.
type AuthMethod struct {
	ID          string
	Name        string
	Description string
	// Type is AuthAgent, AuthEnvVar or AuthTerminal.
	Type string
	// Vars are the variables an env_var method reads.
	Vars []string
	// Args are what to run the agent's command with for a terminal method.
	Args []string
	// Meta is the method's _meta, as sent.
	Meta map[string]any
}

func authMethodsOf(ms []sdk.AuthMethod) []AuthMethod {
	var out []AuthMethod
	for _, m := range ms {
		switch {
		case m.EnvVar != nil:
			a := AuthMethod{ID: m.EnvVar.Id, Name: m.EnvVar.Name, Description: deref(m.EnvVar.Description),
				Type: AuthEnvVar, Meta: m.EnvVar.Meta}
			for _, v := range m.EnvVar.Vars {
				a.Vars = append(a.Vars, v.Name)
			}
			out = append(out, a)
		case m.Terminal != nil:
			out = append(out, AuthMethod{ID: m.Terminal.Id, Name: m.Terminal.Name, Description: deref(m.Terminal.Description),
				Type: AuthTerminal, Args: slices.Clone(m.Terminal.Args), Meta: m.Terminal.Meta})
		case m.Agent != nil:
			out = append(out, AuthMethod{ID: m.Agent.Id, Name: m.Agent.Name, Description: deref(m.Agent.Description),
				Type: AuthAgent, Meta: m.Agent.Meta})
		}
	}
	return out
}

// Clone returns a deep enough copy: slices and the top level of Meta.
func (m AuthMethod) Clone() AuthMethod {
	m.Vars, m.Args, m.Meta = slices.Clone(m.Vars), slices.Clone(m.Args), maps.Clone(m.Meta)
	return m
}

// Hint says what a user does to use the method with an agent started as
// command. Agents that predate ACP's typed methods describe themselves in
// _meta: qwen marks a login command with _meta.type "terminal" and
// _meta.args, codex names the provider whose key an "api-key" method reads
// in _meta["api-key"].provider.
func (m AuthMethod) Hint(command string) string {
	typ, args := m.Type, m.Args
	if t, _ := m.Meta["type"].(string); t == AuthTerminal {
		typ = AuthTerminal
		if len(args) == 0 {
			args = metaStrings(m.Meta["args"])
		}
	}
	switch typ {
	case AuthEnvVar:
		if len(m.Vars) > 0 {
			return fmt.Sprintf("set %s in the profile's env", strings.Join(m.Vars, ", "))
		}
	case AuthTerminal:
		return fmt.Sprintf("run `%s` once in a terminal to log in", strings.TrimSpace(command+" "+strings.Join(args, " ")))
	}
	if own, ok := m.Meta[m.ID].(map[string]any); ok {
		if p, _ := own["provider"].(string); p != "" {
			return fmt.Sprintf("set %s_API_KEY in the profile's env and authMethod: %s in its agents.yaml entry",
				strings.ToUpper(strings.ReplaceAll(p, "-", "_")), m.ID)
		}
	}
	return fmt.Sprintf("set authMethod: %s in the profile's agents.yaml entry (%s)", m.ID, m.Name)
}

func metaStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// AuthHint is the advice for an agent that asked for credentials: one hint
// per method it announced, or, when it announced none (claude-agent-acp
// fails only at the first prompt), the general one.
func AuthHint(methods []AuthMethod, command string) string {
	if len(methods) == 0 {
		return "set the agent's credentials (e.g. its API key variable) in the profile's env in agents.yaml"
	}
	hints := make([]string, 0, len(methods))
	for _, m := range methods {
		hints = append(hints, m.Hint(command))
	}
	return strings.Join(hints, "; or ")
}
