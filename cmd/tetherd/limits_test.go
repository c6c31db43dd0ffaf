package main_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMaxAgentsFlag runs the real binary with --max-agents 1: the second
// session that needs an agent is refused with 503 agent_limit_reached and
// Retry-After, and is not created.
func TestMaxAgentsFlag(t *testing.T) {
	bin, dir, addr := binary(t), t.TempDir(), freeAddr(t)
	cmd, logs := start(t, bin, dir, addr, "--max-agents", "1")
	// A clean stop stops the agents before the data dir is removed.
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	raw, _ := os.ReadFile(filepath.Join(dir, "token"))
	token := strings.TrimSpace(string(raw))
	post := func() (int, http.Header, map[string]any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"agentProfileId": "demo", "cwd": t.TempDir()})
		req, _ := http.NewRequest("POST", "http://"+addr+"/session", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, resp.Header, m
	}
	if status, _, m := post(); status != http.StatusCreated {
		t.Fatalf("first session: got %d %v, want 201\n%s", status, m, logs.String())
	}
	status, h, m := post()
	if status != http.StatusServiceUnavailable || m["code"] != "agent_limit_reached" || h.Get("Retry-After") == "" {
		t.Errorf("second session: got %d %v (Retry-After %q), want 503 agent_limit_reached with Retry-After", status, m, h.Get("Retry-After"))
	}
}
