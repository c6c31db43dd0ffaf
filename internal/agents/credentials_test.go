package agents_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tether/tether/internal/agents"
)

var (
	requiredAtStart  = agents.Credentials{Status: agents.CredentialsRequired, Stage: agents.StageStart, Message: "start: set K"}
	requiredAtPrompt = agents.Credentials{Status: agents.CredentialsRequired, Stage: agents.StagePrompt, Message: "prompt: set K"}
	okAtStart        = agents.Credentials{Status: agents.CredentialsOK, Stage: agents.StageStart}
	okAtPrompt       = agents.Credentials{Status: agents.CredentialsOK, Stage: agents.StagePrompt}
)

// TestRecordCredentials: each observation replaces the last, except that
// an agent that starts says nothing of what a prompt showed.
func TestRecordCredentials(t *testing.T) {
	tests := []struct {
		name string
		seen []agents.Credentials
		want agents.Credentials
	}{
		{"a start that asks", []agents.Credentials{requiredAtStart}, requiredAtStart},
		{"a start that works after one that asked", []agents.Credentials{requiredAtStart, okAtStart}, okAtStart},
		{"a start that asks after one that worked", []agents.Credentials{okAtStart, requiredAtStart}, requiredAtStart},
		{"a prompt that asks after a start that worked", []agents.Credentials{okAtStart, requiredAtPrompt}, requiredAtPrompt},
		{"a start that works keeps a prompt that asked", []agents.Credentials{requiredAtPrompt, okAtStart}, requiredAtPrompt},
		{"a prompt that works clears a prompt that asked", []agents.Credentials{requiredAtPrompt, okAtStart, okAtPrompt}, okAtPrompt},
		{"a start that works keeps a prompt that worked", []agents.Credentials{okAtPrompt, okAtStart}, okAtPrompt},
		{"a start that asks after a prompt that worked", []agents.Credentials{okAtPrompt, requiredAtStart}, requiredAtStart},
		{"a start that asks after a prompt that asked", []agents.Credentials{requiredAtPrompt, requiredAtStart}, requiredAtStart},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newMemStore()
			r := mustLoad(t, agents.Config{DataDir: fakeConfig(t, "load"), LookPath: fakeLookPath(), Store: st})
			for _, c := range tc.seen {
				if err := r.RecordCredentials(context.Background(), "fake-load", c); err != nil {
					t.Fatalf("RecordCredentials: %v", err)
				}
			}
			got := mustGet(t, r, "fake-load").Credentials
			if got == nil || got.Status != tc.want.Status || got.Stage != tc.want.Stage || got.Message != tc.want.Message {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got.Fingerprint != r.Fingerprint("fake-load") || got.ObservedAt.IsZero() {
				t.Errorf("got fingerprint %q at %v, want the profile's %q and a time", got.Fingerprint, got.ObservedAt, r.Fingerprint("fake-load"))
			}
			if row, _ := st.row("fake-load"); len(row.Credentials) == 0 {
				t.Errorf("got stored row without credentials, want them persisted")
			}
		})
	}
}

// TestCredentialsSurviveOnlyTheSameConfiguration: what was seen is loaded
// again while the profile launches its agent the same way, and dropped
// when its env or a passthrough variable's value in the daemon's
// environment changed (a key set since).
func TestCredentialsSurviveOnlyTheSameConfiguration(t *testing.T) {
	const pass = "AGENTS_TEST_CREDENTIALS_KEY"
	config := func(t *testing.T, env string) string {
		return writeConfig(t, "agents.yaml", fmt.Sprintf("agents:\n  - id: x\n    command: %q\n    env: {%s}\n", selfPath(t), env))
	}
	tests := []struct {
		name        string
		env, passTo string // the profile's env, the passthrough variable's value at the second load
		wantKept    bool
	}{
		{"same configuration", "", "", true},
		{"a key in the profile's env", "K: v", "", false},
		{"a passthrough variable set in the daemon's environment", "", "secret", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newMemStore()
			t.Setenv(pass, "")
			cfg := agents.Config{DataDir: config(t, ""), LookPath: fakeLookPath(), Store: st, EnvPassthrough: []string{pass}}
			r := mustLoad(t, cfg)
			if err := r.RecordCredentials(context.Background(), "x", requiredAtStart); err != nil {
				t.Fatal(err)
			}
			t.Setenv(pass, tc.passTo)
			cfg.DataDir = config(t, tc.env)
			got := mustGet(t, mustLoad(t, cfg), "x").Credentials
			if kept := got != nil; kept != tc.wantKept {
				t.Errorf("got credentials %+v after the second load, want kept %v", got, tc.wantKept)
			}
		})
	}
}
