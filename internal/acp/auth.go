package acp

import (
	"fmt"
	"maps"
	"regexp"
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
	// Vars are the variables an env_var method needs.
	Vars []string
	// Optional are the variables it also reads when set.
	Optional []string
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
				if v.Optional {
					a.Optional = append(a.Optional, v.Name)
				} else {
					a.Vars = append(a.Vars, v.Name)
				}
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
	m.Vars, m.Optional, m.Args, m.Meta = slices.Clone(m.Vars), slices.Clone(m.Optional), slices.Clone(m.Args), maps.Clone(m.Meta)
	return m
}

// Hint says what a user does to use the method with an agent started as
// command. Agents that predate ACP's typed methods describe themselves in
// _meta or in prose, in the shapes measured on real agents: qwen marks a
// login command with _meta.type "terminal" and _meta.args, copilot names it
// in _meta["terminal-auth"] {command, args}, opencode says "Run `…` in the
// terminal" in its description, and codex and gemini name the provider whose
// key an API-key method reads in _meta["api-key"].provider.
func (m AuthMethod) Hint(command string) string {
	vars := m.keyVars()
	if len(vars) == 0 {
		vars = m.describedVars()
	}
	if len(vars) > 0 {
		hint := fmt.Sprintf("set %s in the profile's env", strings.Join(vars, ", "))
		if len(m.Optional) > 0 {
			hint += fmt.Sprintf(" (optionally %s)", strings.Join(m.Optional, ", "))
		}
		return hint
	}
	if run := m.loginCommand(command); run != "" {
		return fmt.Sprintf("run `%s` once in a terminal to log in", run)
	}
	return fmt.Sprintf("set authMethod: %s in the profile's agents.yaml entry (%s)", m.ID, m.Name)
}

// keyVars are the variables an API-key method reads, as the agent
// declares them: a typed env_var method lists them, an untyped one names
// its provider in _meta.
func (m AuthMethod) keyVars() []string {
	if m.Type == AuthEnvVar {
		return m.Vars
	}
	if m.Type != "" && m.Type != AuthAgent {
		return nil
	}
	for _, key := range []string{"api-key", m.ID} {
		if own, ok := m.Meta[key].(map[string]any); ok {
			if p, _ := own["provider"].(string); p != "" {
				return []string{providerKeyVar(p)}
			}
		}
	}
	return nil
}

// describedVars is the variable an untyped method's description asks for.
// qwen-code 0.15 announces its `openai` method as a terminal login in
// _meta (args --auth-type=openai) though what it needs is the variable its
// description names ("Requires setting the `OPENAI_API_KEY` environment
// variable"): the hint names the variable, since setting it is enough. It
// is prose, not a declaration, so it only makes the hint: tetherd does not
// authenticate on it (AutoAuthMethod), and qwen needs no authenticate once
// the key is set (it would record the choice in the user's settings).
func (m AuthMethod) describedVars() []string {
	if m.Type != "" && m.Type != AuthAgent {
		return nil
	}
	if mm := describedVar.FindStringSubmatch(m.Description); mm != nil {
		return []string{mm[1] + mm[2]} // one of the two groups matched
	}
	return nil
}

// describedVar finds the variable a description asks for: a backticked
// upper-case name right before or after the words "environment variable",
// as qwen-code says "Requires setting the `OPENAI_API_KEY` environment
// variable". A backticked name alone (a command, a file) is not one.
var describedVar = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`\\s+(?i:environment variable)|(?i:environment variable)\\s+`([A-Z][A-Z0-9_]*)`")

// providerKeys are the variables agents read for a provider's key where it
// is not <PROVIDER>_API_KEY (gemini-cli announces provider "google" and
// reads GEMINI_API_KEY; GOOGLE_API_KEY is Vertex AI's).
var providerKeys = map[string]string{"google": "GEMINI_API_KEY"}

func providerKeyVar(provider string) string {
	if v, ok := providerKeys[strings.ToLower(provider)]; ok {
		return v
	}
	return strings.ToUpper(strings.ReplaceAll(provider, "-", "_")) + "_API_KEY"
}

// backticked finds the command in a description such as "Run `opencode
// auth login` in the terminal".
var backticked = regexp.MustCompile("(?i)\\brun `([^`]+)`")

// loginCommand is the command line a terminal method asks the user to run,
// or "" when the method is not one.
func (m AuthMethod) loginCommand(command string) string {
	typ, args := m.Type, m.Args
	if t, _ := m.Meta["type"].(string); t == AuthTerminal {
		typ = AuthTerminal
		if len(args) == 0 {
			args = metaStrings(m.Meta["args"])
		}
	}
	if ta, ok := m.Meta["terminal-auth"].(map[string]any); ok {
		if c, _ := ta["command"].(string); c != "" {
			command, args, typ = c, metaStrings(ta["args"]), AuthTerminal
		}
	}
	if typ == AuthTerminal {
		return strings.TrimSpace(command + " " + strings.Join(args, " "))
	}
	if typ == "" || typ == AuthAgent {
		if mm := backticked.FindStringSubmatch(m.Description); mm != nil {
			return mm[1]
		}
	}
	return ""
}

// AutoAuthMethod picks the method to authenticate with when a profile names
// none: the first API-key method whose variables are all set in env (the
// agent's environment, KEY=VALUE). Some agents read their key only after
// authenticate (codex-acp, for either of its env_var methods), so a key set
// in the profile's env works without also naming the method.
func AutoAuthMethod(methods []AuthMethod, env []string) string {
	set := map[string]bool{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			set[k] = true
		}
	}
	for _, m := range methods {
		vars := m.keyVars()
		if len(vars) == 0 {
			continue
		}
		all := true
		for _, v := range vars {
			all = all && set[v]
		}
		if all {
			return m.ID
		}
	}
	return ""
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

// AuthRequiredMessage is what tetherd says of an agent that asked for
// credentials: what failed, then what to do (AuthHint). Agents end their
// messages with a period or not; it is said once.
func AuthRequiredMessage(what string, methods []AuthMethod, command string) string {
	return fmt.Sprintf("%s. The agent needs credentials: %s", strings.TrimRight(what, ". "), AuthHint(methods, command))
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
