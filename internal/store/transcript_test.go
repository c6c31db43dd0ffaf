package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

func TestAppendMessageChunkAggregates(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)

	type chunk struct {
		prompt string
		role   session.MessageRole
		text   string
	}
	steps := []struct {
		name     string
		in       chunk
		wantNew  bool   // a new message was started
		wantText string // text of the returned message: all of a new one, the chunk of a continued one
	}{
		{"first chunk starts a message", chunk{"p1", session.RoleAgent, "Hel"}, true, "Hel"},
		{"same role appends", chunk{"p1", session.RoleAgent, "lo"}, false, "lo"},
		{"role switch starts a message", chunk{"p1", session.RoleThought, "hmm"}, true, "hmm"},
		{"switching back starts another", chunk{"p1", session.RoleAgent, " again"}, true, " again"},
		{"new prompt starts a message", chunk{"p2", session.RoleAgent, "next"}, true, "next"},
		{"empty chunk appends nothing", chunk{"p2", session.RoleAgent, ""}, false, ""},
	}
	var lastID int64
	for _, st := range steps {
		got, started, err := s.AppendMessageChunk(ctx, sess.ID, st.in.prompt, st.in.role, st.in.text)
		if err != nil {
			t.Fatalf("%s: AppendMessageChunk: %v", st.name, err)
		}
		if isNew := got.ID != lastID; isNew != st.wantNew || started != st.wantNew {
			t.Errorf("%s: got new message %v/started %v (id %d), want %v", st.name, isNew, started, got.ID, st.wantNew)
		}
		if got.Text != st.wantText || got.Role != st.in.role || got.PromptID != st.in.prompt {
			t.Errorf("%s: got %q/%s/%s, want %q/%s/%s", st.name, got.Text, got.Role, got.PromptID,
				st.wantText, st.in.role, st.in.prompt)
		}
		lastID = got.ID
	}

	// A whole message added in between breaks the run, too.
	if _, err := s.AddMessage(ctx, session.Message{SessionID: sess.ID, PromptID: "p2", Role: session.RoleSystem,
		Text: "notice", Content: json.RawMessage(`[{"type":"image"}]`)}); err != nil {
		t.Fatalf("AddMessage: %v", err)
	}
	if got, _, err := s.AppendMessageChunk(ctx, sess.ID, "p2", session.RoleAgent, "more"); err != nil || got.Text != "more" {
		t.Errorf("after AddMessage: got %q, %v; want a new message \"more\"", got.Text, err)
	}

	msgs, err := s.ListMessages(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantTexts := []string{"Hello", "hmm", " again", "next", "notice", "more"}
	if len(msgs) != len(wantTexts) {
		t.Fatalf("got %d messages, want %d", len(msgs), len(wantTexts))
	}
	for i, m := range msgs {
		if m.Text != wantTexts[i] {
			t.Errorf("message %d: got %q, want %q", i, m.Text, wantTexts[i])
		}
		if i > 0 && m.ID <= msgs[i-1].ID {
			t.Errorf("message %d: got id %d after %d, want increasing", i, m.ID, msgs[i-1].ID)
		}
	}
	if string(msgs[4].Content) != `[{"type":"image"}]` || msgs[0].Content != nil {
		t.Errorf("got contents %s and %s, want the image block and nil", msgs[4].Content, msgs[0].Content)
	}
	if msgs[0].UpdatedAt.Before(msgs[0].CreatedAt) || msgs[0].UpdatedAt.Equal(msgs[0].CreatedAt) {
		t.Errorf("aggregated message: got UpdatedAt %v, want after CreatedAt %v", msgs[0].UpdatedAt, msgs[0].CreatedAt)
	}

	_, _, err = s.AppendMessageChunk(ctx, "missing", "p1", session.RoleAgent, "x")
	wantCode(t, err, errcode.SessionNotFound)
}

func TestUpsertToolCallMerges(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	key := session.ToolCall{SessionID: sess.ID, PromptID: "p1", ToolCallID: "call-1"}

	start := key
	start.Title, start.Kind = "Read file", "read"
	start.RawInput = json.RawMessage(`{"path":"a.go"}`)
	created, err := s.UpsertToolCall(ctx, start)
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	if created.Status != session.ToolPending || created.CreatedAt.IsZero() {
		t.Errorf("insert: got status %q createdAt %v, want pending and set", created.Status, created.CreatedAt)
	}

	steps := []struct {
		name   string
		update func(*session.ToolCall)
		check  func(t *testing.T, got session.ToolCall)
	}{
		{"status only keeps the rest", func(c *session.ToolCall) { c.Status = session.ToolInProgress },
			func(t *testing.T, got session.ToolCall) {
				if got.Status != session.ToolInProgress || got.Title != "Read file" || got.Kind != "read" ||
					string(got.RawInput) != `{"path":"a.go"}` || got.PromptID != "p1" {
					t.Errorf("got %+v, want in_progress with original fields", got)
				}
			}},
		{"content and output", func(c *session.ToolCall) {
			c.Status, c.Content = session.ToolCompleted, json.RawMessage(`[{"type":"content"}]`)
			c.RawOutput, c.Locations = json.RawMessage(`"ok"`), json.RawMessage(`[{"path":"a.go"}]`)
		}, func(t *testing.T, got session.ToolCall) {
			if got.Status != session.ToolCompleted || string(got.Content) != `[{"type":"content"}]` ||
				string(got.RawOutput) != `"ok"` || string(got.Locations) != `[{"path":"a.go"}]` || got.PromptID != "p1" {
				t.Errorf("got %+v, want completed with content, output, locations and prompt p1", got)
			}
		}},
		{"interrupted false does not clear", func(c *session.ToolCall) { c.Title = "Read a.go" },
			func(t *testing.T, got session.ToolCall) {
				if got.Title != "Read a.go" || got.Interrupted {
					t.Errorf("got title %q interrupted %v, want \"Read a.go\" false", got.Title, got.Interrupted)
				}
			}},
		{"interrupted true sets", func(c *session.ToolCall) { c.Interrupted = true },
			func(t *testing.T, got session.ToolCall) {
				if !got.Interrupted || got.Status != session.ToolCompleted {
					t.Errorf("got interrupted %v status %q, want true completed", got.Interrupted, got.Status)
				}
			}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			u := key
			st.update(&u)
			got, err := s.UpsertToolCall(ctx, u)
			if err != nil {
				t.Fatalf("UpsertToolCall: %v", err)
			}
			st.check(t, got)
			if !got.CreatedAt.Equal(created.CreatedAt) {
				t.Errorf("got CreatedAt %v, want %v (unchanged)", got.CreatedAt, created.CreatedAt)
			}
			stored, err := s.GetToolCall(ctx, sess.ID, key.Key())
			if err != nil {
				t.Fatal(err)
			}
			st.check(t, stored)
		})
	}

	second := key
	second.ToolCallID = "call-2"
	if _, err := s.UpsertToolCall(ctx, second); err != nil {
		t.Fatal(err)
	}
	calls, err := s.ListToolCalls(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].ToolCallID != "call-1" || calls[1].ToolCallID != "call-2" {
		t.Errorf("got %+v, want call-1 then call-2", calls)
	}
	_, err = s.GetToolCall(ctx, sess.ID, session.ToolCallKey{PromptID: "p1", ToolCallID: "nope"})
	wantCode(t, err, errcode.NotFound)
	_, err = s.GetToolCall(ctx, sess.ID, session.ToolCallKey{PromptID: "p2", ToolCallID: "call-1"})
	wantCode(t, err, errcode.NotFound)
	_, err = s.UpsertToolCall(ctx, session.ToolCall{SessionID: "missing", ToolCallID: "x"})
	wantCode(t, err, errcode.SessionNotFound)
}

func TestPermissions(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	opts := json.RawMessage(`[{"optionId":"allow","name":"Allow","kind":"allow_once"}]`)

	p, err := s.CreatePermission(ctx, session.Permission{SessionID: sess.ID, PromptID: "p1",
		ToolCallID: "call-1", Title: "Run rm?", Options: opts})
	if err != nil {
		t.Fatalf("CreatePermission: %v", err)
	}
	if p.ID == "" || p.State != session.PermissionPending || p.ResolvedAt != nil {
		t.Errorf("got %+v, want generated id, pending, unresolved", p)
	}
	other, err := s.CreatePermission(ctx, session.Permission{ID: "req-2", SessionID: sess.ID, Options: opts})
	if err != nil {
		t.Fatal(err)
	}

	resolved, err := s.ResolvePermission(ctx, sess.ID, p.ID, session.PermissionSelected, "allow")
	if err != nil {
		t.Fatalf("ResolvePermission: %v", err)
	}
	if resolved.State != session.PermissionSelected || resolved.SelectedOptionID != "allow" || resolved.ResolvedAt == nil {
		t.Errorf("got %+v, want selected/allow/resolvedAt", resolved)
	}
	if stored, err := s.GetPermission(ctx, sess.ID, p.ID); err != nil || stored.State != session.PermissionSelected ||
		string(stored.Options) != string(opts) || !stored.ResolvedAt.Equal(*resolved.ResolvedAt) {
		t.Errorf("GetPermission: got %+v, %v; want the resolved request", stored, err)
	}

	_, err = s.ResolvePermission(ctx, sess.ID, p.ID, session.PermissionCancelled, "")
	wantCode(t, err, errcode.PermissionResolved)
	var e *errcode.Error
	if errors.As(err, &e) && e.Details["state"] != string(session.PermissionSelected) {
		t.Errorf("got Details[state] %v, want %q", e.Details["state"], session.PermissionSelected)
	}

	tests := []struct {
		name   string
		states []session.PermissionState
		want   []string
	}{
		{"all", nil, []string{p.ID, other.ID}},
		{"pending", []session.PermissionState{session.PermissionPending}, []string{other.ID}},
		{"resolved", []session.PermissionState{session.PermissionSelected, session.PermissionExpired}, []string{p.ID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list, err := s.ListPermissions(ctx, sess.ID, tc.states...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range list {
				got = append(got, x.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	_, err = s.ResolvePermission(ctx, sess.ID, "nope", session.PermissionCancelled, "")
	wantCode(t, err, errcode.PermissionNotFound)
	_, err = s.ResolvePermission(ctx, sess.ID, other.ID, session.PermissionPending, "")
	wantCode(t, err, errcode.InvalidRequest)
	_, err = s.GetPermission(ctx, "missing", p.ID)
	wantCode(t, err, errcode.PermissionNotFound)
	_, err = s.CreatePermission(ctx, session.Permission{SessionID: "missing"})
	wantCode(t, err, errcode.SessionNotFound)
}

// TestResolvePermissionRace: two answers racing (two tabs, or a user and a
// cancel) resolve a request exactly once.
func TestResolvePermissionRace(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := mustSession(t, s, mustTask(t, s).ID)
	p, err := s.CreatePermission(ctx, session.Permission{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := s.ResolvePermission(ctx, sess.ID, p.ID, session.PermissionCancelled, "")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		if err == nil {
			won++
			continue
		}
		wantCode(t, err, errcode.PermissionResolved)
	}
	if won != 1 {
		t.Errorf("got %d successful resolutions, want 1", won)
	}
}
