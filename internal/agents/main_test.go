package agents_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/store"
)

// The test binary doubles as a minimal ACP agent: with fakeAgentEnv=1 in its
// environment (set through a profile's env) or run as "<self> demo-agent"
// (the built-in demo profile with Self = the test binary), it answers
// initialize and exits when stdin closes. fakeModeEnv picks what it
// advertises: "load" (default), "resume", "none", "crash" (exit before
// answering), or "auth" (an API-key method reading FAKE_API_KEY; without
// it, session/new answers -32000).
const (
	fakeAgentEnv = "AGENTS_TEST_FAKE_AGENT"
	fakeModeEnv  = "AGENTS_TEST_FAKE_MODE"
	fakeName     = "agents-test-fake"
)

func TestMain(m *testing.M) {
	// As tetherd would be, the test binary is its agents' sandbox init.
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		os.Exit(sandbox.InitMain(os.Args[2:]))
	}
	if os.Getenv(fakeAgentEnv) == "1" || (len(os.Args) > 1 && os.Args[1] == "demo-agent") {
		os.Exit(runFakeAgent(os.Getenv(fakeModeEnv)))
	}
	os.Exit(m.Run())
}

func runFakeAgent(mode string) int {
	if mode == "crash" {
		fmt.Fprintln(os.Stderr, "fake agent: crashing on purpose")
		return 3
	}
	conn := sdk.NewAgentSideConnection(fakeAgent{mode: mode}, os.Stdout, os.Stdin)
	<-conn.Done()
	return 0
}

// fakeAgent answers initialize; every other method is unsupported, which is
// fine because a probe never opens a session.
type fakeAgent struct{ mode string }

func (a fakeAgent) Initialize(context.Context, sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	resp := sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersion(1),
		AgentInfo:       &sdk.Implementation{Name: fakeName, Version: "9.9.9"},
		AgentCapabilities: sdk.AgentCapabilities{
			PromptCapabilities: sdk.PromptCapabilities{Image: true, EmbeddedContext: true},
		},
	}
	switch a.mode {
	case "", "load":
		resp.AgentCapabilities.LoadSession = true
	case "resume":
		resp.AgentCapabilities.SessionCapabilities.Resume = &sdk.SessionResumeCapabilities{}
	case "auth":
		resp.AuthMethods = []sdk.AuthMethod{{Agent: &sdk.AuthMethodAgent{Id: "key", Name: "Key",
			Meta: map[string]any{"api-key": map[string]any{"provider": "fake"}}}}}
	}
	return resp, nil
}

func (a fakeAgent) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	if a.mode == "auth" {
		return sdk.AuthenticateResponse{}, nil
	}
	return sdk.AuthenticateResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodAuthenticate)
}

func (fakeAgent) Cancel(context.Context, sdk.CancelNotification) error { return nil }

func (fakeAgent) CloseSession(context.Context, sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionClose)
}

func (fakeAgent) ListSessions(context.Context, sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionList)
}

func (a fakeAgent) NewSession(context.Context, sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	if a.mode == "auth" {
		if os.Getenv("FAKE_API_KEY") == "" {
			return sdk.NewSessionResponse{}, sdk.NewAuthRequired(map[string]any{"details": "FAKE_API_KEY is not set"})
		}
		return sdk.NewSessionResponse{SessionId: "s1"}, nil
	}
	return sdk.NewSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionNew)
}

func (fakeAgent) LoadSession(context.Context, sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	return sdk.LoadSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionLoad)
}

func (fakeAgent) Prompt(context.Context, sdk.PromptRequest) (sdk.PromptResponse, error) {
	return sdk.PromptResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionPrompt)
}

func (fakeAgent) ResumeSession(context.Context, sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
}

func (fakeAgent) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
}

func (fakeAgent) SetSessionMode(context.Context, sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
}

// The real store must keep satisfying the registry's interface.
var _ agents.Persister = (*store.Store)(nil)

// memStore is an in-memory Persister that mimics the store's rule of
// keeping stored capabilities and credentials when an upsert carries none.
type memStore struct {
	mu      sync.Mutex
	rows    map[string]store.AgentProfile
	upserts int
	fail    error
}

func newMemStore() *memStore { return &memStore{rows: map[string]store.AgentProfile{}} }

func (m *memStore) UpsertAgentProfile(_ context.Context, p store.AgentProfile) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.upserts++
	if old, ok := m.rows[p.ID]; ok && p.Capabilities == nil {
		p.Capabilities, p.ProbedAt = old.Capabilities, old.ProbedAt
	}
	if old, ok := m.rows[p.ID]; ok && p.Credentials == nil {
		p.Credentials = old.Credentials
	}
	m.rows[p.ID] = p
	return nil
}

func (m *memStore) ListAgentProfiles(context.Context) ([]store.AgentProfile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.AgentProfile, 0, len(m.rows))
	for _, r := range m.rows {
		out = append(out, r)
	}
	return out, nil
}

func (m *memStore) row(id string) (store.AgentProfile, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	return r, ok
}

// fakeLookPath finds the given bare names in /fake/bin and checks absolute
// paths for real, so tests never depend on what the machine has installed.
func fakeLookPath(onPath ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		if filepath.IsAbs(name) {
			return exec.LookPath(name)
		}
		for _, n := range onPath {
			if n == name {
				return "/fake/bin/" + name, nil
			}
		}
		return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
	}
}

// selfPath is the test binary, which can act as an ACP agent (see TestMain).
func selfPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeConfig writes a config file into a fresh data dir and returns the dir.
func writeConfig(t *testing.T, name, content string) string {
	t.Helper()
	dir := t.TempDir()
	if name != "" {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// quiet discards the registry's logs to keep test output readable.
var quiet = slog.New(slog.DiscardHandler)

func mustLoad(t *testing.T, cfg agents.Config) *agents.Registry {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	r, err := agents.Load(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return r
}

func mustGet(t *testing.T, r *agents.Registry, id string) agents.Profile {
	t.Helper()
	p, err := r.Get(id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return p
}

var errBoom = errors.New("boom")
