package demoagent_test

import (
	"slices"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// usageSeen lists the context sizes of the usage_update notifications
// received for sid, in order.
func usageSeen(h *harness, sid acp.SessionId) []int {
	var out []int
	for _, u := range h.client.updatesFor(sid) {
		if u.UsageUpdate != nil {
			out = append(out, u.UsageUpdate.Used)
		}
	}
	return out
}

// TestUsageUpdates: /usage N sends N usage_update notifications as the
// turn's last updates, before its answer; with late, after it. Usage is
// not history: a load after a restart replays the reply, not the usage.
func TestUsageUpdates(t *testing.T) {
	tests := []struct {
		name, prompt string
		want         []int
		reply        string
	}{
		{"in the turn", "/usage 3", []int{1000, 2000, 3000}, "sending 3 usage updates\n"},
		{"after the turn", "/usage 2 late", []int{1000, 2000}, "sending 2 usage updates\n"},
		{"none", "/usage 0", nil, "sending 0 usage updates\n"},
		{"bad argument", "/usage 2 soon", nil, "usage: /usage N [late]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, cwd := t.TempDir(), t.TempDir()
			h := startAgent(t, state)
			h.initialize(acp.ClientCapabilities{})
			sid := h.newSession(cwd)
			h.mustPrompt(sid, tt.prompt, acp.StopReasonEndTurn)
			if strings.HasSuffix(tt.prompt, " late") {
				waitFor(t, "the late usage updates", func() bool { return len(usageSeen(h, sid)) == len(tt.want) })
				// Sent after the answer: the wire says so.
				lines := h.wire.lines()
				answered := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"stopReason"`) })
				first := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"usage_update"`) })
				if answered < 0 || first < answered {
					t.Errorf("wire order: got the answer at line %d and the first usage_update at %d, want the usage after the answer", answered, first)
				}
			}
			if got := usageSeen(h, sid); !slices.Equal(got, tt.want) {
				t.Errorf("usage updates: got used %v, want %v", got, tt.want)
			}
			if got := reply(h.client.updatesFor(sid)); got != tt.reply {
				t.Errorf("reply: got %q, want %q", got, tt.reply)
			}
			h.stop()

			again := startAgent(t, state)
			again.initialize(acp.ClientCapabilities{})
			if _, err := again.conn.LoadSession(again.ctx(), acp.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
				t.Fatalf("session/load: %v", err)
			}
			if got := usageSeen(again, sid); len(got) != 0 {
				t.Errorf("load replayed usage updates %v, want none", got)
			}
			if got := reply(again.client.updatesFor(sid)); got != tt.reply {
				t.Errorf("load replayed reply %q, want %q", got, tt.reply)
			}
		})
	}
}
