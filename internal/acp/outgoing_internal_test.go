package acp

import (
	"bytes"
	"testing"
)

func TestOutgoingAddsEmptyMCPServersToResume(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"resume without mcpServers", `{"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"cwd":"/w","sessionId":"s1"}}` + "\n",
			`{"id":3,"jsonrpc":"2.0","method":"session/resume","params":{"cwd":"/w","mcpServers":[],"sessionId":"s1"}}` + "\n"},
		{"resume with servers", `{"id":3,"method":"session/resume","params":{"mcpServers":[{"name":"x"}]}}` + "\n",
			`{"id":3,"method":"session/resume","params":{"mcpServers":[{"name":"x"}]}}` + "\n"},
		{"other request", `{"id":4,"method":"session/prompt","params":{"sessionId":"s1"}}` + "\n",
			`{"id":4,"method":"session/prompt","params":{"sessionId":"s1"}}` + "\n"},
		{"not JSON", "garbage \"method\":\"session/resume\"\n", "garbage \"method\":\"session/resume\"\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := outgoing{&buf}.Write([]byte(tc.in))
			if err != nil || n != len(tc.in) {
				t.Fatalf("Write: got %d, %v, want %d, nil", n, err, len(tc.in))
			}
			if got := buf.String(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
