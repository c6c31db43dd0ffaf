// Package sandbox runs an agent and everything it starts inside a
// bubblewrap sandbox: the system read-only, the session's directory and the
// agent's own state read-write, tetherd's and the executor host's data,
// tokens and sockets invisible, a PID namespace of its own (the whole tree
// ends with the agent) and a network policy. It owns the policy (what a
// profile or a session asks for), the check that bubblewrap works on this
// machine, the bwrap command line, and the loopback forwarder of the
// `loopback` network policy. Why: a permission prompt means nothing if the
// agent can read the token that answers it (docs/security.md).
package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Modes of a policy.
const (
	// ModeAuto sandboxes where bubblewrap works and otherwise starts the
	// agent unsandboxed, with a warning (the default).
	ModeAuto = "auto"
	// ModeRequired refuses to start an agent it cannot sandbox.
	ModeRequired = "required"
	// ModeOff starts agents unsandboxed, as the operator asked.
	ModeOff = "off"
)

// Network policies.
const (
	// NetworkAll leaves the network as the daemon has it (agents call their
	// model API): the default.
	NetworkAll = "all"
	// NetworkLoopback gives the agent a network of its own in which only
	// the host's loopback TCP ports the policy lists (Ports) are reachable,
	// forwarded to 127.0.0.1 outside.
	NetworkLoopback = "loopback"
	// NetworkNone gives the agent a network of its own with nothing in it.
	NetworkNone = "none"
)

// Policy is what a profile (agents.yaml `sandbox`) or a session (POST
// /session `sandbox`) asks for. A zero field means "not said": Merge fills
// it from the layer below, Defaults from the built-in defaults. Its JSON
// (a session's stored policy, the host protocol) keeps a nil list (null)
// apart from an empty one ([]).
type Policy struct {
	Mode    string `json:"mode,omitempty"`
	Network string `json:"network,omitempty"`
	// Writable are directories (or files) the agent may write besides the
	// session's directory: its own state (~/.claude, ~/.qwen). Nil: the
	// defaults of a known agent (StateDirs); empty but not nil: none.
	Writable []string `json:"writable"`
	// Readable are directories (or files) it may read besides the system
	// and its own installation.
	Readable []string `json:"readable"`
	// Ports are the host's loopback TCP ports reachable under
	// NetworkLoopback.
	Ports []int `json:"ports"`
}

// Decode reads a policy stored by Encode; nil or null is the zero policy.
func Decode(raw []byte) (Policy, error) {
	var p Policy
	if len(raw) == 0 {
		return p, nil
	}
	err := json.Unmarshal(raw, &p)
	return p, err
}

// Encode is p's stored form; nil for a policy that says nothing.
func (p Policy) Encode() []byte {
	if p.IsZero() {
		return nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // plain values only
	}
	return b
}

// Merge returns p with every field it leaves unsaid taken from under.
func (p Policy) Merge(under Policy) Policy {
	if p.Mode == "" {
		p.Mode = under.Mode
	}
	if p.Network == "" {
		p.Network = under.Network
	}
	if p.Writable == nil {
		p.Writable = under.Writable
	}
	if p.Readable == nil {
		p.Readable = under.Readable
	}
	if p.Ports == nil {
		p.Ports = under.Ports
	}
	return p
}

// Defaults fills what is still unsaid with the defaults: mode auto,
// network all.
func (p Policy) Defaults() Policy {
	return p.Merge(Policy{Mode: ModeAuto, Network: NetworkAll})
}

// IsZero reports a policy that says nothing.
func (p Policy) IsZero() bool {
	return p.Mode == "" && p.Network == "" && p.Writable == nil && p.Readable == nil && p.Ports == nil
}

// Check reports what is wrong with p, as a message naming the field; nil
// when p is valid. Paths must be absolute or start with "~/".
func (p Policy) Check() error {
	switch p.Mode {
	case "", ModeAuto, ModeRequired, ModeOff:
	default:
		return fmt.Errorf("sandbox.mode must be auto, required or off, got %q", p.Mode)
	}
	switch p.Network {
	case "", NetworkAll, NetworkLoopback, NetworkNone:
	default:
		return fmt.Errorf("sandbox.network must be all, loopback or none, got %q", p.Network)
	}
	for _, list := range []struct {
		name  string
		paths []string
	}{{"writable", p.Writable}, {"readable", p.Readable}} {
		for i, d := range list.paths {
			if strings.ContainsRune(d, 0) || !(filepath.IsAbs(d) || strings.HasPrefix(d, "~/")) {
				return fmt.Errorf("sandbox.%s[%d] must be an absolute path or start with ~/, got %q", list.name, i, d)
			}
		}
	}
	for i, port := range p.Ports {
		if port < 1 || port > 65535 {
			return fmt.Errorf("sandbox.ports[%d] must be a TCP port (1-65535), got %d", i, port)
		}
	}
	if len(p.Ports) > 0 && p.Network != "" && p.Network != NetworkLoopback {
		return fmt.Errorf("sandbox.ports apply to network loopback only, not %q", p.Network)
	}
	return nil
}

// stateDirs are where known agents keep their login and sessions under
// HOME: the directories a sandboxed agent may write when its profile lists
// none (Policy.Writable nil).
var stateDirs = map[string][]string{
	"claude-agent-acp": {"~/.claude", "~/.claude.json"},
	"claude":           {"~/.claude", "~/.claude.json"},
	"codex-acp":        {"~/.codex"},
	"codex":            {"~/.codex"},
	"gemini":           {"~/.gemini"},
	"qwen":             {"~/.qwen"},
	"opencode":         {"~/.local/share/opencode", "~/.config/opencode", "~/.cache/opencode"},
	"copilot":          {"~/.copilot", "~/.config/github-copilot"},
	"auggie":           {"~/.augment"},
}

// StateDirs are the default writable state of the agent command runs
// (matched by its base name), under HOME; nil for an unknown agent.
func StateDirs(command string) []string {
	return slices.Clone(stateDirs[filepath.Base(command)])
}

// expand resolves "~/" against home and cleans the path.
func expand(p, home string) string {
	if strings.HasPrefix(p, "~/") {
		p = filepath.Join(home, p[2:])
	}
	return filepath.Clean(p)
}

// real resolves symlinks in p as far as it exists, so that a bind names
// the directory it shows; a path that does not exist is returned clean.
func real(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(filepath.Clean(p))
	if dir == "" || dir == p {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(filepath.Clean(dir)); err == nil {
		return filepath.Join(r, base)
	}
	return filepath.Clean(p)
}

// exists reports whether p exists, and whether it is a directory.
func exists(p string) (ok, dir bool) {
	fi, err := os.Stat(p)
	if err != nil {
		return false, false
	}
	return true, fi.IsDir()
}

// HasKey reports whether env (KEY=VALUE entries) sets key.
func HasKey(env []string, key string) bool {
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && k == key {
			return true
		}
	}
	return false
}
