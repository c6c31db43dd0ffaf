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
			[]string{"set OPENAI_API_KEY in the profile's env",
				"set authMethod: chat-gpt in the profile's agents.yaml entry (Login with ChatGPT)"},
			"set OPENAI_API_KEY in the profile's env; or set authMethod: chat-gpt in the profile's agents.yaml entry (Login with ChatGPT)"},
		{"codex-acp 0.16.0: typed env_var methods",
			`[{"id":"chatgpt","name":"Login with ChatGPT","description":"Use your ChatGPT login with Codex CLI (requires a paid ChatGPT subscription)"},{"type":"env_var","id":"codex-api-key","name":"Use CODEX_API_KEY","description":"Requires setting the ` + "`CODEX_API_KEY`" + ` environment variable.","vars":[{"name":"CODEX_API_KEY"}]},{"type":"env_var","id":"openai-api-key","name":"Use OPENAI_API_KEY","vars":[{"name":"OPENAI_API_KEY"}]}]`,
			"codex-acp",
			[]string{"set authMethod: chatgpt in the profile's agents.yaml entry (Login with ChatGPT)",
				"set CODEX_API_KEY in the profile's env", "set OPENAI_API_KEY in the profile's env"},
			"set authMethod: chatgpt in the profile's agents.yaml entry (Login with ChatGPT); or set CODEX_API_KEY in the profile's env; or set OPENAI_API_KEY in the profile's env"},
		{"gemini-cli 0.61.0: provider google reads GEMINI_API_KEY",
			`[{"id":"oauth-personal","name":"Log in with Google","description":"Log in with your Google account"},{"id":"gemini-api-key","name":"Gemini API key","_meta":{"api-key":{"provider":"google"}}},{"id":"vertex-ai","name":"Vertex AI"},{"id":"gateway","name":"AI API Gateway","_meta":{"gateway":{"protocol":"google","restartRequired":"false"}}}]`,
			"gemini",
			[]string{"set authMethod: oauth-personal in the profile's agents.yaml entry (Log in with Google)",
				"set GEMINI_API_KEY in the profile's env",
				"set authMethod: vertex-ai in the profile's agents.yaml entry (Vertex AI)",
				"set authMethod: gateway in the profile's agents.yaml entry (AI API Gateway)"},
			"set authMethod: oauth-personal in the profile's agents.yaml entry (Log in with Google); or set GEMINI_API_KEY in the profile's env; or set authMethod: vertex-ai in the profile's agents.yaml entry (Vertex AI); or set authMethod: gateway in the profile's agents.yaml entry (AI API Gateway)"},
		{"copilot 1.0.102: terminal-auth in _meta",
			`[{"id":"copilot-login","name":"Log in with Copilot CLI","description":"Run ` + "`copilot login`" + ` in the terminal","_meta":{"terminal-auth":{"command":"/usr/lib/node_modules/@github/copilot-linux-x64/copilot","args":["login"],"label":"Copilot Login"}}}]`,
			"copilot",
			[]string{"run `/usr/lib/node_modules/@github/copilot-linux-x64/copilot login` once in a terminal to log in"},
			"run `/usr/lib/node_modules/@github/copilot-linux-x64/copilot login` once in a terminal to log in"},
		{"opencode 1.18.33: the command in the description",
			`[{"description":"Run ` + "`opencode auth login`" + ` in the terminal","name":"Login with opencode","id":"opencode-login"}]`,
			"opencode",
			[]string{"run `opencode auth login` once in a terminal to log in"},
			"run `opencode auth login` once in a terminal to log in"},
		{"qwen terminal login in _meta",
			`[{"id":"qwen-oauth","name":"Qwen OAuth","_meta":{"type":"terminal","args":["--auth"]}}]`,
			"qwen",
			[]string{"run `qwen --auth` once in a terminal to log in"},
			"run `qwen --auth` once in a terminal to log in"},
		{"qwen-code 0.15.10: openai names its variable in the description, qwen-oauth is a terminal login",
			`[{"id":"openai","name":"Use OpenAI API key","description":"Requires setting the ` + "`OPENAI_API_KEY`" + ` environment variable","_meta":{"type":"terminal","args":["--auth-type=openai"]}},{"id":"qwen-oauth","name":"Qwen OAuth","description":"Qwen OAuth (free tier discontinued 2026-04-15)","_meta":{"type":"terminal","args":["--auth-type=qwen-oauth"]}}]`,
			"qwen",
			[]string{"set OPENAI_API_KEY in the profile's env", "run `qwen --auth-type=qwen-oauth` once in a terminal to log in"},
			"set OPENAI_API_KEY in the profile's env; or run `qwen --auth-type=qwen-oauth` once in a terminal to log in"},
		{"a backticked name without the words environment variable is no variable",
			`[{"id":"login","name":"Login","description":"Run ` + "`LOGIN`" + ` in the terminal"}]`,
			"agent",
			[]string{"run `LOGIN` once in a terminal to log in"},
			"run `LOGIN` once in a terminal to log in"},
		{"typed env_var method",
			`[{"type":"env_var","id":"key","name":"Key","vars":[{"name":"GEMINI_API_KEY"},{"name":"GOOGLE_CLOUD_PROJECT","optional":true}]}]`,
			"gemini",
			[]string{"set GEMINI_API_KEY in the profile's env (optionally GOOGLE_CLOUD_PROJECT)"},
			"set GEMINI_API_KEY in the profile's env (optionally GOOGLE_CLOUD_PROJECT)"},
		{"typed terminal method",
			`[{"type":"terminal","id":"login","name":"Login","args":["login"]}]`,
			"/opt/agent",
			[]string{"run `/opt/agent login` once in a terminal to log in"},
			"run `/opt/agent login` once in a terminal to log in"},
		{"none announced (claude-agent-acp, auggie 0.36.0)", `[]`, "claude-agent-acp", nil,
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

// TestAutoAuthMethod: with no authMethod in the profile, tetherd
// authenticates with the first API-key method whose variables the agent's
// environment sets, and with none when no key is set.
func TestAutoAuthMethod(t *testing.T) {
	codex := `[{"id":"chatgpt","name":"Login with ChatGPT"},{"type":"env_var","id":"codex-api-key","name":"Use CODEX_API_KEY","vars":[{"name":"CODEX_API_KEY"}]},{"type":"env_var","id":"openai-api-key","name":"Use OPENAI_API_KEY","vars":[{"name":"OPENAI_API_KEY"},{"name":"OPENAI_ORG","optional":true}]}]`
	gemini := `[{"id":"oauth-personal","name":"Log in with Google"},{"id":"gemini-api-key","name":"Gemini API key","_meta":{"api-key":{"provider":"google"}}}]`
	qwen := `[{"id":"qwen-oauth","name":"Qwen OAuth","_meta":{"type":"terminal","args":["--auth"]}}]`
	qwen15 := `[{"id":"openai","name":"Use OpenAI API key","description":"Requires setting the ` + "`OPENAI_API_KEY`" + ` environment variable","_meta":{"type":"terminal","args":["--auth-type=openai"]}},{"id":"qwen-oauth","name":"Qwen OAuth","_meta":{"type":"terminal","args":["--auth-type=qwen-oauth"]}}]`
	tests := []struct {
		name, methods string
		env           []string
		want          string
	}{
		{"codex, OPENAI_API_KEY set", codex, []string{"PATH=/bin", "OPENAI_API_KEY=sk-x"}, "openai-api-key"},
		{"codex, both keys: the first announced", codex, []string{"OPENAI_API_KEY=sk-x", "CODEX_API_KEY=c"}, "codex-api-key"},
		{"codex, key empty", codex, []string{"CODEX_API_KEY="}, ""},
		{"codex, no key", codex, []string{"PATH=/bin"}, ""},
		{"gemini, GEMINI_API_KEY", gemini, []string{"GEMINI_API_KEY=g"}, "gemini-api-key"},
		{"gemini, GOOGLE_API_KEY is not its key", gemini, []string{"GOOGLE_API_KEY=g"}, ""},
		{"terminal login never automatic", qwen, []string{"QWEN_OAUTH=x"}, ""},
		{"qwen 0.15.10, OPENAI_API_KEY set: a variable named in prose is no reason to authenticate", qwen15, []string{"OPENAI_API_KEY=sk-x"}, ""},
		{"qwen 0.15.10, no key: no method", qwen15, []string{"PATH=/bin"}, ""},
		{"none announced", `[]`, []string{"ANTHROPIC_API_KEY=a"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp sdk.InitializeResponse
			if err := json.Unmarshal([]byte(`{"protocolVersion":1,"agentCapabilities":{},"authMethods":`+tt.methods+`}`), &resp); err != nil {
				t.Fatal(err)
			}
			if got := AutoAuthMethod(capabilitiesOf(resp).AuthMethods, tt.env); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
