package edge_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// deepPrompt is a prompt whose _meta nests levels objects deep.
func deepPrompt(levels int) string {
	return `{"prompt":[{"type":"text","text":"x","_meta":` + strings.Repeat(`{"a":`, levels) + `{}` + strings.Repeat(`}`, levels) + `}]}`
}

// TestHostileRequestsOnTheBinary sends, over raw connections to the real
// binary, the request shapes a careless or hostile client uses; each gets
// the 4xx problem with its stable code, never a 5xx, and nothing behind it
// runs.
func TestHostileRequestsOnTheBinary(t *testing.T) {
	d := startDaemon(t, daemonOptions{args: []string{"--body-limit", "8K"}})
	st, b, err := d.do("POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": t.TempDir()})
	if err != nil || st != http.StatusCreated {
		t.Fatalf("POST /session: got %d %s (%v), want 201", st, b, err)
	}
	var sess struct{ ID string }
	if err := json.Unmarshal(b, &sess); err != nil {
		t.Fatal(err)
	}
	auth := "Authorization: Bearer " + token
	jsonBody := func(method, path, body string, headers ...string) string {
		h := append([]string{auth, "Content-Type: application/json", fmt.Sprintf("Content-Length: %d", len(body))}, headers...)
		return request(method, path, h...) + body
	}
	chunked := request("POST", "/tasks", auth, "Content-Type: application/json", "Transfer-Encoding: chunked") +
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", 16<<10, `{"title":"`+strings.Repeat("x", 16<<10-12)+`"}`)
	deep := deepPrompt(100) // within the body limit, past --prompt-max-depth (64)
	cases := []struct {
		name   string
		raw    string
		status int
		code   string // "" for a success
	}{
		{"trailing garbage after the JSON value", jsonBody("POST", "/tasks", `{"title":"x"} GARBAGE`), 400, "malformed_json"},
		{"two JSON values", jsonBody("POST", "/tasks", `{"title":"x"}{"title":"y"}`), 400, "malformed_json"},
		{"chunked body over the limit", chunked, 413, "payload_too_large"},
		{"declared body over the limit", jsonBody("POST", "/tasks", `{"title":"`+strings.Repeat("x", 10000)+`"}`), 413, "payload_too_large"},
		{"a name that is not served (DNS rebinding)", strings.Replace(request("GET", "/health"), "Host: 127.0.0.1", "Host: rebind.example", 1), 403, "host_not_allowed"},
		{"lowercase bearer scheme", request("GET", "/agents", "Authorization: bearer "+token), 200, ""},
		{"system directory as cwd", jsonBody("POST", "/session", `{"agentProfileId":"demo","cwd":"/"}`), 400, "cwd_refused"},
		{"/proc as cwd", jsonBody("POST", "/session", `{"agentProfileId":"demo","cwd":"/proc"}`), 400, "cwd_refused"},
		{"a prompt nested too deep", jsonBody("POST", "/session/"+sess.ID+"/prompt", deep), 400, "validation_failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := d.dial()
			if _, err := c.Write([]byte(tc.raw)); err != nil {
				t.Fatal(err)
			}
			resp, body, err := readResponse(c, bufio.NewReader(c), time.Now().Add(deadline))
			if err != nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, body, tc.status)
			}
			if tc.code == "" {
				return
			}
			var p struct{ Code string }
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") || json.Unmarshal(body, &p) != nil {
				t.Fatalf("got %q %s, want problem+json", ct, body)
			}
			if p.Code != tc.code {
				t.Errorf("got code %q, want %q", p.Code, tc.code)
			}
		})
	}
	// The refused prompt left no turn behind.
	st, b, err = d.do("GET", "/session/"+sess.ID+"/transcript", nil)
	if err != nil || st != http.StatusOK {
		t.Fatalf("transcript: got %d (%v), want 200", st, err)
	}
	var tr struct{ Turns []any }
	if err := json.Unmarshal(b, &tr); err != nil || len(tr.Turns) != 0 {
		t.Errorf("turns after the refused prompt: got %s, want none", b)
	}
}
