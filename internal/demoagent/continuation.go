package demoagent

import (
	"fmt"
	"strings"
)

// continuationOpening opens the prompt tetherd sends to continue an
// interrupted turn (session.ContinuationPrompt). That prompt is tetherd's,
// not the user's: echoing it as the plain reply does ("You said: …") would
// show the user a hidden prompt, so the demo agent answers it as a
// continuation instead.
const continuationOpening = "Your previous turn was interrupted ("

// cutOffHeader introduces the tool calls a continuation prompt reports as
// cut off, one "- TITLE (KIND, id ID): …" line each.
const cutOffHeader = "These tool calls did not complete"

// changedFilesLine opens the continuation prompt's line naming the files
// the interrupted turn changed ("…: a.txt (added), b.txt (modified).").
const changedFilesLine = "Files changed in the workspace since this turn began: "

// continuationReply is the opening of the demo agent's answer to a
// continuation prompt: that it goes on, why it stopped, the calls it does
// not count on and the files it finds changed (named as the prompt names
// them, so a test sees what the agent was told), or ok false when text is
// no continuation prompt.
func continuationReply(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, continuationOpening)
	if !ok {
		return "", false
	}
	reason, _, _ := strings.Cut(rest, ")")
	var cut []string
	var changed string
	inCalls := false
	for line := range strings.SplitSeq(rest, "\n") {
		if files, ok := strings.CutPrefix(line, changedFilesLine); ok {
			changed = strings.TrimSuffix(files, ".")
		}
		switch {
		case strings.HasPrefix(line, cutOffHeader):
			inCalls = true
		case inCalls && strings.HasPrefix(line, "- "):
			call, _, _ := strings.Cut(strings.TrimPrefix(line, "- "), "): ")
			cut = append(cut, call+")")
		default:
			inCalls = false
		}
	}
	reply := fmt.Sprintf("Continuing where I left off (interrupted by %s). ", reason)
	if len(cut) > 0 {
		reply += "I do not count on what did not complete: " + strings.Join(cut, ", ") + ". "
	}
	if changed != "" {
		reply += "I see these files changed: " + changed + ". "
	}
	return reply, true
}

// resumeRequest reads a prompt that carries the resume context (history
// injection, session.ResumeContext): the request it ends with, and how
// many history entries (lines opening with "[") came before it.
func resumeRequest(text string) (req string, entries int, ok bool) {
	const head, cur, instr = "RESUME CONTEXT FOR CONTINUING TASK", "=== CURRENT REQUEST ===", "=== INSTRUCTIONS ==="
	if !strings.HasPrefix(text, head) {
		return "", 0, false
	}
	hist, rest, found := strings.Cut(text, cur)
	if !found {
		return "", 0, false
	}
	req, _, _ = strings.Cut(rest, instr)
	for _, l := range strings.Split(hist, "\n") {
		if strings.HasPrefix(l, "[") {
			entries++
		}
	}
	return strings.TrimSpace(req), entries, true
}
