package acp

import (
	"encoding/json"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// TestAuthHints decodes authMethods as real agents announce them and checks
// the advice the daemon derives for each.
func TestAuthHints(t *testing.T) {
	tests := []struct {
		name    string
		methods string // the initialize response's authMethods
		command string
		want    []string // Hint of each method, in order
		wantAll string   // AuthHint
	}{
		{"codex api-key with a provider, chat-gpt",
			`[{"id":"api-key","name":"Use an API key","_meta":{"api-key":{"provider":"openai"}}},{"id":"chat-gpt","name":"Login with ChatGPT"}]`,
			"codex-acp",
			[]string{"set OPENAI_API_KEY in the profile's env and authMethod: api-key in its agents.yaml entry",
				"set authMethod: chat-gpt in the profile's agents.yaml entry (Login with ChatGPT)"},
			"set OPENAI_API_KEY in the profile's env and authMethod: api-key in its agents.yaml entry; or set authMethod: chat-gpt in the profile's agents.yaml entry (Login with ChatGPT)"},
		{"qwen terminal login in _meta",
			`[{"id":"qwen-oauth","name":"Qwen OAuth","_meta":{"type":"terminal","args":["--auth"]}}]`,
			"qwen",
			[]string{"run `qwen --auth` once in a terminal to log in"},
			"run `qwen --auth` once in a terminal to log in"},
		{"typed env_var method",
			`[{"type":"env_var","id":"key","name":"Key","vars":[{"name":"GEMINI_API_KEY"},{"name":"GOOGLE_CLOUD_PROJECT","optional":true}]}]`,
			"gemini",
			[]string{"set GEMINI_API_KEY, GOOGLE_CLOUD_PROJECT in the profile's env"},
			"set GEMINI_API_KEY, GOOGLE_CLOUD_PROJECT in the profile's env"},
		{"typed terminal method",
			`[{"type":"terminal","id":"login","name":"Login","args":["login"]}]`,
			"/opt/agent",
			[]string{"run `/opt/agent login` once in a terminal to log in"},
			"run `/opt/agent login` once in a terminal to log in"},
		{"none announced (claude-agent-acp)", `[]`, "claude-agent-acp", nil,
			"set the agent's credentials (e.g. its API key variable) in the profile's env in agents.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp sdk.InitializeResponse
			if err := json.Unmarshal([]byte(`{"protocolVersion":1,"agentCapabilities":{},"authMethods":`+tt.methods+`}`), &resp); err != nil {
				t.Fatal(err)
			}
			ms := capabilitiesOf(resp).AuthMethods
			if len(ms) != len(tt.want) {
				t.Fatalf("got %d auth methods %+v, want %d", len(ms), ms, len(tt.want))
			}
			for i, m := range ms {
				if got := m.Hint(tt.command); got != tt.want[i] {
					t.Errorf("method %s: got hint %q, want %q", m.ID, got, tt.want[i])
				}
			}
			if got := AuthHint(ms, tt.command); got != tt.wantAll {
				t.Errorf("AuthHint: got %q, want %q", got, tt.wantAll)
			}
		})
	}
}
