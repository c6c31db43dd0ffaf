package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	status, out, err := c.try(method, path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	return status, out
}

// try is do for goroutines other than the test's: it returns the error.
func (c *apiClient) try(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return resp.StatusCode, out, nil
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

// tryTurn runs one prompt to its end, for goroutines other than the test's.
func (c *apiClient) tryTurn(sid, text string) error {
	status, body, err := c.try("POST", "/session/"+sid+"/prompt",
		map[string]any{"prompt": []map[string]any{{"type": "text", "text": text}}})
	if err != nil || status != http.StatusAccepted {
		return fmt.Errorf("prompt: %d %s %v", status, body, err)
	}
	var admitted struct{ PromptID string }
	if err := json.Unmarshal(body, &admitted); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		status, body, err := c.try("GET", "/session/"+sid+"/turns/"+admitted.PromptID, nil)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("turn: %d %s %v", status, body, err)
		}
		var turn struct{ State string }
		if err := json.Unmarshal(body, &turn); err != nil {
			return err
		}
		switch turn.State {
		case "completed", "cancelled", "failed", "interrupted":
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("turn %s did not end", admitted.PromptID)
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
