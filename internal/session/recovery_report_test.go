package session_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tether/tether/internal/session"
)

// textBlocks is ACP tool call content of text blocks.
func textBlocks(texts ...string) json.RawMessage {
	var blocks []map[string]any
	for _, t := range texts {
		blocks = append(blocks, map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": t}})
	}
	b, _ := json.Marshal(blocks)
	return b
}

func TestReport(t *testing.T) {
	ls := call("tc-ls", "p2", "Run `ls`", "execute", session.ToolCompleted, false)
	ls.Content = textBlocks("a.txt\nb.txt")
	write := call("tc-w", "p2", "Write a.txt", "edit", session.ToolCompleted, false)
	sleep := call("tc-sleep", "p2", "Run `sleep 3600`", "execute", session.ToolFailed, true)
	sleep.Content = textBlocks("started", session.InterruptedToolResult+": interrupted by agent exited.")
	pending := call("tc-p", "p2", "Run `make`", "execute", session.ToolPending, false)
	failed := call("tc-f", "p2", "Read x", "read", session.ToolFailed, false)
	failed.RawOutput = json.RawMessage(`"no such file"`)
	earlier := call("tc-old", "p1", "Old", "execute", session.ToolInProgress, false)
	long := call("tc-long", "p2", "Cat", "read", session.ToolCompleted, false)
	long.Content = textBlocks(strings.Repeat("x", session.MaxReportOutputChars) + "END")

	withChanges := func(js string) session.PlanInput {
		tr := interrupted(2, "p2", "agent_exited")
		tr.WorkspaceChanges = json.RawMessage(js)
		return idle([]session.Turn{turn(1, "p1", session.TurnCompleted), tr}, []session.Message{msg("p2", session.RoleAgent, "working")},
			[]session.ToolCall{earlier, write, ls, sleep, pending, failed, long})
	}
	cases := []struct {
		name       string
		in         session.PlanInput
		wantFiles  []string
		wantPrompt []string
		noPrompt   []string
	}{
		{
			name:       "files changed, HEAD moved",
			in:         withChanges(`{"files":[{"path":"a.txt","status":"added"},{"path":"b.txt","status":"modified"}],"headMoved":true,"headBefore":"1111111111111111","headAfter":"2222222222222222"}`),
			wantFiles:  []string{"a.txt", "b.txt"},
			wantPrompt: []string{"a.txt (added), b.txt (modified)", "HEAD moved from 111111111111 to 222222222222", "Check how far you actually got"},
		},
		{
			name:       "nothing changed",
			in:         withChanges(`{"files":[],"headMoved":false}`),
			wantFiles:  []string{},
			wantPrompt: []string{"No file in the workspace changed"},
			noPrompt:   []string{"HEAD moved"},
		},
		{
			name:       "executor could not tell",
			in:         withChanges(`{"files":[],"errorCode":"executor_unavailable","error":"the host is unreachable"}`),
			wantFiles:  []string{},
			wantPrompt: []string{"is not known (the host is unreachable)"},
			noPrompt:   []string{"No file in the workspace changed"},
		},
		{
			name:     "not looked at yet",
			in:       withChanges(``),
			noPrompt: []string{"Files changed", "No file in the workspace changed"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := session.Plan(c.in)
			r := s.Report
			if r == nil {
				t.Fatalf("got no report in %+v", s)
			}
			var ids []string
			for _, tc := range r.ToolCalls {
				ids = append(ids, tc.ID)
			}
			if got, want := strings.Join(ids, ","), "tc-w,tc-ls,tc-sleep,tc-p,tc-f,tc-long"; got != want {
				t.Errorf("got tool calls %s, want %s (the turn's, in order)", got, want)
			}
			byID := map[string]session.ToolCallReport{}
			for _, tc := range r.ToolCalls {
				byID[tc.ID] = tc
			}
			checks := []struct {
				id, status, output string
				finished           bool
			}{
				{"tc-w", "completed", "", true},
				{"tc-ls", "completed", "a.txt\nb.txt", true},
				{"tc-sleep", "interrupted", "started", false},
				{"tc-p", "pending", "", false},
				{"tc-f", "failed", "no such file", true},
			}
			for _, w := range checks {
				if g := byID[w.id]; g.Status != w.status || g.Output != w.output || g.Finished != w.finished {
					t.Errorf("%s: got status %q output %q finished %v, want %q %q %v", w.id, g.Status, g.Output, g.Finished, w.status, w.output, w.finished)
				}
			}
			if o := byID["tc-long"].Output; len([]rune(o)) != session.MaxReportOutputChars+1 || !strings.HasSuffix(o, "END") {
				t.Errorf("long output: got %d runes ending %q, want its last %d", len([]rune(o)), o[max(0, len(o)-5):], session.MaxReportOutputChars)
			}
			if got := strings.Join(r.RunningCommands, ";"); got != "Run `sleep 3600`;Run `make`" {
				t.Errorf("got running commands %q, want the two cut-off execute calls", got)
			}
			if c.wantFiles == nil {
				if r.Workspace != nil {
					t.Errorf("got workspace %+v, want none before the executor was asked", r.Workspace)
				}
			} else {
				var files []string
				for _, f := range r.Workspace.Files {
					files = append(files, f.Path)
				}
				if strings.Join(files, ",") != strings.Join(c.wantFiles, ",") {
					t.Errorf("got files %v, want %v", files, c.wantFiles)
				}
			}
			p := session.ContinuationPrompt(s, session.PartialReply(c.in, "p2"))
			for _, w := range append(c.wantPrompt, "Run `sleep 3600`; Run `make`", "- Run `ls` (execute): completed") {
				if !strings.Contains(p, w) {
					t.Errorf("continuation prompt lacks %q:\n%s", w, p)
				}
			}
			for _, w := range c.noPrompt {
				if strings.Contains(p, w) {
					t.Errorf("continuation prompt has %q:\n%s", w, p)
				}
			}
		})
	}
	t.Run("clean session has no report", func(t *testing.T) {
		s := session.Plan(idle([]session.Turn{turn(1, "p1", session.TurnCompleted)}, nil, []session.ToolCall{earlier}))
		if s.Report != nil {
			t.Errorf("got report %+v, want none", s.Report)
		}
	})
}
