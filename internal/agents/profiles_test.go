package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
)

func TestDetection(t *testing.T) {
	r := mustLoad(t, agents.Config{
		Self:     "/usr/bin/tetherd",
		LookPath: fakeLookPath("claude-agent-acp", "opencode", "gemini"),
	})
	tests := []struct {
		id, command string
		args        []string
		available   bool
		reason      string
	}{
		{"claude", "/fake/bin/claude-agent-acp", nil, true, ""},
		{"codex", "codex-acp", nil, false, "`codex-acp` not found on PATH"},
		{"gemini", "/fake/bin/gemini", []string{"--acp"}, true, ""},
		{"qwen", "qwen", []string{"--acp"}, false, "`qwen` not found on PATH"},
		{"opencode", "/fake/bin/opencode", []string{"acp"}, true, ""},
		{"copilot", "copilot", []string{"--acp"}, false, "`copilot` not found on PATH"},
		{"auggie", "auggie", []string{"--acp"}, false, "`auggie` not found on PATH"},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			p := mustGet(t, r, tc.id)
			if p.Source != agents.SourceDetected {
				t.Errorf("got source %q, want %q", p.Source, agents.SourceDetected)
			}
			if p.Command != tc.command {
				t.Errorf("got command %q, want %q", p.Command, tc.command)
			}
			if !slices.Equal(p.Args, tc.args) {
				t.Errorf("got args %q, want %q", p.Args, tc.args)
			}
			if p.Available != tc.available || p.UnavailableReason != tc.reason {
				t.Errorf("got available %v reason %q, want %v %q", p.Available, p.UnavailableReason, tc.available, tc.reason)
			}
			if !p.HistoryContextInjection {
				t.Errorf("got historyContextInjection false, want true")
			}
			if p.DisplayName == "" {
				t.Errorf("got empty display name")
			}
		})
	}
	if p := mustGet(t, r, "claude"); p.DisplayName != "Claude Code (claude-agent-acp)" {
		t.Errorf("got claude display name %q, want %q", p.DisplayName, "Claude Code (claude-agent-acp)")
	}
}

func TestDetectionRefusesRelativePathResults(t *testing.T) {
	r := mustLoad(t, agents.Config{LookPath: func(name string) (string, error) { return "bin/" + name, nil }})
	p := mustGet(t, r, "codex")
	if p.Available || !strings.Contains(p.UnavailableReason, "relative") {
		t.Errorf("got available %v reason %q, want unavailable because the path is relative", p.Available, p.UnavailableReason)
	}
}

func TestDemoProfile(t *testing.T) {
	tests := []struct {
		name          string
		cfg           agents.Config
		wantArgs      []string
		wantAvailable bool
	}{
		{
			name:          "state dir under the data dir",
			cfg:           agents.Config{DataDir: "/var/lib/tether", Self: "/usr/bin/tetherd"},
			wantArgs:      []string{"demo-agent", "--state-dir", filepath.Join("/var/lib/tether", "demo-agent")},
			wantAvailable: true,
		},
		{
			name:          "explicit state dir",
			cfg:           agents.Config{DataDir: "/var/lib/tether", Self: "/usr/bin/tetherd", DemoStateDir: "/srv/demo"},
			wantArgs:      []string{"demo-agent", "--state-dir", "/srv/demo"},
			wantAvailable: true,
		},
		{
			name:     "unknown self",
			cfg:      agents.Config{DataDir: "/var/lib/tether"},
			wantArgs: []string{"demo-agent", "--state-dir", filepath.Join("/var/lib/tether", "demo-agent")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.DataDir = filepath.Join(t.TempDir(), "no-config-here")
			tc.cfg.LookPath = fakeLookPath()
			if tc.cfg.DemoStateDir == "" {
				tc.wantArgs[2] = filepath.Join(tc.cfg.DataDir, "demo-agent")
			}
			r := mustLoad(t, tc.cfg)
			p := mustGet(t, r, agents.DemoID)
			if p.Source != agents.SourceBuiltin || p.Command != tc.cfg.Self || p.DisplayName != "Demo agent (built-in)" {
				t.Errorf("got %+v, want builtin profile running %q", p, tc.cfg.Self)
			}
			if !slices.Equal(p.Args, tc.wantArgs) {
				t.Errorf("got args %q, want %q", p.Args, tc.wantArgs)
			}
			if p.Available != tc.wantAvailable || (!p.Available && p.UnavailableReason == "") {
				t.Errorf("got available %v reason %q, want available %v (with a reason if not)", p.Available, p.UnavailableReason, tc.wantAvailable)
			}
			if !p.HistoryContextInjection {
				t.Errorf("got historyContextInjection false, want true")
			}
		})
	}
}

func TestListOrder(t *testing.T) {
	dir := writeConfig(t, "agents.yaml", `agents:
  - id: zz-local
    command: /bin/sh
  - id: aa-missing
    command: /nonexistent
  - id: mm-local
    command: /bin/sh
`)
	r := mustLoad(t, agents.Config{DataDir: dir, Self: "/usr/bin/tetherd", LookPath: fakeLookPath("qwen")})
	var got []string
	for _, p := range r.List() {
		got = append(got, p.ID)
	}
	want := []string{"demo", "mm-local", "qwen", "zz-local", "aa-missing", "auggie", "claude", "codex", "copilot", "gemini", "opencode"}
	if !slices.Equal(got, want) {
		t.Errorf("got order %q, want %q", got, want)
	}
}

func TestGetUnknown(t *testing.T) {
	r := mustLoad(t, agents.Config{LookPath: fakeLookPath()})
	_, err := r.Get("nope")
	if got := errcode.CodeOf(err); got != errcode.AgentProfileNotFound {
		t.Errorf("got code %q (%v), want %q", got, err, errcode.AgentProfileNotFound)
	}
	_, _, err = r.Spec("nope")
	if got := errcode.CodeOf(err); got != errcode.AgentProfileNotFound {
		t.Errorf("Spec: got code %q, want %q", got, errcode.AgentProfileNotFound)
	}
	if err := r.RecordCapabilities(context.Background(), "nope", acp.Capabilities{}); errcode.CodeOf(err) != errcode.AgentProfileNotFound {
		t.Errorf("RecordCapabilities: got %v, want code %q", err, errcode.AgentProfileNotFound)
	}
}

func TestSpec(t *testing.T) {
	dir := writeConfig(t, "agents.yaml", `agents:
  - id: local
    command: /bin/sh
    args: [-c, "exec my-agent"]
    env: {ZED: "1", ALPHA: "a=b", MID: ""}
  - id: missing
    command: not-installed-acp
`)
	r := mustLoad(t, agents.Config{DataDir: dir, LookPath: fakeLookPath()})

	t.Run("available", func(t *testing.T) {
		spec, p, err := r.Spec("local")
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		if spec.Command != "/bin/sh" || !slices.Equal(spec.Args, []string{"-c", "exec my-agent"}) || spec.Dir != "" {
			t.Errorf("got spec %+v, want /bin/sh [-c exec my-agent] with no Dir", spec)
		}
		if want := []string{"ALPHA=a=b", "MID=", "ZED=1"}; !slices.Equal(spec.Env, want) {
			t.Errorf("got env %q, want %q", spec.Env, want)
		}
		if p.ID != "local" {
			t.Errorf("got profile %q, want local", p.ID)
		}
		spec.Args[0] = "mutated"
		if again, _, _ := r.Spec("local"); again.Args[0] != "-c" {
			t.Errorf("got args %q after mutating a returned spec, want the registry unchanged", again.Args)
		}
	})

	tests := []struct{ id, reason string }{
		{"missing", "`not-installed-acp` not found on PATH"},
		{"codex", "`codex-acp` not found on PATH"},
	}
	for _, tc := range tests {
		t.Run("unavailable "+tc.id, func(t *testing.T) {
			_, p, err := r.Spec(tc.id)
			if got := errcode.CodeOf(err); got != errcode.AgentUnavailable {
				t.Fatalf("got code %q (%v), want %q", got, err, errcode.AgentUnavailable)
			}
			var e *errcode.Error
			if !errors.As(err, &e) || e.Message != tc.reason {
				t.Errorf("got message %q, want %q", e.Message, tc.reason)
			}
			if p.ID != tc.id {
				t.Errorf("got profile %q alongside the error, want %q", p.ID, tc.id)
			}
		})
	}
}

func TestReturnedProfilesAreCopies(t *testing.T) {
	dir := writeConfig(t, "agents.yaml", "agents:\n  - id: x\n    command: /bin/sh\n    args: [a]\n    env: {K: v}\n    resumeArgs: [r]\n")
	r := mustLoad(t, agents.Config{DataDir: dir, LookPath: fakeLookPath()})
	if err := r.RecordCapabilities(context.Background(), "x", acp.Capabilities{LoadSession: true}); err != nil {
		t.Fatal(err)
	}
	p := mustGet(t, r, "x")
	p.Args[0], p.Env["K"], p.ResumeArgs[0] = "changed", "changed", "changed"
	p.Capabilities.LoadSession = false
	*p.ProbedAt = time.Time{}
	q := mustGet(t, r, "x")
	if q.Args[0] != "a" || q.Env["K"] != "v" || q.ResumeArgs[0] != "r" || !q.Capabilities.LoadSession || q.ProbedAt.IsZero() {
		t.Errorf("got %+v after mutating a copy, want the registry unchanged", q)
	}
}

func TestRecordCapabilities(t *testing.T) {
	tests := []struct {
		name       string
		caps       acp.Capabilities
		wantNative bool
	}{
		{"loadSession", acp.Capabilities{LoadSession: true}, true},
		{"resume", acp.Capabilities{Resume: true}, true},
		{"both", acp.Capabilities{LoadSession: true, Resume: true}, true},
		{"neither", acp.Capabilities{Image: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newMemStore()
			r := mustLoad(t, agents.Config{Self: "/usr/bin/tetherd", LookPath: fakeLookPath(), Store: st})
			if p := mustGet(t, r, agents.DemoID); p.NativeSessionResume || p.Capabilities != nil || p.ProbedAt != nil {
				t.Fatalf("got %+v before any probe, want no capabilities", p)
			}
			before := time.Now()
			if err := r.RecordCapabilities(context.Background(), agents.DemoID, tc.caps); err != nil {
				t.Fatalf("RecordCapabilities: %v", err)
			}
			p := mustGet(t, r, agents.DemoID)
			if p.NativeSessionResume != tc.wantNative {
				t.Errorf("got NativeSessionResume %v, want %v", p.NativeSessionResume, tc.wantNative)
			}
			if p.Capabilities == nil || !reflect.DeepEqual(*p.Capabilities, tc.caps) {
				t.Errorf("got capabilities %+v, want %+v", p.Capabilities, tc.caps)
			}
			if p.ProbedAt == nil || p.ProbedAt.Before(before.Add(-time.Second)) {
				t.Errorf("got ProbedAt %v, want about now", p.ProbedAt)
			}
			row, ok := st.row(agents.DemoID)
			if !ok || row.NativeSessionResume != tc.wantNative || row.ProbedAt == nil {
				t.Errorf("got stored row %+v, want native resume %v and a probe time", row, tc.wantNative)
			}
			stored, err := agents.UnmarshalCapabilities(row.Capabilities)
			if err != nil || !reflect.DeepEqual(stored, tc.caps) {
				t.Errorf("got stored capabilities %+v (%v), want %+v", stored, err, tc.caps)
			}
		})
	}
}

func TestCapabilitiesJSON(t *testing.T) {
	caps := acp.Capabilities{
		ProtocolVersion: 1, LoadSession: true, Resume: true, Image: true, Audio: false,
		EmbeddedContext: true, AgentName: "x", AgentVersion: "1.2",
		AuthMethods: []acp.AuthMethod{
			{ID: "api-key", Name: "API key", Type: acp.AuthAgent, Meta: map[string]any{"api-key": map[string]any{"provider": "openai"}}},
			{ID: "env", Name: "Env", Description: "d", Type: acp.AuthEnvVar, Vars: []string{"A_KEY"}},
			{ID: "login", Name: "Login", Type: acp.AuthTerminal, Args: []string{"--login"}},
		},
	}
	b := agents.MarshalCapabilities(caps)
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"protocolVersion", "loadSession", "resume", "promptCapabilities", "agentName", "agentVersion", "authMethods"} {
		if _, ok := generic[key]; !ok {
			t.Errorf("got %s, want key %q", b, key)
		}
	}
	pc, _ := generic["promptCapabilities"].(map[string]any)
	if pc["image"] != true || pc["audio"] != false || pc["embeddedContext"] != true {
		t.Errorf("got promptCapabilities %v, want image/embeddedContext true, audio false", pc)
	}
	back, err := agents.UnmarshalCapabilities(b)
	if err != nil || !reflect.DeepEqual(back, caps) {
		t.Errorf("got round trip %+v (%v), want %+v", back, err, caps)
	}
	if _, err := agents.UnmarshalCapabilities(json.RawMessage(`[`)); err == nil {
		t.Errorf("got no error for malformed JSON, want one")
	}
}

func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	st := newMemStore()
	dir := writeConfig(t, "agents.yaml", "agents:\n  - id: x\n    command: /bin/sh\n    env: {K: v}\n")
	cfg := agents.Config{DataDir: dir, Self: "/usr/bin/tetherd", LookPath: fakeLookPath("codex-acp"), Store: st}
	r := mustLoad(t, cfg)

	if got, want := len(st.rows), len(r.List()); got != want {
		t.Errorf("got %d stored profiles, want every profile (%d)", got, want)
	}
	row, _ := st.row("x")
	if row.Source != agents.SourceConfig || row.Command != "/bin/sh" || row.Env["K"] != "v" || !row.Available || row.Capabilities != nil {
		t.Errorf("got stored row %+v, want the config profile without capabilities", row)
	}
	if row, _ := st.row("qwen"); row.Available || row.UnavailableReason != "`qwen` not found on PATH" {
		t.Errorf("got stored qwen %+v, want unavailable with reason", row)
	}

	caps := acp.Capabilities{ProtocolVersion: 1, Resume: true, AgentName: "codex"}
	if err := r.RecordCapabilities(ctx, "codex", caps); err != nil {
		t.Fatal(err)
	}

	t.Run("restored after restart", func(t *testing.T) {
		r2 := mustLoad(t, cfg)
		p := mustGet(t, r2, "codex")
		if p.Capabilities == nil || !reflect.DeepEqual(*p.Capabilities, caps) || !p.NativeSessionResume || p.ProbedAt == nil {
			t.Errorf("got %+v, want capabilities %+v restored with native resume", p, caps)
		}
		if p := mustGet(t, r2, "x"); p.Capabilities != nil {
			t.Errorf("got capabilities %+v for an unprobed profile, want nil", p.Capabilities)
		}
	})

	t.Run("dropped when the command changed", func(t *testing.T) {
		moved := cfg
		moved.LookPath = func(name string) (string, error) {
			if name == "codex-acp" {
				return "/opt/codex/bin/codex-acp", nil
			}
			return fakeLookPath()(name)
		}
		r3 := mustLoad(t, moved)
		if p := mustGet(t, r3, "codex"); p.Capabilities != nil || p.NativeSessionResume {
			t.Errorf("got %+v, want stale capabilities dropped", p)
		}
	})

	t.Run("store failures are reported", func(t *testing.T) {
		st.fail = errBoom
		defer func() { st.fail = nil }()
		if _, err := agents.Load(ctx, agents.Config{LookPath: fakeLookPath(), Store: st, Logger: quiet}); !errors.Is(err, errBoom) {
			t.Errorf("Load: got %v, want the store error", err)
		}
		if err := r.RecordCapabilities(ctx, "x", caps); !errors.Is(err, errBoom) {
			t.Errorf("RecordCapabilities: got %v, want the store error", err)
		}
		if p := mustGet(t, r, "x"); p.Capabilities == nil {
			t.Errorf("got no capabilities in memory after a failed persist, want them kept")
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	r := mustLoad(t, agents.Config{Self: "/usr/bin/tetherd", LookPath: fakeLookPath("codex-acp"), Store: newMemStore()})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				switch (i + j) % 4 {
				case 0:
					_ = r.RecordCapabilities(context.Background(), "codex", acp.Capabilities{ProtocolVersion: j, LoadSession: j%2 == 0})
				case 1:
					_ = r.List()
				case 2:
					_, _ = r.Get("codex")
				case 3:
					_, _, _ = r.Spec("codex")
				}
			}
		})
	}
	wg.Wait()
}
