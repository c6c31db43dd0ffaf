package server_test

import (
	"encoding/json"
	"testing"
)

// TestProfileMCPServers gives a profile MCP servers in agents.yaml: the
// demo agent receives them on session/new, and after a daemon restart on
// session/resume or session/load, from what the session stored (the
// restarted daemon's profile has none any more).
func TestProfileMCPServers(t *testing.T) {
	const servers = `    mcpServers:
      - {name: files, command: /usr/bin/mcp-files, args: ["--root", "/srv"], env: [{name: LEVEL, value: "3"}]}
      - {name: web, type: http, url: "https://mcp.example/api", headers: [{name: Authorization, value: "Bearer x"}]}
`
	const want = `[{"name":"files","command":"/usr/bin/mcp-files","args":["--root","/srv"],"env":[{"name":"LEVEL","value":"3"}]},` +
		`{"type":"http","name":"web","url":"https://mcp.example/api","headers":[{"name":"Authorization","value":"Bearer x"}]}]`
	cases := []struct {
		name    string
		flags   []string
		restore string
	}{
		{"resume", nil, "session/resume"},
		{"load", []string{"--no-resume"}, "session/load"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prof := agentProfile{id: "mcp", stateDir: t.TempDir(), flags: tc.flags}
			d := startDaemon(t, daemonOptions{leakCheck: true, agentsYAML: profilesYAML(t, prof) + servers})
			sid, _ := d.createSession(map[string]any{"agentProfileId": "mcp"})
			check := func(when, method, pid string) {
				t.Helper()
				if got := agentReply(t, d, sid, d.waitTurnID(sid, d.prompt(sid, "/mcp", pid))); !sameJSON(t, got, "mcpServers=", want) {
					t.Errorf("%s: the agent holds %s, want mcpServers=%s", when, got, want)
				}
				sent := 0
				for _, r := range d.Sent.requests(sid) {
					if r["method"] != method {
						continue
					}
					sent++
					b, _ := json.Marshal(r["params"].(map[string]any)["mcpServers"])
					if !sameJSON(t, string(b), "", want) {
						t.Errorf("%s: %s sent mcpServers %s, want %s", when, method, b, want)
					}
				}
				if sent != 1 {
					t.Errorf("%s: %s sent %d times, want 1", when, method, sent)
				}
			}
			check("new", "session/new", "p1")
			d = d.restart(daemonOptions{agentsYAML: profilesYAML(t, prof)})
			check("after restart", tc.restore, "p2")
		})
	}
}

// sameJSON reports whether got, after prefix, is the JSON want.
func sameJSON(t *testing.T, got, prefix, want string) bool {
	t.Helper()
	if len(got) < len(prefix) || got[:len(prefix)] != prefix {
		return false
	}
	var a, b any
	if json.Unmarshal([]byte(got[len(prefix):]), &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
