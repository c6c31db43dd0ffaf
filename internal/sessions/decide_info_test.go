package sessions

import (
	"encoding/json"
	"testing"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/session"
)

// titled records the session's title from source.
func titled(title string, source session.TitleSource) effect {
	return record("", &session.SessionTitleChangedData{Title: title, Source: source})
}

// archivedAs records the session archived, or brought back.
func archivedAs(archived bool) effect {
	return record("", &session.SessionArchivedData{Archived: archived})
}

// named gives the view a title from source.
func named(title string, source session.TitleSource) func(*view) {
	return func(v *view) { v.Title, v.TitleSource = title, source }
}

func TestDecideInfo(t *testing.T) {
	str := func(s string) *string { return &s }
	yes, no := true, false
	// The user's title and the archive are taken in every state, a closed
	// session's too: they change what it is called, not what it did.
	always := func(d decision) map[session.SessionState]decision {
		return terminalStates(map[session.SessionState]decision{
			session.SessionCreated: d, session.SessionStarting: d, session.SessionRunning: d, session.SessionWaitingForInput: d,
		}, func(session.SessionState) decision { return d })
	}
	cases := perState("rename", infoCmd{Title: str("New")}, nil, always(acc(titled("New", session.TitleUser))))
	cases = append(cases, perState("archive", infoCmd{Archived: &yes}, nil, always(acc(archivedAs(true))))...)
	waiting := inState(session.SessionWaitingForInput)
	cases = append(cases, []decideCase{
		{"the user's title replaces the prompt's", with(waiting, named("Old", session.TitlePrompt)), infoCmd{Title: str("New")},
			acc(titled("New", session.TitleUser))},
		{"the user's title replaces the agent's, the same words too", with(waiting, named("Old", session.TitleAgent)),
			infoCmd{Title: str("Old")}, acc(titled("Old", session.TitleUser))},
		{"the user's own title again changes nothing", with(waiting, named("Old", session.TitleUser)), infoCmd{Title: str("Old")}, acc()},
		{"archive an archived session", with(waiting, func(v *view) { v.Archived = true }), infoCmd{Archived: &yes}, acc()},
		{"bring back an archived session", with(waiting, func(v *view) { v.Archived = true }), infoCmd{Archived: &no},
			acc(archivedAs(false))},
		{"bring back a session never archived", waiting, infoCmd{Archived: &no}, acc()},
		{"rename and archive at once", waiting, infoCmd{Title: str("New"), Archived: &yes},
			acc(titled("New", session.TitleUser), archivedAs(true))},
		{"neither", waiting, infoCmd{}, acc()},
	}...)
	runDecideCases(t, cases)
}

// TestDecidePromptTitles: the first prompt titles a session nobody named;
// a later prompt, or a named session, keeps its title.
func TestDecidePromptTitles(t *testing.T) {
	waiting := inState(session.SessionWaitingForInput)
	in := promptCmd{PromptID: "p1", Title: "Fix the parser"}
	admitted := decide(waiting, promptCmd{PromptID: "p1"}).Effects
	cases := []decideCase{
		{"first prompt titles an untitled session", waiting, in, acc(admitted, titled("Fix the parser", session.TitlePrompt))},
		{"a later prompt keeps the first one's title", with(waiting, named("Earlier", session.TitlePrompt)), in, acc(admitted)},
		{"a prompt keeps the agent's title", with(waiting, named("Agent's", session.TitleAgent)), in, acc(admitted)},
		{"a prompt keeps the user's title", with(waiting, named("Mine", session.TitleUser)), in, acc(admitted)},
		{"a prompt with no text titles nothing", waiting, promptCmd{PromptID: "p1"}, acc(admitted)},
	}
	runDecideCases(t, cases)
}

// TestDecideAgentTitle: the agent's session_info_update titles the
// session unless the user named it.
func TestDecideAgentTitle(t *testing.T) {
	info := func(title any) updateInput {
		b, _ := json.Marshal(map[string]any{"sessionUpdate": "session_info_update", "title": title})
		return updateInput{Kind: acp.UpdateSessionInfo, Current: true, Data: b}
	}
	running := inState(session.SessionRunning)
	cases := []decideCase{
		{"untitled", running, info("Parser fix"), acc(titled("Parser fix", session.TitleAgent))},
		{"over the prompt's title", with(running, named("Fix the parser", session.TitlePrompt)), info("Parser fix"),
			acc(titled("Parser fix", session.TitleAgent))},
		{"a new title of the agent's", with(running, named("Parser fix", session.TitleAgent)), info("Parser fix, tests green"),
			acc(titled("Parser fix, tests green", session.TitleAgent))},
		{"the same title again", with(running, named("Parser fix", session.TitleAgent)), info("Parser fix"), acc()},
		{"not over the user's", with(running, named("Mine", session.TitleUser)), info("Parser fix"), acc()},
		{"on one line, trimmed", running, info("  Parser\n fix  "), acc(titled("Parser fix", session.TitleAgent))},
		{"cleared (null)", with(running, named("Parser fix", session.TitleAgent)), info(nil), acc()},
		{"empty", running, info("   "), acc()},
		{"of a closed session", inState(session.SessionCompleted), info("Parser fix"), acc()},
	}
	runDecideCases(t, cases)
}
