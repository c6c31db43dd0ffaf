package agents_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
)

// fakeConfig writes a config whose entries run the test binary as a fake
// ACP agent in the given modes (id = "fake-<mode>").
func fakeConfig(t *testing.T, modes ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, m := range modes {
		fmt.Fprintf(&b, "  - id: fake-%s\n    command: %q\n    env: {%s: \"1\", %s: %s}\n", m, selfPath(t), fakeAgentEnv, fakeModeEnv, m)
	}
	return writeConfig(t, "agents.yaml", b.String())
}

func TestProbe(t *testing.T) {
	tests := []struct {
		mode                   string
		wantLoad, wantResume   bool
		wantNativeSessionResum bool
	}{
		{"load", true, false, true},
		{"resume", false, true, true},
		{"none", false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			st := newMemStore()
			r := mustLoad(t, agents.Config{DataDir: fakeConfig(t, tc.mode), LookPath: fakeLookPath(), Store: st})
			id := "fake-" + tc.mode
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			caps, err := r.Probe(ctx, id, t.TempDir())
			if err != nil {
				t.Fatalf("Probe: %v", err)
			}
			if caps.LoadSession != tc.wantLoad || caps.Resume != tc.wantResume {
				t.Errorf("got loadSession %v resume %v, want %v %v", caps.LoadSession, caps.Resume, tc.wantLoad, tc.wantResume)
			}
			if caps.ProtocolVersion != 1 || caps.AgentName != fakeName || caps.AgentVersion != "9.9.9" || !caps.Image || !caps.EmbeddedContext || caps.Audio {
				t.Errorf("got %+v, want protocol 1, agent %s 9.9.9, image+embeddedContext", caps, fakeName)
			}
			p := mustGet(t, r, id)
			if p.NativeSessionResume != tc.wantNativeSessionResum {
				t.Errorf("got NativeSessionResume %v, want %v", p.NativeSessionResume, tc.wantNativeSessionResum)
			}
			if p.Capabilities == nil || !reflect.DeepEqual(*p.Capabilities, caps) || p.ProbedAt == nil {
				t.Errorf("got profile capabilities %+v probed %v, want %+v recorded", p.Capabilities, p.ProbedAt, caps)
			}
			if row, _ := st.row(id); row.Capabilities == nil || row.NativeSessionResume != tc.wantNativeSessionResum {
				t.Errorf("got stored row %+v, want capabilities persisted", row)
			}
		})
	}
}

func TestProbeDemoProfile(t *testing.T) {
	// Self is the test binary, which acts as the demo agent when run as
	// "<self> demo-agent ...".
	r := mustLoad(t, agents.Config{DataDir: t.TempDir(), Self: selfPath(t), LookPath: fakeLookPath()})
	caps, err := r.Probe(context.Background(), agents.DemoID, "")
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if !caps.LoadSession {
		t.Errorf("got loadSession false, want true")
	}
	if p := mustGet(t, r, agents.DemoID); !p.NativeSessionResume {
		t.Errorf("got NativeSessionResume false, want true")
	}
}

// TestProbeSeesCredentials: an agent that announces auth methods is asked
// for a session (session/new) by its probe, which records whether it
// asked for credentials, with the hint; one that announces none is only
// initialized, and nothing is recorded of its credentials.
func TestProbeSeesCredentials(t *testing.T) {
	tests := []struct {
		name, mode, env string
		want            string // Credentials.Status; "" for none
		wantMessage     string
	}{
		{"no key: required", "auth", "", agents.CredentialsRequired, "FAKE_API_KEY is not set\"}. The agent needs credentials: set FAKE_API_KEY in the profile's env"},
		{"key set: ok", "auth", "FAKE_API_KEY: k", agents.CredentialsOK, ""},
		{"no methods announced: no session asked for", "load", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeConfig(t, "agents.yaml", fmt.Sprintf("agents:\n  - id: x\n    command: %q\n    env: {%s: \"1\", %s: %s, %s}\n",
				selfPath(t), fakeAgentEnv, fakeModeEnv, tc.mode, tc.env))
			r := mustLoad(t, agents.Config{DataDir: dir, LookPath: fakeLookPath(), Store: newMemStore()})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := r.Probe(ctx, "x", t.TempDir()); err != nil {
				t.Fatalf("Probe: %v", err)
			}
			got := mustGet(t, r, "x").Credentials
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("got credentials %+v, want none", got)
			case tc.want == "":
			case got == nil || got.Status != tc.want || got.Stage != agents.StageStart || got.SessionID != "":
				t.Errorf("got credentials %+v, want %s at start, no session", got, tc.want)
			case !strings.Contains(got.Message, tc.wantMessage):
				t.Errorf("got message %q, want it to hold %q", got.Message, tc.wantMessage)
			}
		})
	}
}

func TestProbeFailures(t *testing.T) {
	r := mustLoad(t, agents.Config{DataDir: fakeConfig(t, "crash"), LookPath: fakeLookPath()})
	ctx := context.Background()

	_, err := r.Probe(ctx, "fake-crash", "")
	if got := errcode.CodeOf(err); got != errcode.AgentStartFailed {
		t.Errorf("crash: got code %q (%v), want %q", got, err, errcode.AgentStartFailed)
	}
	if err != nil && !strings.Contains(err.Error(), "crashing on purpose") {
		t.Errorf("crash: got %v, want the agent's stderr in the error", err)
	}
	if p := mustGet(t, r, "fake-crash"); p.Capabilities != nil || p.NativeSessionResume {
		t.Errorf("crash: got %+v, want no capabilities recorded", p)
	}

	if _, err := r.Probe(ctx, "codex", ""); errcode.CodeOf(err) != errcode.AgentUnavailable {
		t.Errorf("unavailable: got %v, want code %q", err, errcode.AgentUnavailable)
	}
	if _, err := r.Probe(ctx, "nope", ""); errcode.CodeOf(err) != errcode.AgentProfileNotFound {
		t.Errorf("unknown: got %v, want code %q", err, errcode.AgentProfileNotFound)
	}
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	if _, err := r.Probe(expired, "fake-load", ""); err == nil {
		t.Errorf("expired context: got no error, want one")
	}
}

func TestProbeAll(t *testing.T) {
	st := newMemStore()
	r := mustLoad(t, agents.Config{
		DataDir:  fakeConfig(t, "load", "resume", "none", "crash"),
		Self:     selfPath(t),
		LookPath: fakeLookPath(), // every detected agent is unavailable
		Store:    st,
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r.ProbeAll(ctx, 2)

	for _, tc := range []struct {
		id         string
		wantProbed bool
		wantNative bool
	}{
		{agents.DemoID, true, true},
		{"fake-load", true, true},
		{"fake-resume", true, true},
		{"fake-none", true, false},
		{"fake-crash", false, false},
		{"codex", false, false},
	} {
		p := mustGet(t, r, tc.id)
		if got := p.Capabilities != nil; got != tc.wantProbed {
			t.Errorf("%s: got probed %v, want %v", tc.id, got, tc.wantProbed)
		}
		if p.NativeSessionResume != tc.wantNative {
			t.Errorf("%s: got NativeSessionResume %v, want %v", tc.id, p.NativeSessionResume, tc.wantNative)
		}
	}

	// Profiles already probed are skipped: a second run changes nothing.
	before := mustGet(t, r, "fake-load").ProbedAt
	r.ProbeAll(ctx, 0)
	if after := mustGet(t, r, "fake-load").ProbedAt; !after.Equal(*before) {
		t.Errorf("got ProbedAt %v after a second ProbeAll, want unchanged %v", after, before)
	}

	// A cancelled context stops promptly without probing.
	done, stop := context.WithCancel(context.Background())
	stop()
	r2 := mustLoad(t, agents.Config{DataDir: fakeConfig(t, "load"), LookPath: fakeLookPath()})
	r2.ProbeAll(done, 1)
	if p := mustGet(t, r2, "fake-load"); p.Capabilities != nil {
		t.Errorf("got %+v probed with a cancelled context, want unprobed", p.Capabilities)
	}
}
