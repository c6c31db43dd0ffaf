package acp

import (
	"bytes"
	"errors"
	"sync/atomic"
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
			n, err := outgoing{w: &buf, promptSent: new(atomic.Pointer[func()])}.Write([]byte(tc.in))
			if err != nil || n != len(tc.in) {
				t.Fatalf("Write: got %d, %v, want %d, nil", n, err, len(tc.in))
			}
			if got := buf.String(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestOutgoingPromptSent: the hook runs once, after the session/prompt
// request itself was written; never for other lines, for the method name
// inside a string, or for a write that failed.
func TestOutgoingPromptSent(t *testing.T) {
	prompt := `{"id":4,"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}` + "\n"
	cases := []struct {
		name   string
		lines  []string
		broken bool
		want   int
	}{
		{"the prompt request", []string{prompt}, false, 1},
		{"twice: one-shot", []string{prompt, prompt}, false, 1},
		{"another request", []string{`{"id":5,"method":"session/cancel","params":{}}` + "\n"}, false, 0},
		{"the name inside a string", []string{`{"id":6,"result":{"content":"\"method\":\"session/prompt\""}}` + "\n"}, false, 0},
		{"the write failed", []string{prompt}, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			o := outgoing{w: &buf, promptSent: new(atomic.Pointer[func()])}
			if tc.broken {
				o.w = failingWriter{}
			}
			got := 0
			f := func() { got++ }
			o.promptSent.Store(&f)
			for _, l := range tc.lines {
				_, _ = o.Write([]byte(l))
			}
			if got != tc.want {
				t.Errorf("hook calls: got %d, want %d", got, tc.want)
			}
		})
	}
}
