// Package realagents_test runs real coding agents (claude-agent-acp and
// qwen-code, pinned in test/agents) under the real tetherd binary, over
// HTTP and SSE, against the scripted model server of internal/modelserver.
package realagents_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/modelserver"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/testbin"
)

// newToken is a world's own API token: a request that reaches another
// test's daemon is refused (401), never served.
func newToken() string { return "real-agents-" + rand.Text() }

// deadline bounds every wait: real agents are slow to start (session/new
// can take ~10 s), so this is generous; a safety net, never an assertion.
const deadline = 3 * time.Minute

func TestMain(m *testing.M) { testbin.Main(m) }

// agent is one real agent of the suite and how to point it at the model
// server.
type agent struct {
	id string
	// bin is the executable's name in test/agents/node_modules/.bin.
	bin  string
	args []string
	// env is the profile's environment for a model server and a HOME.
	env func(model *modelserver.Server, home string) map[string]string
}

var agents = []agent{
	{id: "claude", bin: "claude-agent-acp", env: func(m *modelserver.Server, home string) map[string]string {
		return map[string]string{"ANTHROPIC_BASE_URL": m.URL(), "ANTHROPIC_API_KEY": "dummy", "DISABLE_TELEMETRY": "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "HOME": home}
	}},
	{id: "qwen", bin: "qwen", args: []string{"--acp", "--auth-type", "openai"}, env: func(m *modelserver.Server, home string) map[string]string {
		return map[string]string{"OPENAI_API_KEY": "dummy", "OPENAI_BASE_URL": m.URL() + "/v1", "OPENAI_MODEL": "scripted-model", "HOME": home}
	}},
}

// command is the agent's installed executable; without it the suite skips
// loudly, except under CI where a missing agent is a failure.
func (a agent) command(t *testing.T) string {
	t.Helper()
	path := filepath.Join(testbin.Root(), "test", "agents", "node_modules", ".bin", a.bin)
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("real agent %s not installed (%v): run `cd test/agents && npm ci` (needs Node 20 + npm)", a.id, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING the real-agent suite: " + msg)
	}
	return path
}

// world is one model server, one daemon with one real agent's profile,
// and one session directory.
type world struct {
	t     *testing.T
	agent agent
	model *modelserver.Server
	dir   string // data dir
	cwd   string // the session's directory
	home  string // the agent's HOME, where it keeps its own sessions
	addr  string
	token string // the daemon's API token, the world's own
	cmd   *exec.Cmd
	done  chan struct{}
	logs  *testbin.LogBuffer
	// extra are more `tetherd serve` flags (e.g. the executor).
	extra []string
	// far is the remote executor host of a remote world, else nil.
	far *farHost
}

// newWorld starts the model server with script and a daemon whose only
// profile is the agent (so no other agent is spawned to be probed).
func newWorld(t *testing.T, a agent, script modelserver.Script, extra ...string) *world {
	t.Helper()
	w := prepareWorld(t, a, modelserver.Start(t, script), extra...)
	w.start()
	t.Cleanup(w.stop)
	return w
}

// prepareWorld is newWorld with the model server given and the daemon
// not started yet.
func prepareWorld(t *testing.T, a agent, model *modelserver.Server, extra ...string) *world {
	t.Helper()
	command := a.command(t)
	w := &world{t: t, agent: a, model: model, dir: t.TempDir(), addr: testbin.FreeAddr(t), logs: &testbin.LogBuffer{},
		extra: extra, token: newToken()}
	w.cwd = w.t.TempDir()
	if r, err := filepath.EvalSymlinks(w.cwd); err == nil {
		w.cwd = r
	}
	w.home = t.TempDir()
	w.writeProfiles(command)
	return w
}

// writeProfiles writes agents.yaml: the world's agent (its executable
// command) and others, each with its environment for the model server
// and the world's HOME, sandboxed on a network of its own that reaches
// the model server only (its HOME, set in env, is its own and stays
// writable).
func (w *world) writeProfiles(command string, others ...agent) {
	w.t.Helper()
	u, err := url.Parse(w.model.URL())
	if err != nil {
		w.t.Fatal(err)
	}
	var yaml strings.Builder
	yaml.WriteString("agents:\n")
	for i, a := range append([]agent{w.agent}, others...) {
		cmd := command
		if i > 0 {
			cmd = a.command(w.t)
		}
		cmdJSON, _ := json.Marshal(cmd)
		args, _ := json.Marshal(append([]string{}, a.args...))
		env, _ := json.Marshal(a.env(w.model, w.home))
		fmt.Fprintf(&yaml, "  - id: %s\n    command: %s\n    args: %s\n    env: %s\n    sandbox: {mode: required, network: loopback, ports: [%s]}\n",
			a.id, cmdJSON, args, env, u.Port())
	}
	if err := os.WriteFile(filepath.Join(w.dir, "agents.yaml"), []byte(yaml.String()), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// start runs `tetherd serve` and waits until it answers with the world's
// token. Another test's daemon may hold the port FreeAddr chose (taken
// between its choice and this bind): it answers 401 to this token, this
// daemon exits unable to bind, and the start is tried again on another
// port.
func (w *world) start() {
	w.t.Helper()
	for attempt := 1; ; attempt++ {
		w.cmd = exec.Command(testbin.Tetherd(w.t), append([]string{"serve", "--data-dir", w.dir, "--addr", w.addr, "--token", w.token, "--log-level", "debug", "--executor", "standalone"}, w.extra...)...)
		w.cmd.Stdout, w.cmd.Stderr = w.logs, w.logs
		if err := w.cmd.Start(); err != nil {
			w.t.Fatal(err)
		}
		w.done = make(chan struct{})
		go func() { _ = w.cmd.Wait(); close(w.done) }()
		ours := false
		w.waitFor("tetherd to become healthy", func() bool {
			select {
			case <-w.done:
				return true // exited: see below
			default:
			}
			req, _ := http.NewRequest(http.MethodGet, "http://"+w.addr+"/agents", nil)
			req.Header.Set("Authorization", "Bearer "+w.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			ours = resp.StatusCode == http.StatusOK
			return ours
		})
		if ours {
			return
		}
		if attempt < 3 && strings.Contains(w.logs.String(), "address already in use") {
			w.addr = testbin.FreeAddr(w.t)
			continue
		}
		w.t.Fatalf("tetherd exited during start-up:\n%s", w.logs.String())
	}
}

// stop stops the daemon with SIGTERM (which stops its agents) and shows
// its log and the model's requests if the test failed.
func (w *world) stop() {
	testbin.Terminate(w.t, w.cmd, w.done, "tetherd", deadline)
	if w.t.Failed() {
		w.t.Logf("--- tetherd output ---\n%s", w.logs.String())
		for i, r := range w.model.Requests() {
			w.t.Logf("--- model request %d: %s %s tools=%v last user=%q", i+1, r.API, r.Path, r.ToolNames(), r.LastUser().Text())
		}
	}
}

// waitFor polls cond until it holds.
func (w *world) waitFor(what string, cond func() bool) {
	w.t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			w.t.Fatalf("timed out after %s waiting for %s", deadline, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// do sends an API request with the token and decodes a JSON answer.
func (w *world) do(method, path string, body any) (int, map[string]any) {
	w.t.Helper()
	return testbin.DoJSON(w.t, "http://"+w.addr, w.token, method, path, body)
}

// createSession starts a session of the agent in the world's cwd.
func (w *world) createSession() string {
	w.t.Helper()
	code, m := w.do("POST", "/session", map[string]any{"agentProfileId": w.agent.id, "cwd": w.cwd})
	if code != http.StatusCreated {
		w.t.Fatalf("create session: got %d, want 201: %v", code, m)
	}
	return m["id"].(string)
}

// prompt sends a text prompt under promptID and insists on 202.
func (w *world) prompt(sid, text, promptID string) {
	w.t.Helper()
	code, m := w.do("POST", "/session/"+sid+"/prompt", map[string]any{
		"prompt": []map[string]any{{"type": "text", "text": text}}, "promptId": promptID})
	if code != http.StatusAccepted {
		w.t.Fatalf("prompt: got %d, want 202: %v", code, m)
	}
}

// waitTurn waits until the turn is terminal and returns it.
func (w *world) waitTurn(sid, pid string) map[string]any {
	w.t.Helper()
	var turn map[string]any
	w.waitFor("turn "+pid+" to end", func() bool {
		_, turn = w.do("GET", "/session/"+sid+"/turns/"+pid, nil)
		state, _ := turn["state"].(string)
		return session.TurnState(state).Terminal()
	})
	return turn
}

// continueTurn continues the session as promptID, fails the test unless it
// is accepted and the continuation completes, and returns the 202 body.
func (w *world) continueTurn(sid, promptID string) map[string]any {
	w.t.Helper()
	code, m := w.do("POST", "/session/"+sid+"/continue", map[string]any{"promptId": promptID})
	if code != http.StatusAccepted {
		w.t.Fatalf("continue: got %d %v, want 202", code, m)
	}
	if turn := w.waitTurn(sid, promptID); turn["state"] != "completed" {
		w.t.Fatalf("continuation: got %v, want completed: %v", turn["state"], turn)
	}
	return m
}

// transcript returns the session's transcript.
func (w *world) transcript(sid string) map[string]any {
	w.t.Helper()
	code, m := w.do("GET", "/session/"+sid+"/transcript", nil)
	if code != http.StatusOK {
		w.t.Fatalf("transcript: got %d, want 200: %v", code, m)
	}
	return m
}

// list returns a JSON array member as a slice of objects.
func list(m map[string]any, key string) []map[string]any { return testbin.List(m, key) }

// agentText joins the turn's agent messages of the transcript.
func agentText(tr map[string]any, pid string) string {
	var b strings.Builder
	for _, m := range list(tr, "messages") {
		if m["promptId"] == pid && m["role"] == "agent" {
			b.WriteString(m["text"].(string))
		}
	}
	return b.String()
}

// event is one durable SSE event of a session's stream.
type event struct {
	Type string
	Data map[string]any
}

// stream is a live SSE client of one session, collecting its events until
// the test ends.
type stream struct {
	mu     sync.Mutex
	events []event
	cancel context.CancelFunc
	done   chan struct{}
}

// follow connects to the session's live event stream.
func (w *world) follow(sid string) *stream {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{cancel: cancel, done: make(chan struct{})}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+w.addr+"/session/"+sid+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+w.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		w.t.Fatalf("events stream: %v %v", err, resp)
	}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		readEvents(resp.Body, func(ev event) {
			s.mu.Lock()
			s.events = append(s.events, ev)
			s.mu.Unlock()
		})
	}()
	w.t.Cleanup(func() { cancel(); <-s.done })
	return s
}

// seen returns the events received so far.
func (s *stream) seen() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event(nil), s.events...)
}

// count counts received events of type typ.
func (s *stream) count(typ string) int {
	n := 0
	for _, e := range s.seen() {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// readEvents parses an SSE body, calling fn for every event until it ends.
func readEvents(r io.Reader, fn func(event)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data)
		case line == "" && ev.Type != "":
			fn(ev)
			ev = event{}
		}
	}
}

// log returns the session's whole durable event log (follow=false).
func (w *world) log(sid string) []event {
	w.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+w.addr+"/session/"+sid+"/events?follow=false", nil)
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		w.t.Fatalf("event log: %v %v", err, resp)
	}
	defer resp.Body.Close()
	var out []event
	readEvents(resp.Body, func(ev event) { out = append(out, ev) })
	return out
}

// kill9 kills the daemon with SIGKILL: no shutdown, its agents lose their
// pipes. start brings up a new daemon on the same data dir and address.
func (w *world) kill9() {
	w.t.Helper()
	_ = w.cmd.Process.Kill()
	<-w.done
}

// waitStalled waits until the model's scripted reply has stalled at gate.
func waitStalled(t *testing.T, gate *modelserver.Gate) {
	t.Helper()
	select {
	case <-gate.Reached():
	case <-time.After(deadline):
		t.Fatal("the model's reply never stalled")
	}
}
