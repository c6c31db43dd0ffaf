package session

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The recovery report: what an interrupted turn got done, so that neither
// the user nor the agent has to guess (commands re-run on resume because
// nobody knew they had finished are the failure it prevents). The tool
// calls come from the transcript; the workspace part from the turn's
// executor, which compares the session's directory with the checkpoint it
// recorded when the turn began (store.Turn.WorkspaceChanges).

// TurnReport is the recovery report of an interrupted turn.
type TurnReport struct {
	// ToolCalls are the turn's tool calls in the order they started.
	ToolCalls []ToolCallReport `json:"toolCalls"`
	// RunningCommands are the titles of the command (execute) tool calls
	// that were still running when the turn was cut off: they may have had
	// effects nobody saw.
	RunningCommands []string `json:"runningCommands"`
	// Workspace is what changed in the session's directory since the turn
	// began; nil until its executor was asked.
	Workspace *WorkspaceChanges `json:"workspace,omitempty"`
}

// ToolCallReport is one tool call of an interrupted turn. Status is its
// last reported ACP status (pending, in_progress, completed, failed), or
// "interrupted" for one the interruption cut off.
type ToolCallReport struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Kind     string `json:"kind"`
	Status   string `json:"status"`
	Finished bool   `json:"finished"`
	// Output is the end of its last known output (text and diffs), at most
	// MaxReportOutputChars.
	Output string `json:"output,omitempty"`
}

// WorkspaceChanges is what the executor found changed since the turn's
// checkpoint when the turn was interrupted. Error says why it could not
// tell (the turn has no checkpoint, the executor was unreachable); then
// Files is empty and means nothing.
type WorkspaceChanges struct {
	Files []ChangedFile `json:"files"`
	// HeadMoved: the repository's HEAD is not the commit it was at when
	// the turn began (the agent committed, checked out or reset).
	HeadMoved  bool   `json:"headMoved"`
	HeadBefore string `json:"headBefore,omitempty"`
	HeadAfter  string `json:"headAfter,omitempty"`
	ErrorCode  string `json:"errorCode,omitempty"`
	Error      string `json:"error,omitempty"`
}

// ChangedFile is one file of WorkspaceChanges; Status is added, modified,
// deleted, renamed, copied or typechange.
type ChangedFile struct {
	Path    string `json:"path"`
	OldPath string `json:"oldPath,omitempty"`
	Status  string `json:"status"`
}

// MaxReportOutputChars bounds each tool call's output in a report.
const MaxReportOutputChars = 500

// maxPromptFiles bounds the changed files a continuation prompt names.
const maxPromptFiles = 50

// InterruptedToolResult begins the synthetic result recorded for a tool
// call whose outcome was never reported; it is appended to what the tool
// had reported, and left out of its output in a report.
const InterruptedToolResult = "Tool execution result was not recorded"

// dangling reports whether tool call c never finished: still pending or in
// progress, or given the synthetic failed result by an interruption. One
// whose late output (a lost executor host's agent went on) completed it
// afterwards did finish, and is not named to the agent as failed.
func dangling(c ToolCall) bool {
	if c.Interrupted {
		return c.Status != ToolCompleted
	}
	return c.Status == ToolPending || c.Status == ToolInProgress
}

// report is the recovery report of the interrupted turn t.
func report(in PlanInput, t *Turn) *TurnReport {
	r := &TurnReport{ToolCalls: []ToolCallReport{}, RunningCommands: []string{}}
	for _, c := range in.ToolCalls {
		if c.PromptID != t.PromptID {
			continue
		}
		tc := ToolCallReport{ID: c.ToolCallID, Title: toolName(c), Kind: c.Kind, Status: string(c.Status), Output: toolOutput(c)}
		switch {
		case dangling(c):
			if c.Interrupted {
				tc.Status = "interrupted"
			}
			if c.Kind == "execute" {
				r.RunningCommands = append(r.RunningCommands, tc.Title)
			}
		default:
			tc.Finished = true
		}
		r.ToolCalls = append(r.ToolCalls, tc)
	}
	if len(t.WorkspaceChanges) > 0 {
		var w WorkspaceChanges
		if json.Unmarshal(t.WorkspaceChanges, &w) == nil {
			if w.Files == nil {
				w.Files = []ChangedFile{}
			}
			r.Workspace = &w
		}
	}
	return r
}

// toolOutput is the end of a tool call's last known output: its content's
// text without the synthetic interruption result, else its raw output.
func toolOutput(c ToolCall) string {
	text := toolText(c.Content)
	if i := strings.Index(text, InterruptedToolResult); i >= 0 {
		text = text[:i]
	}
	text = strings.TrimSpace(text)
	if text == "" && len(c.RawOutput) > 0 && string(c.RawOutput) != "null" {
		var s string
		if json.Unmarshal(c.RawOutput, &s) == nil {
			text = s
		} else {
			text = string(c.RawOutput)
		}
	}
	r := []rune(text)
	if len(r) > MaxReportOutputChars {
		return "…" + string(r[len(r)-MaxReportOutputChars:])
	}
	return text
}

// writeReport adds the short form of r to a continuation prompt: what
// finished, what was still running, what changed in the workspace.
func writeReport(b *strings.Builder, r *TurnReport) {
	if r == nil {
		return
	}
	var done []string
	for _, c := range r.ToolCalls {
		if c.Finished {
			done = append(done, fmt.Sprintf("- %s (%s): %s", c.Title, c.Kind, c.Status))
		}
	}
	if len(done) > 0 {
		b.WriteString("These tool calls finished before the interruption; their results are in this conversation:\n")
		b.WriteString(strings.Join(done, "\n"))
		b.WriteString("\n")
	}
	if len(r.RunningCommands) > 0 {
		fmt.Fprintf(b, "These commands were still running when it was cut off and may have had effects: %s.\n", strings.Join(r.RunningCommands, "; "))
	}
	w := r.Workspace
	switch {
	case w == nil:
	case w.Error != "":
		fmt.Fprintf(b, "What changed in the workspace is not known (%s).\n", w.Error)
	case len(w.Files) == 0:
		b.WriteString("No file in the workspace changed since this turn began.\n")
	default:
		var files []string
		for i, f := range w.Files {
			if i == maxPromptFiles {
				files = append(files, fmt.Sprintf("and %d more", len(w.Files)-maxPromptFiles))
				break
			}
			files = append(files, f.Path+" ("+f.Status+")")
		}
		fmt.Fprintf(b, "Files changed in the workspace since this turn began: %s.\n", strings.Join(files, ", "))
	}
	if w != nil && w.HeadMoved {
		fmt.Fprintf(b, "The repository's HEAD moved from %s to %s.\n", short(w.HeadBefore), short(w.HeadAfter))
	}
	if w != nil || len(done) > 0 || len(r.RunningCommands) > 0 {
		b.WriteString("Check how far you actually got before redoing anything.\n")
	}
}

func short(commit string) string {
	if commit == "" {
		return "no commit"
	}
	return commit[:min(len(commit), 12)]
}
