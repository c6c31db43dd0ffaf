package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// TestTranscriptPage pages back through a session of seven turns (their
// user messages, agent messages streamed in chunks, tool calls, and system
// notices and a tool call outside any turn between them) at several page
// sizes: each page holds at most limit turns, the latest first, and the
// pages together hold every turn, message and tool call of the whole
// transcript exactly once, in order.
func TestTranscriptPage(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sid := mustSession(t, s, mustTask(t, s).ID).ID
	notice := func(text string) {
		t.Helper()
		if _, err := s.AddMessage(ctx, session.Message{SessionID: sid, Role: session.RoleSystem, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	notice("before any turn")
	for i := 1; i <= 7; i++ {
		turn, err := s.CreateTurn(ctx, session.Turn{SessionID: sid, Kind: session.TurnPrompt})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddMessage(ctx, session.Message{SessionID: sid, PromptID: turn.PromptID, Role: session.RoleUser, Text: fmt.Sprint("prompt ", i)}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"ans", "wer ", fmt.Sprint(i)} {
			if _, _, err := s.AppendMessageChunk(ctx, sid, turn.PromptID, session.RoleAgent, c); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 1 {
			if _, err := s.UpsertToolCall(ctx, session.ToolCall{SessionID: sid, PromptID: turn.PromptID, ToolCallID: "tool-1", Title: fmt.Sprint("call ", i)}); err != nil {
				t.Fatal(err)
			}
		}
		switch i {
		case 2:
			notice("after turn 2")
		case 5:
			notice("after turn 5")
			if _, err := s.UpsertToolCall(ctx, session.ToolCall{SessionID: sid, ToolCallID: "outside", Title: "outside any turn"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A chunk left unfolded on the latest message is read too.
	wantTurns, _ := s.ListTurns(ctx, sid)
	wantMsgs, _ := s.ListMessages(ctx, sid)
	wantCalls, _ := s.ListToolCalls(ctx, sid)
	if len(wantTurns) != 7 || len(wantMsgs) != 17 || len(wantCalls) != 5 {
		t.Fatalf("fixture: got %d turns, %d messages, %d tool calls, want 7, 17, 5", len(wantTurns), len(wantMsgs), len(wantCalls))
	}

	for _, limit := range []int{1, 2, 3, 6, 7, 8, store.MaxTranscriptPageSize} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			var pages []store.TranscriptPage
			token := ""
			for {
				p, err := s.TranscriptPage(ctx, sid, limit, token)
				if err != nil {
					t.Fatalf("page %d: %v", len(pages)+1, err)
				}
				if len(p.Turns) > limit || (p.Next != "" && len(p.Turns) != limit) {
					t.Fatalf("page %d: got %d turns (next %q), want %d", len(pages)+1, len(p.Turns), p.Next, limit)
				}
				pages = append(pages, p)
				if token = p.Next; token == "" {
					break
				}
				if len(pages) > 8 {
					t.Fatal("more pages than turns")
				}
			}
			if want := (7 + limit - 1) / limit; len(pages) != want {
				t.Errorf("got %d pages, want %d", len(pages), want)
			}
			var turns []string
			var msgs []string
			var calls []string
			slices.Reverse(pages) // oldest first
			for _, p := range pages {
				for _, x := range p.Turns {
					turns = append(turns, x.PromptID)
				}
				for _, m := range p.Messages {
					msgs = append(msgs, fmt.Sprintf("%d %s %q", m.ID, m.PromptID, m.Text))
				}
				for _, c := range p.ToolCalls {
					calls = append(calls, c.PromptID+"/"+c.ToolCallID+" "+c.Title)
				}
			}
			var want []string
			for _, x := range wantTurns {
				want = append(want, x.PromptID)
			}
			check(t, "turns", turns, want)
			want = nil
			for _, m := range wantMsgs {
				want = append(want, fmt.Sprintf("%d %s %q", m.ID, m.PromptID, m.Text))
			}
			check(t, "messages", msgs, want)
			want = nil
			for _, c := range wantCalls {
				want = append(want, c.PromptID+"/"+c.ToolCallID+" "+c.Title)
			}
			check(t, "tool calls", calls, want)
		})
	}

	t.Run("bad tokens", func(t *testing.T) {
		p, err := s.TranscriptPage(ctx, sid, 2, "")
		if err != nil {
			t.Fatal(err)
		}
		other := mustSession(t, s, mustTask(t, s).ID).ID
		for name, call := range map[string]func() error{
			"not base64":          func() error { _, err := s.TranscriptPage(ctx, sid, 2, "%%%"); return err },
			"no seq":              func() error { _, err := s.TranscriptPage(ctx, sid, 2, "e30"); return err },
			"another session's":   func() error { _, err := s.TranscriptPage(ctx, other, 2, p.Next); return err },
			"a turn that is none": func() error { _, err := s.TranscriptPage(ctx, sid, 2, "eyJzIjo5OX0"); return err },
		} {
			if err := call(); !errcode.Is(err, errcode.InvalidRequest) {
				t.Errorf("%s: got %v, want %s", name, err, errcode.InvalidRequest)
			}
		}
	})
}

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: got\n%q\nwant\n%q", what, got, want)
	}
}
