package agents

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"gopkg.in/yaml.v3"
)

// mcpServer is one MCP server of a profile, as agents.yaml writes it: the
// ACP McpServer shapes. A stdio server (type absent or "stdio") has
// command, args and env; an http or sse server has url and headers. The
// daemon never connects to them: it passes them to the agent on
// session/new, load and resume, and stores them with the session.
type mcpServer struct {
	Name    string      `yaml:"name"`
	Type    string      `yaml:"type"`
	Command string      `yaml:"command"`
	Args    []string    `yaml:"args"`
	Env     []nameValue `yaml:"env"`
	URL     string      `yaml:"url"`
	Headers []nameValue `yaml:"headers"`
}

// nameValue is an ACP EnvVariable or HttpHeader.
type nameValue struct {
	Name  string `yaml:"name" json:"name"`
	Value string `yaml:"value" json:"value"`
}

// mcpKeys are the keys an MCP server entry may have, by transport.
var mcpKeys = map[string][]string{
	"stdio": {"name", "type", "command", "args", "env"},
	"http":  {"name", "type", "url", "headers"},
	"sse":   {"name", "type", "url", "headers"},
}

// mcpServers validates the profile's mcpServers list (n is its YAML node;
// nil when absent) and returns it as the ACP JSON array, "[]" for none.
// Every error names the entry: "agents[0] (id "x"): mcpServers[1] (name "y")".
func (v *validator) mcpServers(where string, n *yaml.Node) json.RawMessage {
	n = deref(n)
	if isNull(n) {
		return json.RawMessage("[]")
	}
	if n.Kind != yaml.SequenceNode {
		v.fail(n.Line, "%s: mcpServers must be a list", where)
		return nil
	}
	out := make([]map[string]any, 0, len(n.Content))
	names := map[string]bool{}
	for i, item := range n.Content {
		at := fmt.Sprintf("%s: mcpServers[%d]", where, i)
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			v.fail(item.Line, "%s must be a mapping with name and command (stdio) or type and url (http, sse)", at)
			continue
		}
		var s mcpServer
		if err := item.Decode(&s); err != nil {
			v.fail(item.Line, "%s: %v", at, err)
			continue
		}
		if s.Name != "" {
			at = fmt.Sprintf("%s (name %q)", at, s.Name)
		}
		if m, ok := v.mcpServer(at, item, s); ok {
			if names[s.Name] {
				v.fail(item.Line, "%s: duplicate MCP server name %q", at, s.Name)
				continue
			}
			names[s.Name] = true
			out = append(out, m)
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// mcpServer checks one entry and renders it in ACP's shape.
func (v *validator) mcpServer(at string, item *yaml.Node, s mcpServer) (map[string]any, bool) {
	before := len(v.errs)
	kind := s.Type
	if kind == "" {
		kind = "stdio"
	}
	allowed, known := mcpKeys[kind]
	if !known {
		v.fail(item.Line, "%s: unknown type %q (known: stdio, http, sse)", at, s.Type)
		return nil, false
	}
	for i := 0; i+1 < len(item.Content); i += 2 {
		k := item.Content[i]
		ok := false
		for _, a := range allowed {
			ok = ok || a == k.Value
		}
		if !ok {
			v.fail(k.Line, "%s: unknown key %q for a %s server (known keys: %s)", at, k.Value, kind, strings.Join(allowed, ", "))
		}
	}
	if strings.TrimSpace(s.Name) == "" {
		v.fail(item.Line, "%s: name is required", at)
	}
	pairs := func(key string, list []nameValue) []nameValue {
		for i, p := range list {
			if p.Name == "" || strings.ContainsAny(p.Name, "=\x00") || strings.ContainsRune(p.Value, 0) {
				v.fail(item.Line, "%s: %s[%d]: invalid name %q (or a NUL byte)", at, key, i, p.Name)
			}
		}
		if list == nil {
			return []nameValue{}
		}
		return list
	}
	out := map[string]any{"name": s.Name}
	switch kind {
	case "stdio":
		switch {
		case strings.TrimSpace(s.Command) == "":
			v.fail(item.Line, "%s: command is required for a stdio server", at)
		case strings.ContainsRune(s.Command, 0):
			v.fail(item.Line, "%s: command contains a NUL byte", at)
		}
		args := s.Args
		if args == nil {
			args = []string{}
		}
		out["command"], out["args"], out["env"] = s.Command, args, pairs("env", s.Env)
	default:
		u, err := url.Parse(s.URL)
		if s.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.fail(item.Line, "%s: url must be an absolute http(s) URL, got %q", at, s.URL)
		}
		out["type"], out["url"], out["headers"] = kind, s.URL, pairs("headers", s.Headers)
	}
	return out, len(v.errs) == before
}
