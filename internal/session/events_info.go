package session

import (
	"strings"
	"time"
	"unicode"
)

// infoPayloads are this file's types (events.go: payloads).
var infoPayloads = []func() EventPayload{
	func() EventPayload { return &SessionTitleChangedData{} },
	func() EventPayload { return &SessionArchivedData{} },
}

// A session's title and archive: what the user calls the session, and
// whether it is put away. Neither changes how the session runs.

// TitleSource is where a session's title comes from. A title replaces
// the current one only from a source ranked the same or higher
// (TitleSource.Outranks): the user's own over the agent's
// (session_info_update) over the first prompt's.
type TitleSource string

// Title sources, lowest first.
const (
	TitleNone   TitleSource = ""
	TitlePrompt TitleSource = "prompt"
	TitleAgent  TitleSource = "agent"
	TitleUser   TitleSource = "user"
)

// rank orders the sources.
func (s TitleSource) rank() int {
	switch s {
	case TitlePrompt:
		return 1
	case TitleAgent:
		return 2
	case TitleUser:
		return 3
	}
	return 0
}

// Replaces reports whether a title from s replaces one from cur.
func (s TitleSource) Replaces(cur TitleSource) bool { return s.rank() >= cur.rank() }

// MaxTitle is the longest title, in runes (the contract's maxLength).
const MaxTitle = 200

// promptTitleLen is how much of a first prompt becomes the title.
const promptTitleLen = 60

// PromptTitle is the title a first prompt gives a session that has none:
// its first line, on one line, cut at a word near promptTitleLen runes
// ("" for a prompt with no text).
func PromptTitle(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	text = oneLine(text)
	r := []rune(text)
	if len(r) <= promptTitleLen {
		return text
	}
	cut := promptTitleLen
	for i := promptTitleLen; i > promptTitleLen/2; i-- {
		if unicode.IsSpace(r[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRight(string(r[:cut]), " ,.;:") + "…"
}

// CleanTitle is title on one line, trimmed, without control characters,
// at most MaxTitle runes.
func CleanTitle(title string) string {
	title = oneLine(title)
	if r := []rune(title); len(r) > MaxTitle {
		title = string(r[:MaxTitle])
	}
	return title
}

// SessionTitleChangedData is the payload of session.title_changed.
type SessionTitleChangedData struct {
	EventCommon
	Title  string      `json:"title"`
	Source TitleSource `json:"source"`
}

// EventType is session.title_changed.
func (*SessionTitleChangedData) EventType() string { return "session.title_changed" }

// OnGlobalStream: session.title_changed also goes to GET /events.
func (*SessionTitleChangedData) OnGlobalStream() {}

// evolve folds SessionTitleChangedData into s (State.Evolve).
func (p *SessionTitleChangedData) evolve(s *State, e Event) error {
	p.applyTo(&s.Session, e.At)
	return nil
}

func (p *SessionTitleChangedData) applyTo(sess *Session, at time.Time) {
	sess.Title, sess.TitleSource, sess.UpdatedAt = p.Title, p.Source, at
}

// SessionArchivedData is the payload of session.archived.
type SessionArchivedData struct {
	EventCommon
	Archived bool `json:"archived"`
}

// EventType is session.archived.
func (*SessionArchivedData) EventType() string { return "session.archived" }

// OnGlobalStream: session.archived also goes to GET /events.
func (*SessionArchivedData) OnGlobalStream() {}

// evolve folds SessionArchivedData into s (State.Evolve).
func (p *SessionArchivedData) evolve(s *State, e Event) error {
	p.applyTo(&s.Session, e.At)
	return nil
}

func (p *SessionArchivedData) applyTo(sess *Session, at time.Time) {
	sess.Archived, sess.UpdatedAt = p.Archived, at
}

// oneLine is s with every run of spaces and control characters (a NUL,
// which PostgreSQL's TEXT refuses, among them) one space, trimmed.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}
