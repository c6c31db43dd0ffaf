package demoagent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	acp "github.com/coder/acp-go-sdk"
)

// ChunkText is the text of chunk i (from 1) of `/stream` and `/flood`:
// what a test checks each chunk of a streamed reply against.
func ChunkText(i int) string { return fmt.Sprintf("chunk %d\n", i) }

// errCancelled ends a turn that session/cancel interrupted.
var errCancelled = errors.New("demoagent: turn cancelled")

// permissionGrace is how long a cancelled turn waits for the client to answer
// a pending permission request (ACP says it must, with "cancelled") before
// giving up on it.
const permissionGrace = 2 * time.Second

// crashFlush gives the client a moment to read the last update before the
// process dies; the SDK has already written it, this is belt and braces.
const crashFlush = 50 * time.Millisecond

// availableCommands is the available_commands_update payload. The command
// names are a documented interface: tests and the README rely on them.
func availableCommands() []acp.AvailableCommand {
	cmd := func(name, desc, hint string) acp.AvailableCommand {
		c := acp.AvailableCommand{Name: name, Description: desc}
		if hint != "" {
			c.Input = &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: hint}}
		}
		return c
	}
	return []acp.AvailableCommand{
		cmd("echo", "Reply with TEXT", "TEXT"),
		cmd("stream", "Stream N message chunks", "N"),
		cmd("stamped", "Stream N message chunks, each with the time it was sent (Unix ns)", "N [EVERY MS]"),
		cmd("tool", "Run a tool: 'read PATH', 'fail', 'hang', or a client fs probe", "read PATH | fail | hang | "+fsProbeUsage),
		cmd("permission", "Ask for permission to edit demo.txt (with the diff), or to run COMMAND", "[when FILE | run COMMAND]"),
		cmd("hang", "Block until cancelled", ""),
		cmd("deaf", "Block like hang, ignoring the first N session/cancel notifications (all without N)", "[N]"),
		cmd("sleep", "Sleep MS milliseconds, then finish", "MS"),
		cmd("crash", "Exit the agent process (code 3) mid-turn", ""),
		cmd("crash-in-tool", "Exit the agent process (code 4) during a tool call", ""),
		cmd("lose-session", "Lose the session mid-tool while the process lives on (as claude-agent-acp when Claude Code dies)", ""),
		cmd("error", "Fail the prompt with a JSON-RPC error", "CODE MESSAGE"),
		cmd("thought", "Send a thought chunk, then a message", "TEXT"),
		cmd("unknown-update", "Send a session/update of an unknown kind", ""),
		cmd("flood", "Stream N message chunks in one write, as fast as the pipe takes them ('messages': each a message of its own)", "N [messages]"),
		cmd("permission-many", "Ask N permission questions at once and report each answer", "N"),
		cmd("approve-self", "Try to answer its own permission request with the daemon's token from the environment", ""),
		cmd("hostile", "Attack the daemon, the host and the machine as a hostile agent would; one line per attack (internal/demoagent/hostile.go)", "JSON"),
		cmd("env", "Reply with the value of an environment variable, or <unset>", "NAME"),
		cmd("late", "End the turn, then send N message chunks after it", "N"),
		cmd("usage", "Send N usage_update notifications at the end of the turn ('late': after it)", "N [late]"),
		cmd("loop", "Work in a loop: N steps (0: until stopped) MS ms apart, each a chunk and a usage report of 120 tokens and 0.01 USD", "N [MS]"),
		cmd("two-messages", "Text, a tool call, text: two ACP messageIds ('noid': none)", "[noid]"),
		cmd("message-ids", "Two messages told apart only by their ACP messageId, PAUSE_MS apart", "[PAUSE_MS]"),
		cmd("options", "Reply with the session's mode and model, as the agent holds them", ""),
		cmd("mcp", "Reply with the MCP servers the session was given (JSON)", ""),
		cmd("steps", "N steps MS ms apart, each a completed tool call and a chunk; 'hang': then a tool call left running", "N MS [hang]"),
		cmd("work", "Write each FILE, run `ls`, then hang in a running command (for the recovery report)", "FILE..."),
	}
}

// turn is one running prompt.
type turn struct {
	a   *agent
	s   *session
	sid acp.SessionId
	// ctx ends on session/cancel or when the connection goes away.
	ctx context.Context
	// forked is how many history entries a fork gave the session, on its
	// first turn since (else 0).
	forked int
	// tokens is the turn's token usage its answer reports (nil: none),
	// as claude-agent-acp's PromptResponse.usage (/usage sets it).
	tokens *acp.Usage
}

// interrupted reports why ctx ended: errCancelled for session/cancel,
// errConnClosed when the connection is gone, nil while the turn may go on.
func (t *turn) interrupted() error {
	if t.ctx.Err() == nil {
		return nil
	}
	if t.a.serveCtx.Err() != nil {
		return errConnClosed
	}
	return errCancelled
}

// pause waits d, or until the turn is cancelled or the connection ends.
func (t *turn) pause(d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-t.ctx.Done():
		return t.interrupted()
	}
}

// streamArgs parses /stream's N [EVERY MS].
func streamArgs(f []string) (n, every, pause int, err error) {
	if len(f) != 1 && len(f) != 3 {
		return 0, 0, 0, errors.New("want N or N EVERY MS")
	}
	vals := make([]int, len(f))
	for i, s := range f {
		if vals[i], err = strconv.Atoi(s); err != nil || vals[i] < 0 {
			return 0, 0, 0, fmt.Errorf("bad number %q", s)
		}
	}
	if len(vals) == 3 {
		return vals[0], vals[1], vals[2], nil
	}
	return vals[0], 0, 0, nil
}

func (t *turn) emit(u acp.SessionUpdate) error { return t.a.emit(t.s, t.sid, u) }
func (t *turn) say(text string) error          { return t.sayIn("", text) }

// sayIn sends a message chunk that names its ACP message: chunks sharing
// messageID belong to one assistant message ("" sends none, as older agents do).
func (t *turn) sayIn(messageID, text string) error { return t.a.emitText(t.s, t.sid, messageID, text) }

func (t *turn) cwd() string {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.s.file.Cwd
}

func (t *turn) nextToolCallID() acp.ToolCallId {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.s.file.NextToolCall++
	return acp.ToolCallId(fmt.Sprintf("tool-%d", t.s.file.NextToolCall))
}

func toolDone(id acp.ToolCallId, status acp.ToolCallStatus, text string) acp.SessionUpdate {
	return acp.UpdateToolCall(id, acp.WithUpdateStatus(status),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(text))}))
}

// run dispatches on the first text block of the prompt.
func (t *turn) run(prompt []acp.ContentBlock) error {
	text, haveText := "", false
	var attachments []string
	for _, b := range prompt {
		if b.Text != nil && !haveText {
			text, haveText = strings.TrimSpace(b.Text.Text), true
		} else if a := attachment(b); a != "" {
			attachments = append(attachments, a)
		}
	}
	if t.forked > 0 {
		// Given the context by session/fork: say so, then run the prompt.
		if err := t.say(fmt.Sprintf("[forked with %d history entries] ", t.forked)); err != nil {
			return err
		}
	}
	if req, n, ok := resumeRequest(text); ok {
		// Briefed by history injection: say so, then do what was asked.
		if err := t.say(fmt.Sprintf("[briefed with %d history entries] ", n)); err != nil {
			return err
		}
		text = req
	}
	if opening, ok := continuationReply(text); ok {
		return t.plain(opening, attachments)
	}
	if text == "" {
		return t.plain("You sent no text. ", attachments)
	}
	if !strings.HasPrefix(text, "/") {
		return t.plain("You said: "+text+". ", attachments)
	}
	name, arg := text, ""
	if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
		name, arg = text[:i], strings.TrimSpace(text[i:])
	}
	switch name {
	case "/echo":
		return t.say(arg)
	case "/stream", "/stamped":
		// /stream N [EVERY MS]: N chunks, pausing MS milliseconds after
		// every EVERY of them (a model that streams in bursts; the
		// restart tests kill the daemon between and inside the bursts).
		// /stamped adds the time each chunk is sent, in Unix nanoseconds:
		// a client on the same machine measures agent → client latency
		// (cmd/tether-bench -only hosts).
		f := strings.Fields(arg)
		n, every, pause, err := streamArgs(f)
		if err != nil {
			return t.say("usage: " + name + " N [EVERY MS]")
		}
		for i := 1; i <= n; i++ {
			if err := t.interrupted(); err != nil {
				return err
			}
			text := ChunkText(i)
			if name == "/stamped" {
				text = fmt.Sprintf("chunk %d %d\n", i, time.Now().UnixNano())
			}
			if err := t.say(text); err != nil {
				return err
			}
			if every > 0 && i%every == 0 && i < n {
				if err := t.pause(time.Duration(pause) * time.Millisecond); err != nil {
					return err
				}
			}
		}
		return nil
	case "/flood":
		// "N messages": each chunk under an ACP messageId of its own, so
		// the transcript holds N messages (a long session, in one turn).
		fields := strings.Fields(arg)
		n, err := strconv.Atoi(first(fields))
		apart := len(fields) == 2 && fields[1] == "messages"
		if err != nil || n < 0 || (len(fields) == 2 && !apart) || len(fields) > 2 {
			return t.say("usage: /flood N [messages]")
		}
		updates := make([]json.RawMessage, n)
		for i := range updates {
			if apart {
				updates[i] = textChunk(fmt.Sprintf("flood-%d", i+1), ChunkText(i+1))
			} else if updates[i], err = json.Marshal(acp.UpdateAgentMessageText(ChunkText(i + 1))); err != nil {
				return err
			}
		}
		return t.a.flood(t.s, t.sid, updates)
	case "/tool":
		return t.tool(arg)
	case "/work":
		return t.work(arg)
	case "/steps":
		return t.steps(arg)
	case "/options":
		return t.say(describeOptions(t.s.currentOptions()))
	case "/mcp":
		return t.say(t.s.describeMCP())
	case "/permission":
		if command, ok := strings.CutPrefix(arg, "run "); ok && strings.TrimSpace(command) != "" {
			return t.permissionToRun(strings.TrimSpace(command))
		}
		if file, ok := strings.CutPrefix(arg, "when "); ok {
			// /permission when FILE: the question waits until FILE (in
			// the session's directory) exists, so a test asks it at the
			// moment it chooses, e.g. while tetherd is stopping.
			if file = strings.TrimSpace(file); !filepath.IsLocal(file) {
				return t.say("usage: /permission [when FILE]")
			}
			if err := t.awaitFile(file); err != nil {
				return err
			}
		}
		return t.permission()
	case "/hang":
		if err := t.say("hanging…"); err != nil {
			return err
		}
		<-t.ctx.Done()
		return t.interrupted()
	case "/deaf":
		// An agent that misses a cancel (one that raced its prompt, or
		// ignores it): session/cancel ends the turn only once the
		// ignored ones are spent (Cancel, deafness).
		if err := t.say("not listening…"); err != nil {
			return err
		}
		<-t.ctx.Done()
		return t.interrupted()
	case "/wait":
		// A model that never answers: no output at all until cancelled
		// or stopped (the prompt is held: it was recorded on receipt).
		<-t.ctx.Done()
		return t.interrupted()
	case "/sleep":
		ms, err := strconv.Atoi(arg)
		if err != nil || ms < 0 {
			return t.say("usage: /sleep MS")
		}
		if err := t.say(fmt.Sprintf("sleeping %d ms\n", ms)); err != nil {
			return err
		}
		timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-t.ctx.Done():
			return t.interrupted()
		}
		return t.say("done")
	case "/crash":
		if err := t.say("crashing…"); err != nil {
			return err
		}
		return t.crash(3)
	case "/crash-in-tool":
		id := t.nextToolCallID()
		if err := t.emit(acp.StartToolCall(id, "Run crashing tool",
			acp.WithStartKind(acp.ToolKindExecute), acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
			return err
		}
		return t.crash(4)
	case "/lose-session":
		return t.loseSession()
	case "/error":
		codeText, msg, _ := strings.Cut(arg, " ")
		code, err := strconv.Atoi(codeText)
		if err != nil {
			return t.say("usage: /error CODE MESSAGE")
		}
		if msg = strings.TrimSpace(msg); msg == "" {
			msg = "demo error"
		}
		return &acp.RequestError{Code: code, Message: msg}
	case "/thought":
		if err := t.emit(acp.UpdateAgentThoughtText(arg)); err != nil {
			return err
		}
		return t.say("Done thinking.")
	case "/unknown-update":
		// The SDK's SessionUpdate union cannot carry an unknown kind, so
		// this one goes onto the wire raw.
		raw := []byte(`{"sessionUpdate":"tether_demo_unknown","note":"clients must ignore unknown sessionUpdate kinds"}`)
		if err := t.a.emitRaw(t.s, t.sid, raw); err != nil {
			return err
		}
		return t.say("sent an unknown update")
	case "/permission-many":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return t.say("usage: /permission-many N")
		}
		return t.permissionFlood(n)
	case "/approve-self":
		return t.approveSelf()
	case "/hostile":
		return t.hostile(arg)
	case "/env":
		// Lets tests see the environment the daemon gave its agent.
		if arg == "" {
			return t.say("usage: /env NAME")
		}
		v, ok := os.LookupEnv(arg)
		if !ok {
			v = "<unset>"
		}
		return t.say(v)
	case "/late":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 {
			return t.say("usage: /late N")
		}
		go t.late(n)
		return t.say("ending the turn; more follows")
	case "/usage":
		return t.usage(arg)
	case "/loop":
		return t.loop(arg)
	case "/two-messages":
		return t.twoMessages(arg != "noid")
	case "/message-ids":
		return t.messageIDs(arg)
	default:
		return t.say("unknown command " + name)
	}
}

// crash stops the process the way a crashing agent does: what was sent is
// already persisted (emit saves after each update), nothing else is.
func (t *turn) crash(code int) error {
	time.Sleep(crashFlush)
	t.a.exit(code)
	// Only reached when a test replaced the exit function.
	return fmt.Errorf("demoagent: exit(%d)", code)
}

// loseSession is claude-agent-acp when its Claude Code process dies
// mid-tool: a chunk and a tool call in progress, then the prompt fails
// with its -32603 and the session is forgotten by this process (later
// prompts: unknown session). The state dir still holds it, so a new
// process resumes or loads it.
func (t *turn) loseSession() error {
	if err := t.say("working…"); err != nil {
		return err
	}
	if err := t.emit(acp.StartToolCall(t.nextToolCallID(), "Run a tool that never reports",
		acp.WithStartKind(acp.ToolKindExecute), acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
		return err
	}
	t.a.mu.Lock()
	delete(t.a.sessions, string(t.sid))
	t.a.mu.Unlock()
	return &acp.RequestError{Code: -32603, Message: "Internal error: the agent's backend process exited unexpectedly. Please start a new session."}
}

// plain is the default reply: plan, read a file, report, answer; the
// answer starts with opening (what was asked, or that a continuation goes on).
func (t *turn) plain(opening string, attachments []string) error {
	plan := []acp.PlanEntry{
		{Content: "Look at the working directory", Priority: acp.PlanEntryPriorityHigh, Status: acp.PlanEntryStatusInProgress},
		{Content: "Read one file", Priority: acp.PlanEntryPriorityMedium, Status: acp.PlanEntryStatusPending},
		{Content: "Write a reply", Priority: acp.PlanEntryPriorityLow, Status: acp.PlanEntryStatusPending},
	}
	if err := t.emit(acp.UpdatePlan(plan...)); err != nil {
		return err
	}
	cwd := t.cwd()
	file, err := pickFile(cwd)
	id := t.nextToolCallID()
	var found string
	switch {
	case err != nil:
		if err := t.emit(acp.StartToolCall(id, "Read working directory", acp.WithStartKind(acp.ToolKindRead),
			acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
			return err
		}
		if err := t.emit(toolDone(id, acp.ToolCallStatusFailed, err.Error())); err != nil {
			return err
		}
		found = "I could not list the working directory. "
	case file == "":
		if err := t.emit(acp.StartToolCall(id, "Read working directory", acp.WithStartKind(acp.ToolKindRead),
			acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
			return err
		}
		if err := t.emit(toolDone(id, acp.ToolCallStatusCompleted, "no files")); err != nil {
			return err
		}
		found = "The working directory has no files. "
	default:
		size, ok, err := t.readTool(id, cwd, file)
		if err != nil {
			return err
		}
		found = fmt.Sprintf("I looked at %s (%d bytes). ", file, size)
		if !ok {
			found = fmt.Sprintf("I could not read %s. ", file)
		}
	}
	if err := t.interrupted(); err != nil {
		return err
	}
	for i := range plan {
		plan[i].Status = acp.PlanEntryStatusCompleted
	}
	if err := t.emit(acp.UpdatePlan(plan...)); err != nil {
		return err
	}
	chunks := []string{opening, found, "That is all a demo agent can do."}
	if len(attachments) > 0 {
		chunks = append(chunks, " You attached "+strings.Join(attachments, "; ")+".")
	}
	for _, c := range chunks {
		if err := t.interrupted(); err != nil {
			return err
		}
		if err := t.say(c); err != nil {
			return err
		}
	}
	return nil
}

// awaitFile says it waits, then waits until the file name, relative to
// the session's directory, exists, or the turn is cancelled.
func (t *turn) awaitFile(name string) error {
	if err := t.say("waiting for " + name + "\n"); err != nil {
		return err
	}
	p := filepath.Join(t.cwd(), name)
	for {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
		if err := t.pause(20 * time.Millisecond); err != nil {
			return err
		}
	}
}

// permission implements /permission: a pending edit tool call gated on
// session/request_permission. The call carries the diff it would apply (as
// real agents' edit calls do), so that a client can show what it asks
// about; demo.txt is never written.
func (t *turn) permission() error {
	id := t.nextToolCallID()
	title := "Edit demo.txt"
	path := filepath.Join(t.cwd(), "demo.txt")
	var diff acp.ToolCallContent
	if old, err := os.ReadFile(path); err == nil {
		diff = acp.ToolDiffContent(path, string(old)+demoEdit, string(old))
	} else {
		diff = acp.ToolDiffContent(path, demoEdit)
	}
	content := []acp.ToolCallContent{diff}
	if err := t.emit(acp.StartToolCall(id, title, acp.WithStartKind(acp.ToolKindEdit),
		acp.WithStartStatus(acp.ToolCallStatusPending),
		acp.WithStartLocations([]acp.ToolCallLocation{{Path: path}}),
		acp.WithStartContent(content))); err != nil {
		return err
	}
	return t.gated(id, acp.ToolCallUpdate{
		ToolCallId: id, Title: acp.Ptr(title), Kind: acp.Ptr(acp.ToolKindEdit),
		Status: acp.Ptr(acp.ToolCallStatusPending), Content: content,
	}, "edited demo.txt (simulated)")
}

// demoEdit is the line /permission's diff adds to demo.txt.
const demoEdit = "A line the demo agent would add.\n"

// permissionToRun implements /permission run COMMAND: a pending execute
// tool call whose rawInput names the command, as coding agents send for a
// shell command. Nothing is run.
func (t *turn) permissionToRun(command string) error {
	id := t.nextToolCallID()
	title := "Run " + command
	input := map[string]any{"command": command}
	if err := t.emit(acp.StartToolCall(id, title, acp.WithStartKind(acp.ToolKindExecute),
		acp.WithStartStatus(acp.ToolCallStatusPending), acp.WithStartRawInput(input))); err != nil {
		return err
	}
	return t.gated(id, acp.ToolCallUpdate{
		ToolCallId: id, Title: acp.Ptr(title), Kind: acp.Ptr(acp.ToolKindExecute),
		Status: acp.Ptr(acp.ToolCallStatusPending), RawInput: input,
	}, "ran "+command+" (simulated)")
}

// gated asks permission for the tool call and reports the answer: done
// is the call's result when allowed.
func (t *turn) gated(id acp.ToolCallId, call acp.ToolCallUpdate, done string) error {
	outcome, err := t.askPermission(call)
	if err != nil {
		return err
	}
	if outcome == "" {
		if err := t.say("Permission outcome: cancelled"); err != nil {
			return err
		}
		if err := t.emit(toolDone(id, acp.ToolCallStatusFailed, "cancelled")); err != nil {
			return err
		}
		return errCancelled
	}
	if err := t.say("Permission outcome: selected " + outcome); err != nil {
		return err
	}
	// Nothing is edited or run for real: the demo only reports the decision.
	update := toolDone(id, acp.ToolCallStatusCompleted, done)
	if outcome == "reject_once" {
		update = toolDone(id, acp.ToolCallStatusFailed, "permission denied")
	}
	if err := t.emit(update); err != nil {
		return err
	}
	// A client that answers "selected" after it sent session/cancel still
	// gets a cancelled turn.
	return t.interrupted()
}

// askPermission returns the selected option id, or "" when the request was
// cancelled (by the client's answer or by session/cancel).
func (t *turn) askPermission(call acp.ToolCallUpdate) (string, error) {
	// The request outlives session/cancel on purpose: ACP requires the client
	// to answer pending requests with "cancelled", and waiting for that
	// answer is what real agents do. Only if it never comes is it abandoned.
	ctx, cancel := context.WithCancel(t.a.serveCtx)
	defer cancel()
	go func() {
		select {
		case <-t.ctx.Done():
			timer := time.NewTimer(permissionGrace)
			defer timer.Stop()
			select {
			case <-timer.C:
				cancel()
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()
	resp, err := t.a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: t.sid,
		ToolCall:  call,
		Options: []acp.PermissionOption{
			{OptionId: "allow_once", Name: "Allow once", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: "allow_always", Name: "Allow always", Kind: acp.PermissionOptionKindAllowAlways},
			{OptionId: "reject_once", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		if ierr := t.interrupted(); ierr != nil {
			if errors.Is(ierr, errCancelled) {
				return "", nil
			}
			return "", ierr
		}
		return "", err
	}
	if resp.Outcome.Selected != nil {
		return string(resp.Outcome.Selected.OptionId), nil
	}
	return "", nil
}

// first is fields[0], "" for none.
func first(fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// attachment describes a prompt block other than text the way a person
// would check it arrived: an image by type and size, an embedded file by
// name and lines, a link by name. "" for a text block.
func attachment(b acp.ContentBlock) string {
	switch {
	case b.Image != nil:
		raw, err := base64.StdEncoding.DecodeString(b.Image.Data)
		if err != nil {
			return fmt.Sprintf("an image (%s) whose data is not base64", b.Image.MimeType)
		}
		return fmt.Sprintf("an image (%s, %d bytes)", b.Image.MimeType, len(raw))
	case b.Audio != nil:
		return fmt.Sprintf("audio (%s)", b.Audio.MimeType)
	case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
		r := b.Resource.Resource.TextResourceContents
		return fmt.Sprintf("%s (embedded, %d lines)", path.Base(r.Uri), strings.Count(strings.TrimSuffix(r.Text, "\n"), "\n")+1)
	case b.Resource != nil && b.Resource.Resource.BlobResourceContents != nil:
		return fmt.Sprintf("%s (embedded)", path.Base(b.Resource.Resource.BlobResourceContents.Uri))
	case b.ResourceLink != nil:
		return fmt.Sprintf("a link to %s", b.ResourceLink.Name)
	}
	return ""
}
