package crash_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestAgentEnvironment: a daemon started with its token (and other
// secrets) in its environment gives its agents only the allow-list, the
// passthrough names and the profile's env; so an agent cannot take the
// token and approve its own permission request.
func TestAgentEnvironment(t *testing.T) {
	w := newWorld(t, profile{id: "agent",
		env: map[string]string{"PROFILE_VAR": "from-profile"}, passthrough: []string{"PROFILE_KEY"}})
	w.env = []string{"TETHER_TOKEN=" + token, "TETHER_ADDR=" + w.addr, "LANG=C.UTF-8",
		"HIDDEN_SECRET=not-for-agents", "PROFILE_KEY=profile-passed", "GLOBAL_KEY=flag-passed"}
	w.start("--agent-env-passthrough", "GLOBAL_KEY")
	sid, _ := w.createSession("agent")

	tests := []struct {
		name, prompt, want string
	}{
		{name: "daemon token", prompt: "/env TETHER_TOKEN", want: "<unset>"},
		{name: "daemon address", prompt: "/env TETHER_ADDR", want: "<unset>"},
		{name: "other daemon variable", prompt: "/env HIDDEN_SECRET", want: "<unset>"},
		{name: "allow-listed PATH", prompt: "/env PATH", want: os.Getenv("PATH")},
		{name: "allow-listed LANG", prompt: "/env LANG", want: "C.UTF-8"},
		{name: "profile env", prompt: "/env PROFILE_VAR", want: "from-profile"},
		{name: "profile envPassthrough", prompt: "/env PROFILE_KEY", want: "profile-passed"},
		{name: "--agent-env-passthrough", prompt: "/env GLOBAL_KEY", want: "flag-passed"},
		// On a daemon that leaks its environment the agent finds its own
		// pending request over the API and selects allow_once itself.
		{name: "self-approval", prompt: "/approve-self", want: "no TETHER_TOKEN in my environment: I cannot call the daemon"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid := fmt.Sprintf("env-%d", i)
			w.prompt(sid, tt.prompt, pid)
			if turn := w.waitTurn(sid, pid); turn["state"] != "completed" {
				t.Fatalf("turn: got %v, want completed", turn)
			}
			if got := strings.TrimSpace(agentText(t, w.replay(sid), pid)); got != tt.want {
				t.Errorf("%s: got %q, want %q", tt.prompt, got, tt.want)
			}
		})
	}
	for _, p := range list(w.transcript(sid), "pendingPermissions") {
		t.Errorf("pending permission left behind: %v", p)
	}
}
