package demoagent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// work is /work FILE...: a turn that changes the workspace and is then cut
// off in a tool, deterministically, for the recovery report (what changed
// since the turn began). Each FILE (relative to the session's directory)
// is written by an edit tool call that completes, a command (`ls`) runs in
// an execute tool call that completes with its output, and a last command
// starts and runs until the turn is cancelled or the agent is killed.
func (t *turn) work(arg string) error {
	files := strings.Fields(arg)
	if len(files) == 0 {
		return t.say("usage: /work FILE...")
	}
	cwd := t.cwd()
	for _, f := range files {
		p := filepath.Join(cwd, filepath.FromSlash(f))
		if !filepath.IsLocal(f) {
			return t.say(fmt.Sprintf("%s is not inside the session's directory", f))
		}
		id := t.nextToolCallID()
		if err := t.emit(acp.StartToolCall(id, "Write "+f, acp.WithStartKind(acp.ToolKindEdit),
			acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
			return err
		}
		status, out := acp.ToolCallStatusCompleted, "wrote "+f
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, []byte("written by the demo agent\n"), 0o644)
			if err != nil {
				status, out = acp.ToolCallStatusFailed, err.Error()
			}
		} else {
			status, out = acp.ToolCallStatusFailed, err.Error()
		}
		if err := t.emit(toolDone(id, status, out)); err != nil {
			return err
		}
	}
	if err := t.command(context.Background(), "ls", true); err != nil {
		return err
	}
	return t.command(t.ctx, "sleep 3600", false)
}

// command runs one shell command in the session's directory as an
// execute tool call; wait false leaves the call in progress until the
// turn's context ends (the agent is then usually killed first).
func (t *turn) command(ctx context.Context, line string, wait bool) error {
	id := t.nextToolCallID()
	if err := t.emit(acp.StartToolCall(id, "Run `"+line+"`", acp.WithStartKind(acp.ToolKindExecute),
		acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = t.cwd()
	out, err := cmd.CombinedOutput()
	if !wait && t.ctx.Err() != nil {
		return t.interrupted()
	}
	status := acp.ToolCallStatusCompleted
	if err != nil {
		status, out = acp.ToolCallStatusFailed, append(out, []byte(err.Error())...)
	}
	return t.emit(toolDone(id, status, string(out)))
}

// steps is /steps N MS [hang]: N steps, each an execute tool call that
// completes after MS milliseconds, then a chunk "step i"; with hang, a
// last tool call is left in progress until the turn is cancelled or the
// agent is stopped. A turn that goes on doing tools, for the tests that
// cut an executor host off mid-turn (its late output holds tool calls).
func (t *turn) steps(arg string) error {
	f := strings.Fields(arg)
	var n, ms int
	if len(f) < 2 || len(f) > 3 || (len(f) == 3 && f[2] != "hang") {
		return t.say("usage: /steps N MS [hang]")
	}
	if _, err := fmt.Sscan(f[0], &n); err != nil || n < 0 {
		return t.say("usage: /steps N MS [hang]")
	}
	if _, err := fmt.Sscan(f[1], &ms); err != nil || ms < 0 {
		return t.say("usage: /steps N MS [hang]")
	}
	for i := 1; i <= n; i++ {
		id := t.nextToolCallID()
		if err := t.emit(acp.StartToolCall(id, fmt.Sprintf("Step %d", i), acp.WithStartKind(acp.ToolKindExecute),
			acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
			return err
		}
		if err := t.pause(time.Duration(ms) * time.Millisecond); err != nil {
			return err
		}
		if err := t.emit(toolDone(id, acp.ToolCallStatusCompleted, fmt.Sprintf("step %d done", i))); err != nil {
			return err
		}
		if err := t.say(fmt.Sprintf("step %d\n", i)); err != nil {
			return err
		}
	}
	if len(f) < 3 {
		return nil
	}
	if err := t.emit(acp.StartToolCall(t.nextToolCallID(), "Last step", acp.WithStartKind(acp.ToolKindExecute),
		acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
		return err
	}
	<-t.ctx.Done()
	return t.interrupted()
}
