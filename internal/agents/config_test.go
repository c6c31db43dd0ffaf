package agents_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

func TestConfigFile(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		content string
		onPath  []string
		// wantErr lists substrings of the error; empty means success.
		wantErr []string
		check   func(t *testing.T, r *agents.Registry)
	}{
		{
			name: "valid yaml with every field",
			file: "agents.yaml",
			content: `# my agents
agents:
  - id: my-agent
    displayName: My agent
    command: my-acp-agent
    args: ["--acp", "--verbose"]
    env: {FOO: bar, LEVEL: 3}
    envPassthrough: [ANTHROPIC_API_KEY, "OPENAI_*"]
    historyContextInjection: false
    resumeArgs: ["--resume", "{sessionId}"]
    maxAgents: 3
    budget: {maxTokens: 50000, maxCost: {amount: 2.5, currency: USD}, maxTurnSeconds: 600, stallSeconds: 120}
`,
			onPath: []string{"my-acp-agent"},
			check: func(t *testing.T, r *agents.Registry) {
				p := mustGet(t, r, "my-agent")
				if p.Source != agents.SourceConfig || !p.Available || p.UnavailableReason != "" {
					t.Errorf("got source %q available %v reason %q, want config/true/\"\"", p.Source, p.Available, p.UnavailableReason)
				}
				if p.DisplayName != "My agent" {
					t.Errorf("got display name %q, want %q", p.DisplayName, "My agent")
				}
				if p.Command != "/fake/bin/my-acp-agent" {
					t.Errorf("got command %q, want the resolved path /fake/bin/my-acp-agent", p.Command)
				}
				if !slices.Equal(p.Args, []string{"--acp", "--verbose"}) {
					t.Errorf("got args %q, want [--acp --verbose]", p.Args)
				}
				if p.Env["FOO"] != "bar" || p.Env["LEVEL"] != "3" || len(p.Env) != 2 {
					t.Errorf("got env %v, want FOO=bar LEVEL=3", p.Env)
				}
				if want := []string{"ANTHROPIC_API_KEY", "OPENAI_*"}; !slices.Equal(p.EnvPassthrough, want) {
					t.Errorf("got envPassthrough %q, want %q", p.EnvPassthrough, want)
				}
				spec, _, err := r.Spec("my-agent")
				if err != nil || !slices.Equal(spec.Passthrough, []string{"ANTHROPIC_API_KEY", "OPENAI_*"}) {
					t.Errorf("got spec passthrough %q (%v), want the profile's", spec.Passthrough, err)
				}
				if p.HistoryContextInjection {
					t.Errorf("got historyContextInjection true, want false (set explicitly)")
				}
				if got := p.ExpandResumeArgs("s-1"); !slices.Equal(got, []string{"--resume", "s-1"}) {
					t.Errorf("got resume args %q, want [--resume s-1]", got)
				}
				if p.MaxAgents != 3 {
					t.Errorf("got maxAgents %d, want 3", p.MaxAgents)
				}
				if b := p.Budget; b.MaxTokens != 50000 || b.MaxCost == nil || *b.MaxCost != (session.Cost{Amount: 2.5, Currency: "USD"}) ||
					b.MaxTurnSeconds != 600 || b.StallSeconds != 120 {
					t.Errorf("got budget %+v, want every member as written", b)
				}
			},
		},
		{
			name:    "defaults: display name is the id, history injection on",
			file:    "agents.yaml",
			content: "agents:\n  - id: bare\n    command: /bin/sh\n",
			check: func(t *testing.T, r *agents.Registry) {
				p := mustGet(t, r, "bare")
				if p.DisplayName != "bare" || !p.HistoryContextInjection || !p.Available || p.Command != "/bin/sh" {
					t.Errorf("got %+v, want display name bare, history injection on, available /bin/sh", p)
				}
				if p.ExpandResumeArgs("x") != nil {
					t.Errorf("got resume args %q, want nil", p.ExpandResumeArgs("x"))
				}
			},
		},
		{
			name:    "command not found is listed as unavailable with a reason",
			file:    "agents.yaml",
			content: "agents:\n  - id: ghost\n    command: ghost-acp\n  - id: gone\n    command: /nonexistent/agent\n",
			check: func(t *testing.T, r *agents.Registry) {
				for id, want := range map[string]string{
					"ghost": "`ghost-acp` not found on PATH",
					"gone":  "`/nonexistent/agent` does not exist or is not executable",
				} {
					p := mustGet(t, r, id)
					if p.Available || p.UnavailableReason != want {
						t.Errorf("%s: got available %v reason %q, want false %q", id, p.Available, p.UnavailableReason, want)
					}
				}
			},
		},
		{
			name: "entry overrides a detected id",
			file: "agents.yaml",
			content: `agents:
  - id: gemini
    command: /bin/sh
    args: [gemini-wrapper, --experimental-acp]
`,
			check: func(t *testing.T, r *agents.Registry) {
				p := mustGet(t, r, "gemini")
				if p.Source != agents.SourceConfig || p.Command != "/bin/sh" || !slices.Equal(p.Args, []string{"gemini-wrapper", "--experimental-acp"}) || !p.Available {
					t.Errorf("got %+v, want the config entry (source config, /bin/sh, its args, available)", p)
				}
				n := 0
				for _, q := range r.List() {
					if q.ID == "gemini" {
						n++
					}
				}
				if n != 1 {
					t.Errorf("got %d gemini profiles in List, want 1", n)
				}
			},
		},
		{
			name:    "entry overrides the built-in demo",
			file:    "agents.yaml",
			content: "agents:\n  - id: demo\n    command: /bin/sh\n",
			check: func(t *testing.T, r *agents.Registry) {
				p := mustGet(t, r, agents.DemoID)
				if p.Source != agents.SourceConfig || p.Command != "/bin/sh" || len(p.Args) != 0 {
					t.Errorf("got %+v, want the config entry", p)
				}
			},
		},
		{
			name: "valid json with escapes and tabs",
			file: "agents.json",
			content: "{\n\t\"agents\": [\n\t\t{\"id\": \"js\", \"command\": \"\\/bin\\/sh\", \"args\": [\"-c\", \"x\\ty\"],\n" +
				"\t\t \"env\": {\"N\": 1}, \"historyContextInjection\": false, \"resumeArgs\": null}\n\t]\n}\n",
			check: func(t *testing.T, r *agents.Registry) {
				p := mustGet(t, r, "js")
				if p.Command != "/bin/sh" || !slices.Equal(p.Args, []string{"-c", "x\ty"}) || p.Env["N"] != "1" || p.HistoryContextInjection {
					t.Errorf("got %+v, want /bin/sh [-c x<TAB>y] N=1 no history injection", p)
				}
			},
		},
		{
			name:    "empty file",
			file:    "agents.yaml",
			content: "# nothing yet\n",
			check: func(t *testing.T, r *agents.Registry) {
				if got := len(r.List()); got != 8 {
					t.Errorf("got %d profiles, want 8 (demo + 7 detected)", got)
				}
			},
		},
		{
			name:    "empty agents list",
			file:    "agents.json",
			content: `{"agents": []}`,
		},
		{
			name:    "unknown key",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n    colour: blue\n",
			wantErr: []string{"agents.yaml:4:", `unknown key "colour"`, "known keys: id, displayName"},
		},
		{
			name:    "misspelled key gets a suggestion",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n    display_name: A\n",
			wantErr: []string{"agents.yaml:4:", `did you mean "displayName"?`},
		},
		{
			name:    "unknown top-level key",
			file:    "agents.yaml",
			content: "agent:\n  - id: a\n",
			wantErr: []string{"agents.yaml:1:", `unknown key "agent" at the top level`},
		},
		{
			name:    "bad id",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n  - id: My Agent\n    command: /bin/sh\n",
			wantErr: []string{"agents.yaml:4:", "agents[1]", `invalid id "My Agent"`},
		},
		{
			name:    "id too long",
			file:    "agents.yaml",
			content: "agents:\n  - id: " + strings.Repeat("a", 65) + "\n    command: /bin/sh\n",
			wantErr: []string{"agents.yaml:2:", "invalid id"},
		},
		{
			name:    "negative maxAgents",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n    maxAgents: -1\n",
			wantErr: []string{"agents.yaml:4:", "maxAgents must be 0 (no own cap) or more"},
		},
		{
			name:    "negative budget",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n    budget:\n      maxTokens: -5\n",
			wantErr: []string{"agents.yaml:5:", `agents[0] (id "a"): a budget's limits cannot be negative`},
		},
		{
			name:    "budget cost without a currency",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n    budget: {maxCost: {amount: 3}}\n",
			wantErr: []string{"agents.yaml:4:", "three-letter currency"},
		},
		{
			name:    "unknown budget key",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n    budget:\n      maxTurns: 3\n",
			wantErr: []string{"agents.yaml:5:", `unknown key "maxTurns" in budget`},
		},
		{
			name:    "missing id",
			file:    "agents.yaml",
			content: "agents:\n  - command: /bin/sh\n",
			wantErr: []string{"agents.yaml:2:", "id is required"},
		},
		{
			name:    "missing command",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    displayName: A\n",
			wantErr: []string{"agents.yaml:2:", `agents[0] (id "a"): command is required`},
		},
		{
			name:    "relative command path",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: ./bin/agent\n",
			wantErr: []string{"agents.yaml:3:", "must be an absolute path or a bare name"},
		},
		{
			name:    "duplicate id",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n  - id: a\n    command: /bin/sh\n",
			wantErr: []string{"agents.yaml:4:", `duplicate id "a" (first defined at line 2)`},
		},
		{
			name:    "bad env name",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n    env: {\"A=B\": x}\n",
			wantErr: []string{"agents.yaml:4:", `invalid environment variable name "A=B"`},
		},
		{
			name:    "daemon variable in envPassthrough",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n    envPassthrough: [TETHER_TOKEN]\n",
			wantErr: []string{"agents.yaml:4:", "envPassthrough[0]", "never passed to agents"},
		},
		{
			name:    "bad envPassthrough name",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n    envPassthrough: [\"A B\"]\n",
			wantErr: []string{"agents.yaml:4:", `invalid environment variable name "A B"`},
		},
		{
			name:    "wrong type",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: /bin/sh\n    args: --acp\n",
			wantErr: []string{"agents.yaml:4:", "agents[0]", "cannot unmarshal"},
		},
		{
			name:    "agents is not a list",
			file:    "agents.yaml",
			content: "agents:\n  id: a\n",
			wantErr: []string{"agents.yaml:2:", `"agents" must be a list`},
		},
		{
			name:    "yaml syntax error",
			file:    "agents.yaml",
			content: "agents:\n  - id: a\n    command: [/bin/sh\n",
			wantErr: []string{"agents.yaml:"},
		},
		{
			name:    "several errors are reported together",
			file:    "agents.yaml",
			content: "agents:\n  - id: A\n    command: /bin/sh\n  - id: b\n",
			wantErr: []string{"agents.yaml:2:", "agents.yaml:4:", "invalid id", "command is required"},
		},
		{
			name:    "json unknown key",
			file:    "agents.json",
			content: "{\n  \"agents\": [\n    {\"id\": \"a\",\n     \"command\": \"/bin/sh\",\n     \"colour\": \"blue\"}\n  ]\n}\n",
			wantErr: []string{"agents.json:5:", `unknown key "colour"`},
		},
		{
			name:    "json syntax error",
			file:    "agents.json",
			content: "{\n  \"agents\": [\n    {\"id\": \"a\",}\n  ]\n}\n",
			wantErr: []string{"agents.json:3:", "invalid character"},
		},
		{
			name:    "json truncated",
			file:    "agents.json",
			content: "{\n  \"agents\": [\n",
			wantErr: []string{"agents.json:", "unexpected end of JSON input"},
		},
		{
			name:    "json wrong type",
			file:    "agents.json",
			content: "{\"agents\": [{\"id\": \"a\", \"command\": \"/bin/sh\", \"historyContextInjection\": \"maybe\"}]}",
			wantErr: []string{"agents.json:1:", "cannot unmarshal"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeConfig(t, tc.file, tc.content)
			r, err := agents.Load(context.Background(), agents.Config{
				DataDir: dir, Self: "/usr/bin/tetherd", LookPath: fakeLookPath(tc.onPath...), Logger: quiet,
			})
			if len(tc.wantErr) > 0 {
				wantConfigError(t, err, tc.wantErr)
				if !strings.Contains(err.Error(), filepath.Join(dir, tc.file)) {
					t.Errorf("got error %q, want it to name the file %s", err, filepath.Join(dir, tc.file))
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestConfigPath(t *testing.T) {
	t.Run("explicit path with any name", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "custom.yml")
		if err := os.WriteFile(path, []byte("agents:\n  - id: x\n    command: /bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := mustLoad(t, agents.Config{ConfigPath: path, LookPath: fakeLookPath()})
		mustGet(t, r, "x")
	})
	t.Run("explicit json path", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "agents.JSON")
		if err := os.WriteFile(path, []byte(`{"agents": [{"id": "x", "command": "/bin/sh"}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		r := mustLoad(t, agents.Config{ConfigPath: path, LookPath: fakeLookPath()})
		mustGet(t, r, "x")
	})
	t.Run("missing file is fine", func(t *testing.T) {
		r := mustLoad(t, agents.Config{DataDir: t.TempDir(), LookPath: fakeLookPath()})
		if got := len(r.List()); got != 8 {
			t.Errorf("got %d profiles, want 8", got)
		}
		mustLoad(t, agents.Config{ConfigPath: filepath.Join(t.TempDir(), "nope.yaml"), LookPath: fakeLookPath()})
	})
	t.Run("yaml and json both present", func(t *testing.T) {
		dir := writeConfig(t, "agents.yaml", "agents: []\n")
		if err := os.WriteFile(filepath.Join(dir, "agents.json"), []byte(`{"agents": []}`), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := agents.Load(context.Background(), agents.Config{DataDir: dir, LookPath: fakeLookPath(), Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), "keep only one") {
			t.Fatalf("got error %v, want one saying to keep only one config file", err)
		}
	})
	t.Run("home directory expansion", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("HOME", home)
		dir := writeConfig(t, "agents.yaml", "agents:\n  - id: x\n    command: ~/bin/agent\n")
		r := mustLoad(t, agents.Config{DataDir: dir, LookPath: fakeLookPath()})
		p := mustGet(t, r, "x")
		if want := filepath.Join(home, "bin/agent"); p.Command != want {
			t.Errorf("got command %q, want %q", p.Command, want)
		}
	})
}

// wantConfigError checks a config load failed with invalid_request and a
// message holding every string of want.
func wantConfigError(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	if got := errcode.CodeOf(err); got != errcode.InvalidRequest {
		t.Errorf("got code %q, want %q", got, errcode.InvalidRequest)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("got error %q, want it to contain %q", err, w)
		}
	}
}
