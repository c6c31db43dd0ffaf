package agents

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/tether/tether/internal/sandbox"
)

// knownAgent is a real ACP agent the daemon offers without configuration
// when its command is on PATH (DESIGN.md §2).
type knownAgent struct {
	id          string
	displayName string
	command     string
	args        []string
}

// knownAgents lists the real ACP agents tether knows how to launch. The args
// are the flag each CLI needs to speak ACP on stdio instead of its TUI.
// Every one of them gets history injection: none is guaranteed to restore
// its own context (some answer session/load of a lost session with success).
var knownAgents = []knownAgent{
	{id: "claude", displayName: "Claude Code (claude-agent-acp)", command: "claude-agent-acp"},
	{id: "codex", displayName: "Codex (codex-acp)", command: "codex-acp"},
	{id: "gemini", displayName: "Gemini CLI (gemini --acp)", command: "gemini", args: []string{"--acp"}},
	{id: "qwen", displayName: "Qwen Code (qwen --acp)", command: "qwen", args: []string{"--acp"}},
	{id: "opencode", displayName: "OpenCode (opencode acp)", command: "opencode", args: []string{"acp"}},
	{id: "copilot", displayName: "GitHub Copilot CLI (copilot --acp)", command: "copilot", args: []string{"--acp"}},
	{id: "auggie", displayName: "Auggie (auggie --acp)", command: "auggie", args: []string{"--acp"}},
}

// detect builds the profile of a known agent, available when its command
// is found on PATH. Unavailable profiles are still listed so users can see
// what they could install.
func (k knownAgent) detect(lookPath func(string) (string, error)) Profile {
	p := Profile{
		ID:                      k.id,
		DisplayName:             k.displayName,
		Command:                 k.command,
		Args:                    append([]string(nil), k.args...),
		Source:                  SourceDetected,
		HistoryContextInjection: true,
		Sandbox:                 sandbox.Policy{}.Defaults(),
	}
	p.Command, p.Available, p.UnavailableReason = resolveCommand(k.command, lookPath)
	return p
}

// resolveCommand finds cmd (an absolute path or a bare name looked up on
// PATH) and returns the absolute path to run, or cmd unchanged with the
// reason it cannot be run.
func resolveCommand(cmd string, lookPath func(string) (string, error)) (path string, ok bool, reason string) {
	resolved, err := lookPath(cmd)
	switch {
	case err == nil && filepath.IsAbs(resolved):
		return resolved, true, ""
	case err == nil || errors.Is(err, exec.ErrDot):
		// Running a binary found through a relative PATH entry would make
		// the agent depend on the daemon's working directory; refuse, as
		// os/exec does by default.
		return cmd, false, fmt.Sprintf("`%s` resolves to a path relative to the current directory; use an absolute path", cmd)
	case filepath.IsAbs(cmd):
		return cmd, false, fmt.Sprintf("`%s` does not exist or is not executable", cmd)
	default:
		return cmd, false, fmt.Sprintf("`%s` not found on PATH", cmd)
	}
}
