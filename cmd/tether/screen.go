package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/tether/tether/client"
)

// screen is what attach shows: the session's output, printed once and
// never redrawn (the terminal's scrollback is the transcript), and below
// it the line being typed. Only the attach loop touches it.
type screen struct {
	w   io.Writer
	tty bool
	// color: attach's own lines are coloured (not with --style notty,
	// NO_COLOR, or no terminal).
	color  bool
	render func(string) string
	id     string
	notes  chan string

	line    []rune
	running string // the running turn's prompt id ("" idle)
	// msgID is the message being printed, md its Markdown in flight.
	msgID int64
	md    *markdown
	// tools are the tool calls shown, by id, with the status last shown.
	tools map[string]string
	// perms are the permission requests waiting, oldest first.
	perms []client.PermissionRequestedData
	// down is set while the stream is broken (shown once per break).
	down bool
}

func newScreen(w io.Writer, tty, color bool, render func(string) string, id string) *screen {
	return &screen{w: w, tty: tty, color: color && tty, render: render, id: id, notes: make(chan string, 4), tools: map[string]string{}}
}

// Styles of the lines attach prints itself (plain without colour).
func (s *screen) style(code, text string) string {
	if !s.color {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// print writes text (whole lines) above the line being typed.
func (s *screen) print(text string) {
	if text == "" {
		return
	}
	if s.tty {
		io.WriteString(s.w, "\r\x1b[K")
	}
	io.WriteString(s.w, text)
	s.prompt()
}

// prompt draws the line being typed.
func (s *screen) prompt() {
	if !s.tty {
		return
	}
	hint := "> "
	if len(s.perms) > 0 && len(s.line) == 0 {
		hint = s.style("33", fmt.Sprintf("[1-%d answers] ", len(s.perms[0].Options))) + "> "
	}
	io.WriteString(s.w, "\r\x1b[K"+hint+string(s.line))
}

// note prints a line of attach's own (dim).
// It leaves the message in flight as it is: its unfinished line is not on
// screen yet, and goes on after the note.
func (s *screen) note(msg string) {
	s.print(s.style("2", "· "+msg) + "\n")
}

// finish leaves the terminal on a fresh line.
func (s *screen) finish() {
	s.endMessage()
	if s.tty {
		io.WriteString(s.w, "\r\x1b[K")
	}
}

// broken shows that the stream broke and will resume.
func (s *screen) broken(err error, wait time.Duration) {
	if s.down {
		return
	}
	s.down = true
	s.note(fmt.Sprintf("connection lost (%v); resuming…", shorten(err.Error(), 80)))
}

// snapshot prints the latest turns of transcript t (last of them; 0:
// all) as their events would have.
func (s *screen) snapshot(t *client.Transcript, last int) {
	turns := t.Turns
	if last > 0 && len(turns) > last {
		turns = turns[len(turns)-last:]
	}
	if earlier := earlierTurns(t, turns); earlier > 0 {
		s.note(fmt.Sprintf("%d earlier turns (tether export %s)", earlier, s.id))
	}
	type item struct {
		at    time.Time
		order int
		ev    client.Event
	}
	for _, turn := range turns {
		var items []item
		for _, m := range t.Messages {
			if m.PromptId != nil && *m.PromptId == turn.PromptId {
				items = append(items, item{m.CreatedAt, int(m.Id), event("message.added", map[string]any{
					"messageId": m.Id, "role": m.Role, "text": m.Text, "promptId": turn.PromptId})})
			}
		}
		for _, c := range t.ToolCalls {
			if c.PromptId != nil && *c.PromptId == turn.PromptId {
				at := turn.CreatedAt
				if c.CreatedAt != nil {
					at = *c.CreatedAt
				}
				items = append(items, item{at, 1 << 30, event("tool_call.started", map[string]any{
					"toolCallId": c.Id, "title": c.Title, "kind": c.Kind, "status": c.Status, "promptId": turn.PromptId})})
			}
		}
		sort.SliceStable(items, func(i, j int) bool {
			if !items[i].at.Equal(items[j].at) {
				return items[i].at.Before(items[j].at)
			}
			return items[i].order < items[j].order
		})
		for _, it := range items {
			s.event(it.ev)
		}
		switch turn.State {
		case "running":
			s.running = turn.PromptId
		case "queued":
		default:
			s.event(event("turn."+string(turn.State), map[string]any{"promptId": turn.PromptId, "state": turn.State,
				"stopReason": turn.StopReason, "reason": turn.InterruptReason}))
		}
	}
	for _, p := range t.PendingPermissions {
		s.event(event("permission.requested", map[string]any{"requestId": p.Id, "title": p.Title, "options": p.Options, "promptId": p.PromptId}))
	}
}

// event is a synthetic event of type typ with data.
func event(typ string, data any) client.Event {
	b, _ := json.Marshal(data)
	return client.Event{Type: typ, Data: b}
}

// event shows one event of the session.
func (s *screen) event(e client.Event) {
	if s.down {
		s.down = false
		s.note("resumed")
	}
	var d struct {
		PromptID   string          `json:"promptId"`
		MessageID  int64           `json:"messageId"`
		Role       string          `json:"role"`
		Text       string          `json:"text"`
		ToolCallID string          `json:"toolCallId"`
		Title      *string         `json:"title"`
		Kind       *string         `json:"kind"`
		Status     string          `json:"status"`
		State      string          `json:"state"`
		StopReason *string         `json:"stopReason"`
		Reason     json.RawMessage `json:"reason"`
		Code       string          `json:"code"`
		Message    string          `json:"message"`
		RequestID  string          `json:"requestId"`
		OptionID   *string         `json:"optionId"`
		Entries    []client.PlanEntry
	}
	_ = json.Unmarshal(e.Data, &d)
	switch e.Type {
	case "message.added", "message.chunk":
		s.text(d.MessageID, d.Role, d.Text)
	case "tool_call.started", "tool_call.updated":
		s.tool(d.ToolCallID, deref(d.Title), deref(d.Kind), d.Status)
	case "plan.updated":
		s.endMessage()
		s.print(s.style("36", "▸ plan: "+planLine(d.Entries)) + "\n")
	case "permission.requested":
		var p client.PermissionRequestedData
		_ = json.Unmarshal(e.Data, &p)
		s.ask(p)
	case "permission.resolved":
		s.resolved(d.RequestID, d.State, d.OptionID)
	case "turn.started":
		s.running = d.PromptID
	case "turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted":
		s.endMessage()
		if s.running == d.PromptID {
			s.running = ""
		}
		why := d.State
		if d.StopReason != nil && *d.StopReason != "" && d.State == "completed" {
			why += " (" + *d.StopReason + ")"
		}
		if d.Code != "" {
			why += ": " + d.Code
		}
		if d.Message != "" {
			why += ": " + shorten(d.Message, 100)
		}
		var reason string
		if json.Unmarshal(d.Reason, &reason) == nil && reason != "" {
			why += " (" + reason + ")"
		}
		if d.State == "interrupted" {
			why += "; `tether continue " + s.id + "` picks it up"
		}
		color := "32"
		if d.State != "completed" {
			color = "33"
		}
		s.print(s.style(color, "── turn "+why) + "\n")
	case client.ResyncRequired:
		s.note("the daemon's log moved on without this client (resync required): run tether attach again")
	}
}

// text shows a message's text: a user's prompt at once, an agent's
// Markdown as its lines complete.
func (s *screen) text(id int64, role, text string) {
	if id != s.msgID || s.md == nil {
		s.endMessage()
		s.msgID = id
		render := s.render
		switch role {
		case "user":
			render = func(t string) string {
				return s.style("1;34", "› "+strings.ReplaceAll(strings.TrimRight(t, "\n"), "\n", "\n  "))
			}
		case "thought":
			render = func(t string) string { return s.style("2;3", strings.TrimRight(t, "\n")) }
		}
		s.md = &markdown{render: render}
		if role == "user" {
			s.md.fence = "\x00" // a prompt is shown whole, not as Markdown lines
		}
	}
	s.print(s.md.add(text))
}

// endMessage prints the rest of the message in flight.
func (s *screen) endMessage() {
	if s.md == nil {
		return
	}
	md := s.md
	s.md, s.msgID = nil, 0
	s.print(md.end())
}

// tool shows a tool call: one line when it starts, one when it ends.
func (s *screen) tool(id, title, kind, status string) {
	shown, seen := s.tools[id]
	done := status == "completed" || status == "failed"
	if seen && (shown == status || !done) {
		return
	}
	s.endMessage()
	s.tools[id] = status
	if kind == "" {
		kind = "tool"
	}
	switch {
	case status == "failed":
		s.print(s.style("31", "✗ "+kind+" "+title+" failed") + "\n")
	case done:
		s.print(s.style("32", "✓ "+kind+" "+title) + "\n")
	default:
		s.print(s.style("36", "⚙ "+kind+" "+title+" …") + "\n")
	}
}

// planLine is a plan compactly: done/total and the entry in progress.
func planLine(entries []client.PlanEntry) string {
	done, current := 0, ""
	for _, e := range entries {
		switch e.Status {
		case "completed":
			done++
		case "in_progress":
			if current == "" {
				current = e.Content
			}
		}
	}
	line := fmt.Sprintf("%d/%d done", done, len(entries))
	if current != "" {
		line += " · " + shorten(current, 60)
	}
	return line
}

// ask shows a permission request and how to answer it.
func (s *screen) ask(p client.PermissionRequestedData) {
	for _, q := range s.perms {
		if q.RequestId == p.RequestId {
			return
		}
	}
	s.endMessage()
	s.perms = append(s.perms, p)
	var b strings.Builder
	b.WriteString(s.style("1;33", "? permission: "+deref(p.Title)) + "\n")
	for i, o := range p.Options {
		fmt.Fprintf(&b, "  %s %s\n", s.style("1", fmt.Sprintf("[%d]", i+1)), o.Name)
	}
	s.print(b.String())
}

// resolved shows a permission request's answer and forgets it.
func (s *screen) resolved(id, state string, option *string) {
	for i, q := range s.perms {
		if q.RequestId != id {
			continue
		}
		s.perms = append(s.perms[:i], s.perms[i+1:]...)
		what := state
		if option != nil {
			for _, o := range q.Options {
				if o.OptionId == *option {
					what = o.Name
				}
			}
		}
		s.endMessage()
		s.print(s.style("33", "  → "+what) + "\n")
		return
	}
}

// key handles one key and says what it asks of the daemon.
func (s *screen) key(k key) action {
	switch k.ctrl {
	case 0:
		if len(s.line) == 0 && len(s.perms) > 0 && k.r >= '1' && k.r <= '9' {
			p := s.perms[0]
			if i := int(k.r - '1'); i < len(p.Options) {
				return action{answer: &answerAct{request: p.RequestId, option: p.Options[i].OptionId}}
			}
		}
		s.line = append(s.line, k.r)
	case 0x7f:
		if len(s.line) > 0 {
			s.line = s.line[:len(s.line)-1]
		}
	case 'U':
		s.line = s.line[:0]
	case 'C':
		switch {
		case s.running != "":
			s.note("cancelling the turn…")
			return action{cancel: true}
		case len(s.line) > 0:
			s.line = s.line[:0]
		default:
			return action{detach: true}
		}
	case 'D':
		if len(s.line) == 0 {
			return action{detach: true}
		}
	case '\r':
		text := string(s.line)
		if k.line != "" {
			text = k.line
		}
		s.line = s.line[:0]
		s.prompt()
		if strings.TrimSpace(text) != "" {
			return action{prompt: text}
		}
		return action{}
	}
	s.prompt()
	return action{}
}

// deref is *p, "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// earlierTurns is how many of the session's turns come before shown, the
// latest of transcript t (a page of it, or all): turns are numbered from
// 1 by seq, so the first shown one's seq counts those before it.
func earlierTurns(t *client.Transcript, shown []client.Turn) int {
	if len(shown) == 0 {
		return 0
	}
	if shown[0].Seq != nil {
		return int(*shown[0].Seq) - 1
	}
	return len(t.Turns) - len(shown)
}
