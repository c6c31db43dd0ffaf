package acp

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// inheritedEnv is the allow-list of the daemon's own environment variables
// an agent gets. Agents are untrusted programs: anything else the daemon
// holds (its API token, the user's cloud credentials, other secrets) stays
// out unless a profile names it. Each entry is here because agents break
// without it:
//
//   - PATH, HOME, USER, LOGNAME, SHELL: finding tools, the user's config and
//     login state (~/.claude, ~/.codex), running shell commands.
//   - LANG, LANGUAGE, LC_*, TZ: text encoding and local time in tool output.
//   - TERM, COLORTERM, NO_COLOR: tools that format output for a terminal.
//   - TMPDIR: where scratch files go.
//   - XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_CACHE_HOME, XDG_STATE_HOME,
//     XDG_RUNTIME_DIR: where agents keep config and login state when the
//     user moved them.
//   - HTTP_PROXY, HTTPS_PROXY, NO_PROXY, ALL_PROXY (and lower case): the
//     network path to the model; an agent behind a proxy cannot work
//     without them.
//   - SSL_CERT_FILE, SSL_CERT_DIR, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE:
//     a corporate CA the model endpoint is signed with.
var inheritedEnv = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TZ": true,
	"TERM": true, "COLORTERM": true, "NO_COLOR": true,
	"TMPDIR":          true,
	"XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true, "XDG_CACHE_HOME": true, "XDG_STATE_HOME": true, "XDG_RUNTIME_DIR": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "ALL_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true, "all_proxy": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "NODE_EXTRA_CA_CERTS": true, "REQUESTS_CA_BUNDLE": true,
}

// inheritedPrefixes extends inheritedEnv to families of variables.
var inheritedPrefixes = []string{"LC_"}

// reservedPrefix marks the daemon's own variables (TETHER_TOKEN,
// TETHER_ADDR, ...). They never reach an agent from the daemon's
// environment, not even through a passthrough list; a profile that really
// wants one for its agent sets it in env.
const reservedPrefix = "TETHER_"

// passthroughPattern is a variable name, or a prefix followed by "*".
var passthroughPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`)

// CheckPassthrough validates one passthrough entry: a variable name
// (ANTHROPIC_API_KEY) or a prefix ending in "*" (ANTHROPIC_*). TETHER_*
// names are refused, since passing them through hands the daemon's token to
// the agent.
func CheckPassthrough(name string) error {
	if !passthroughPattern.MatchString(name) {
		return fmt.Errorf("invalid environment variable name %q (use NAME or PREFIX*)", name)
	}
	// A wider pattern ("T*") is accepted: agentEnv drops TETHER_* anyway.
	if strings.HasPrefix(strings.ToUpper(name), reservedPrefix) {
		return fmt.Errorf("%s: the daemon's own TETHER_* variables are never passed to agents; set the value in the profile's env if the agent needs it", name)
	}
	return nil
}

// Environ is the environment an agent started from spec gets in this
// process (see agentEnv), for what depends on it without starting it: a
// profile's fingerprint (internal/agents).
func Environ(spec Spec) []string { return agentEnv(os.Environ(), spec) }

// agentEnv builds an agent's environment from the daemon's (KEY=VALUE
// entries, as os.Environ returns them): the allow-list, then the spec's
// passthrough names, then the spec's own Env, later entries winning.
func agentEnv(daemon []string, spec Spec) []string {
	pass := func(key string) bool {
		if strings.HasPrefix(strings.ToUpper(key), reservedPrefix) {
			return false
		}
		if inheritedEnv[key] {
			return true
		}
		for _, p := range inheritedPrefixes {
			if strings.HasPrefix(key, p) {
				return true
			}
		}
		for _, p := range spec.Passthrough {
			if p == key || (strings.HasSuffix(p, "*") && strings.HasPrefix(key, strings.TrimSuffix(p, "*"))) {
				return true
			}
		}
		return false
	}
	out := make([]string, 0, len(spec.Env)+16)
	for _, kv := range daemon {
		key, _, ok := strings.Cut(kv, "=")
		if ok && key != "" && pass(key) {
			out = append(out, kv)
		}
	}
	// exec.Cmd keeps the last value of a duplicated key, so the profile's
	// env overrides what was inherited.
	return append(out, spec.Env...)
}
