package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
)

func TestAgentProfiles(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)

	demo := store.AgentProfile{
		ID: "demo", DisplayName: "Demo agent", Command: "/usr/bin/tetherd", Args: []string{"demo-agent"},
		Env: map[string]string{"DEMO": "1"}, Source: "builtin", Available: true,
		HistoryContextInjection: true, ResumeArgs: []string{"--resume", "{{.SessionID}}"},
	}
	codex := store.AgentProfile{ID: "codex", Command: "codex-acp", Source: "detected",
		UnavailableReason: "not on PATH"}
	for _, p := range []store.AgentProfile{demo, codex} {
		if err := s.UpsertAgentProfile(ctx, p); err != nil {
			t.Fatalf("UpsertAgentProfile(%s): %v", p.ID, err)
		}
	}

	got, err := s.GetAgentProfile(ctx, "demo")
	if err != nil {
		t.Fatalf("GetAgentProfile: %v", err)
	}
	want := demo
	want.UpdatedAt = got.UpdatedAt
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}

	list, err := s.ListAgentProfiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "codex" || list[1].ID != "demo" {
		t.Fatalf("got %+v, want codex then demo", list)
	}
	// Nil lists and maps come back empty, never nil: they are "never absent".
	if list[0].Args == nil || list[0].Env == nil || list[0].ResumeArgs == nil || list[0].Capabilities != nil {
		t.Errorf("got args %v env %v resumeArgs %v caps %s, want empty non-nil and nil caps",
			list[0].Args, list[0].Env, list[0].ResumeArgs, list[0].Capabilities)
	}

	probed := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	caps := json.RawMessage(`{"loadSession":true}`)
	if err := s.SetAgentCapabilities(ctx, "demo", caps, probed); err != nil {
		t.Fatalf("SetAgentCapabilities: %v", err)
	}
	// Re-registering from config (no capabilities) must keep the probe.
	demo.DisplayName = "Demo"
	if err := s.UpsertAgentProfile(ctx, demo); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetAgentProfile(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if got.DisplayName != "Demo" || string(got.Capabilities) != string(caps) || got.ProbedAt == nil || !got.ProbedAt.Equal(probed) {
		t.Errorf("got name %q caps %s probedAt %v, want Demo %s %v", got.DisplayName, got.Capabilities, got.ProbedAt, caps, probed)
	}

	// Credentials are written when given and kept when not, like the
	// capabilities.
	for i, c := range []string{`{"status":"required","stage":"start"}`, "", `{"status":"ok","stage":"start"}`} {
		p := demo
		if c != "" {
			p.Credentials = json.RawMessage(c)
		}
		if err := s.UpsertAgentProfile(ctx, p); err != nil {
			t.Fatal(err)
		}
		want := c
		if c == "" {
			want = `{"status":"required","stage":"start"}`
		}
		if got, err := s.GetAgentProfile(ctx, "demo"); err != nil || string(got.Credentials) != want {
			t.Errorf("upsert %d: got credentials %s (%v), want %s", i, got.Credentials, err, want)
		}
	}

	_, err = s.GetAgentProfile(ctx, "missing")
	wantCode(t, err, errcode.AgentProfileNotFound)
	wantCode(t, s.SetAgentCapabilities(ctx, "missing", caps, probed), errcode.AgentProfileNotFound)
}
