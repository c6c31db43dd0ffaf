package agents_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tether/tether/internal/agents"
)

// TestMCPServers checks a profile's mcpServers: the ACP shapes it becomes
// and the errors that name the profile and the entry.
func TestMCPServers(t *testing.T) {
	const head = "agents:\n  - id: mcp-agent\n    command: /bin/sh\n    mcpServers:\n"
	tests := []struct {
		name    string
		servers string
		want    string   // the profile's MCPServers JSON when valid
		wantErr []string // substrings of the error otherwise
	}{
		{name: "absent", servers: "", want: `[]`},
		{
			name: "stdio, http and sse",
			servers: `      - {name: files, command: /usr/bin/mcp-files, args: ["--root", "/srv"], env: [{name: LEVEL, value: "3"}]}
      - {name: bare, command: mcp-bare}
      - {name: web, type: http, url: "https://mcp.example/api", headers: [{name: Authorization, value: "Bearer x"}]}
      - {name: events, type: sse, url: "http://127.0.0.1:9/sse"}
`,
			want: `[{"args":["--root","/srv"],"command":"/usr/bin/mcp-files","env":[{"name":"LEVEL","value":"3"}],"name":"files"},` +
				`{"args":[],"command":"mcp-bare","env":[],"name":"bare"},` +
				`{"headers":[{"name":"Authorization","value":"Bearer x"}],"name":"web","type":"http","url":"https://mcp.example/api"},` +
				`{"headers":[],"name":"events","type":"sse","url":"http://127.0.0.1:9/sse"}]`,
		},
		{name: "not a list", servers: "      files\n", wantErr: []string{`agents[0] (id "mcp-agent"): mcpServers must be a list`}},
		{name: "no name", servers: "      - {command: /bin/true}\n", wantErr: []string{`mcpServers[0]: name is required`}},
		{name: "stdio without command", servers: "      - {name: files}\n", wantErr: []string{`mcpServers[0] (name "files"): command is required`}},
		{name: "http without url", servers: "      - {name: web, type: http}\n", wantErr: []string{`(name "web"): url must be an absolute http(s) URL`}},
		{name: "url not http", servers: "      - {name: web, type: sse, url: \"file:///etc/passwd\"}\n", wantErr: []string{`url must be an absolute http(s) URL, got "file:///etc/passwd"`}},
		{name: "unknown type", servers: "      - {name: x, type: websocket, url: \"ws://h\"}\n", wantErr: []string{`unknown type "websocket" (known: stdio, http, sse)`}},
		{name: "key of another transport", servers: "      - {name: files, command: /bin/true, url: \"http://h\"}\n", wantErr: []string{`unknown key "url" for a stdio server`}},
		{name: "env as a map", servers: "      - {name: files, command: /bin/true, env: {A: b}}\n", wantErr: []string{`agents[0] (id "mcp-agent"): mcpServers[0]`}},
		{name: "bad env name", servers: "      - {name: files, command: /bin/true, env: [{name: \"A=B\", value: c}]}\n", wantErr: []string{`env[0]: invalid name "A=B"`}},
		{name: "duplicate name", servers: "      - {name: a, command: /bin/true}\n      - {name: a, command: /bin/false}\n", wantErr: []string{`mcpServers[1] (name "a"): duplicate MCP server name "a"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content := head + tc.servers
			if tc.servers == "" {
				content = strings.TrimSuffix(head, "    mcpServers:\n")
			}
			dir := writeConfig(t, "agents.yaml", content)
			r, err := agents.Load(context.Background(), agents.Config{DataDir: dir, Self: "/usr/bin/tetherd", LookPath: fakeLookPath(), Logger: quiet})
			if len(tc.wantErr) > 0 {
				wantConfigError(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			got := mustGet(t, r, "mcp-agent").MCPServers
			if got == nil {
				got = json.RawMessage("[]")
			}
			if string(got) != tc.want {
				t.Errorf("got mcpServers %s, want %s", got, tc.want)
			}
		})
	}
}
