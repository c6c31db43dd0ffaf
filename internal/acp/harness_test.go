package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/testbin"
)

// waitTimeout bounds every wait on the agent; generous so that a loaded CI
// machine running -race does not flake.
const waitTimeout = 30 * time.Second

func TestMain(m *testing.M) { testbin.Main(m) }

// tetherdBinary is the tetherd executable shared by this package's tests.
func tetherdBinary(t *testing.T) string { return testbin.Tetherd(t) }

// repoRoot is the module root, two levels above this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// lineRecorder is a thread-safe io.Writer collecting what the daemon writes
// to the agent.
type lineRecorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *lineRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

// Lines returns the complete newline-terminated lines written so far and
// whatever trails the last newline (which should be empty: every message
// is one whole line).
func (r *lineRecorder) Lines() (lines [][]byte, partial []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	data := r.buf.Bytes()
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, append([]byte(nil), data[:i]...))
		data = data[i+1:]
	}
	return lines, append([]byte(nil), data...)
}

// recordingHandler records every update and answers permission requests
// from a script, in order.
type recordingHandler struct {
	mu       sync.Mutex
	updates  []acp.Update
	asked    []acp.PermissionRequest
	answers  []acp.PermissionOutcome
	answered int
}

func (h *recordingHandler) Update(u acp.Update, done func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.updates = append(h.updates, u)
	done()
}

func (h *recordingHandler) RequestPermission(_ context.Context, req acp.PermissionRequest) (acp.PermissionOutcome, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, req)
	if h.answered >= len(h.answers) {
		return acp.PermissionOutcome{}, fmt.Errorf("unscripted permission request %d for %q", len(h.asked), req.Tool.ID)
	}
	out := h.answers[h.answered]
	h.answered++
	return out, nil
}

// script queues answers for the coming permission requests.
func (h *recordingHandler) script(answers ...acp.PermissionOutcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers = append(h.answers, answers...)
}

func (h *recordingHandler) Updates() []acp.Update {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.updates)
}

func (h *recordingHandler) Asked() []acp.PermissionRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.asked)
}

// waitForUpdate polls until some update satisfies match.
func (h *recordingHandler) waitForUpdate(t *testing.T, what string, match func(acp.Update) bool) acp.Update {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		for _, u := range h.Updates() {
			if match(u) {
				return u
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no update %s within %s; got %s", what, waitTimeout, describeUpdates(h.Updates()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describeUpdates(us []acp.Update) string {
	var parts []string
	for _, u := range us {
		s := string(u.Kind)
		if u.Text != "" {
			s += fmt.Sprintf("(%q)", u.Text)
		}
		if u.Tool != nil {
			s += "(" + u.Tool.ID
			if u.Tool.Status != nil {
				s += " " + *u.Tool.Status
			}
			s += ")"
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// agentEnv is one demo agent started through acp.Start.
type agentEnv struct {
	conn    *acp.Conn
	handler *recordingHandler
	out     *lineRecorder
	cwd     string
}

// startDemoAgent starts `tetherd demo-agent --state-dir stateDir` confined
// to cwd. The agent is stopped at the end of the test.
func startDemoAgent(t *testing.T, stateDir, cwd string, extraFlags ...string) *agentEnv {
	t.Helper()
	bin := tetherdBinary(t)
	env := &agentEnv{handler: &recordingHandler{}, out: &lineRecorder{}, cwd: cwd}
	args := append([]string{"demo-agent", "--state-dir", stateDir}, extraFlags...)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	conn, err := acp.Start(ctx, acp.Options{
		// Sandboxed as a profile's agent is, its state dir its own.
		Spec: acp.Spec{Command: bin, Args: args, Dir: cwd,
			Sandbox: sandbox.Spec{Policy: sandbox.Policy{Writable: []string{stateDir}}}},
		Root:        cwd,
		Handler:     env.handler,
		InitTimeout: waitTimeout,
		StopGrace:   2 * time.Second,
		Outgoing:    env.out,
	})
	if err != nil {
		t.Fatalf("acp.Start(demo-agent): %v", err)
	}
	env.conn = conn
	t.Cleanup(func() { conn.Stop() })
	return env
}

// callCtx is the context for one ACP call in a test.
func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// textPrompt is a session/prompt content array with one text block.
func textPrompt(t *testing.T, text string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newCwd is a temp session directory holding README.md.
func newCwd(t *testing.T, readme string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
