package demoagent_test

import (
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/session"
)

// The prompt tetherd sends to continue an interrupted turn is tetherd's,
// not the user's: the demo agent answers it as a continuation (why it
// stopped, what it does not count on) and never echoes it.
func TestContinuationIsAnsweredNotEchoed(t *testing.T) {
	tests := []struct {
		name string
		rec  session.Recovery
		want []string
	}{
		{
			name: "a turn cut off in a tool call",
			rec: session.Recovery{Kind: session.RecoveryInterruptedTurn, InterruptReason: "daemon_restart",
				DanglingToolCalls: []session.DanglingToolCall{{ID: "tool-1", Title: "Edit demo.txt", Kind: "edit"}},
				Report:            &session.TurnReport{Workspace: &session.WorkspaceChanges{Files: []session.ChangedFile{{Path: "demo.txt", Status: "added"}}}}},
			want: []string{"Continuing where I left off (interrupted by daemon restart). ", "Edit demo.txt (edit, id tool-1)", "I see these files changed: demo.txt (added). ", "That is all a demo agent can do."},
		},
		{
			name: "a prompt never answered",
			rec:  session.Recovery{Kind: session.RecoveryInterruptedPrompt, InterruptReason: "agent_exited", PromptDelivered: true},
			want: []string{"Continuing where I left off (interrupted by agent exited). "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startAgent(t, t.TempDir())
			h.initialize(acp.ClientCapabilities{})
			sid := h.newSession(t.TempDir())
			prompt := session.ContinuationPrompt(tt.rec, "half of my answer\n- a list item")
			h.mustPrompt(sid, prompt, acp.StopReasonEndTurn)
			got := reply(conversation(h.client.updatesFor(sid)))
			if !strings.HasPrefix(got, tt.want[0]) {
				t.Errorf("reply: got %q, want it to start with %q", got, tt.want[0])
			}
			for _, w := range tt.want[1:] {
				if !strings.Contains(got, w) {
					t.Errorf("reply: got %q, want it to contain %q", got, w)
				}
			}
			for _, hidden := range []string{"You said", "Your previous turn", "partial-reply", "a list item"} {
				if strings.Contains(got, hidden) {
					t.Errorf("reply: got %q, which echoes the hidden prompt (%q)", got, hidden)
				}
			}
		})
	}
}
