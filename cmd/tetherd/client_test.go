package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// apiClient talks to a tetherd started by start with the token of its data dir.
type apiClient struct {
	t     *testing.T
	base  string
	token string
}

// client reads the token tetherd stored in dataDir.
func client(t *testing.T, dataDir, addr string) *apiClient {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "token"))
	if err != nil {
		t.Fatalf("read token: %v", err)
	}
	return &apiClient{t: t, base: "http://" + addr, token: strings.TrimSpace(string(b))}
}

// do sends a JSON request with the token and returns the status and body.
func (c *apiClient) do(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// object sends a request, requires status want and decodes a JSON object.
func (c *apiClient) object(method, path string, body any, want int) map[string]any {
	c.t.Helper()
	status, out := c.do(method, path, body)
	if status != want {
		c.t.Fatalf("%s %s: got %d, want %d: %s", method, path, status, want, out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		c.t.Fatalf("%s %s: decode %s: %v", method, path, out, err)
	}
	return m
}

// session creates a demo-agent session in a fresh workspace.
func (c *apiClient) session() string {
	c.t.Helper()
	cwd := c.t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "README.md"), []byte("# fixture\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return c.object("POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": cwd}, http.StatusCreated)["id"].(string)
}

// prompt sends a text prompt and returns its promptId.
func (c *apiClient) prompt(sid, text string) string {
	c.t.Helper()
	body := map[string]any{"prompt": []map[string]any{{"type": "text", "text": text}}}
	return c.object("POST", "/session/"+sid+"/prompt", body, http.StatusAccepted)["promptId"].(string)
}

// waitTurn polls the turn until it has an outcome; the deadline is a guard
// against hangs, not a performance assertion.
func (c *apiClient) waitTurn(sid, pid string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		turn := c.object("GET", "/session/"+sid+"/turns/"+pid, nil, http.StatusOK)
		switch turn["state"] {
		case "completed", "cancelled", "failed", "interrupted":
			return turn
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("turn %s did not end: %v", pid, turn)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
