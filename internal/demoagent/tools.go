package demoagent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"
)

// previewBytes bounds the file content shown in a tool call result.
const previewBytes = 200

// pickFile chooses README.md, else the first regular file by name.
func pickFile(cwd string) (string, error) {
	if fi, err := os.Stat(filepath.Join(cwd, "README.md")); err == nil && fi.Mode().IsRegular() {
		return "README.md", nil
	}
	entries, err := os.ReadDir(cwd) // sorted by name
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			return e.Name(), nil
		}
	}
	return "", nil
}

// readTool reports a read tool call for rel (relative to cwd) and returns
// the file's size and whether the read succeeded.
func (t *turn) readTool(id acp.ToolCallId, cwd, rel string) (int64, bool, error) {
	abs := filepath.Join(cwd, rel)
	if err := t.emit(acp.StartToolCall(id, "Read "+rel, acp.WithStartKind(acp.ToolKindRead),
		acp.WithStartStatus(acp.ToolCallStatusInProgress),
		acp.WithStartLocations([]acp.ToolCallLocation{{Path: abs}}),
		acp.WithStartRawInput(map[string]any{"path": rel}))); err != nil {
		return 0, false, err
	}
	preview, size, err := t.readFile(cwd, rel)
	if err != nil {
		if ierr := t.interrupted(); ierr != nil {
			return 0, false, ierr
		}
		return 0, false, t.emit(toolDone(id, acp.ToolCallStatusFailed, err.Error()))
	}
	return size, true, t.emit(toolDone(id, acp.ToolCallStatusCompleted, preview))
}

// readFile reads through the client when it offers fs/read_text_file (so
// the client sees unsaved editor buffers and applies its own policy), else
// directly through an os.Root, which also refuses symlink escapes.
func (t *turn) readFile(cwd, rel string) (string, int64, error) {
	t.a.mu.Lock()
	viaClient := t.a.clientReadFS
	t.a.mu.Unlock()
	if viaClient {
		resp, err := t.a.conn.ReadTextFile(t.ctx, acp.ReadTextFileRequest{SessionId: t.sid, Path: filepath.Join(cwd, rel)})
		if err != nil {
			return "", 0, fmt.Errorf("fs/read_text_file %s: %w", rel, err)
		}
		return truncate(resp.Content), int64(len(resp.Content)), nil
	}
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return "", 0, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file", rel)
	}
	buf := make([]byte, previewBytes+utf8.UTFMax)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", 0, err
	}
	return truncate(string(buf[:n])), fi.Size(), nil
}

// truncate cuts s to previewBytes without splitting a UTF-8 sequence.
func truncate(s string) string {
	if len(s) <= previewBytes {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	cut := previewBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "\uFFFD") + "…"
}

// tool implements /tool read PATH, /tool fail and the client fs probes
// of fstools.go.
func (t *turn) tool(arg string) error {
	sub, path, _ := strings.Cut(arg, " ")
	path = strings.TrimSpace(path)
	if probe, ok := fsProbes[sub]; ok {
		return t.runProbe(sub, probe, path)
	}
	switch {
	case sub == "read" && path != "":
		cwd := t.cwd()
		rel := filepath.Clean(path)
		if filepath.IsAbs(path) {
			if r, err := filepath.Rel(cwd, path); err == nil {
				rel = r
			}
		}
		if !filepath.IsLocal(rel) {
			id := t.nextToolCallID()
			if err := t.emit(acp.StartToolCall(id, "Read "+path, acp.WithStartKind(acp.ToolKindRead),
				acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
				return err
			}
			return t.emit(toolDone(id, acp.ToolCallStatusFailed, "path escapes the working directory: "+path))
		}
		_, _, err := t.readTool(t.nextToolCallID(), cwd, rel)
		return err
	case sub == "hang":
		// A tool call that stays in progress until session/cancel: the
		// crash tests kill the daemon while it runs.
		id := t.nextToolCallID()
		if err := t.emit(acp.StartToolCall(id, "Run hanging tool", acp.WithStartKind(acp.ToolKindExecute),
			acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
			return err
		}
		<-t.ctx.Done()
		if err := t.interrupted(); errors.Is(err, errConnClosed) {
			return err
		}
		if err := t.emit(toolDone(id, acp.ToolCallStatusFailed, "cancelled")); err != nil {
			return err
		}
		return t.interrupted()
	case sub == "sleep":
		// A tool that runs for MS milliseconds and succeeds: the restart
		// tests kill the daemon while it runs.
		ms, err := strconv.Atoi(path)
		if err != nil || ms < 0 {
			return t.say("usage: /tool sleep MS")
		}
		id := t.nextToolCallID()
		if err := t.emit(acp.StartToolCall(id, "Run sleeping tool", acp.WithStartKind(acp.ToolKindExecute),
			acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
			return err
		}
		if err := t.pause(time.Duration(ms) * time.Millisecond); err != nil {
			return err
		}
		return t.emit(toolDone(id, acp.ToolCallStatusCompleted, fmt.Sprintf("slept %d ms", ms)))
	case sub == "fail":
		id := t.nextToolCallID()
		if err := t.emit(acp.StartToolCall(id, "Run failing tool", acp.WithStartKind(acp.ToolKindExecute),
			acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
			return err
		}
		return t.emit(toolDone(id, acp.ToolCallStatusFailed, "demo tool failed: simulated error"))
	default:
		return t.say("usage: /tool read PATH | /tool sleep MS | /tool fail | /tool hang | " + fsProbeUsage)
	}
}
