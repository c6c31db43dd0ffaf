package realagents_test

import (
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// gitRepo makes dir a git repository with one commit, so that a fork of
// a session there gets a worktree of its own.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// TestForkAtTheLatestTurn forks a real agent's session at its latest turn
// into a new worktree, against the scripted model. claude advertises
// session/fork: its fork copies the origin's conversation natively
// (session.resumed native_fork), so the fork's first model call holds the
// origin's question and answer as the conversation's own messages, with
// no resume context. qwen does not: its fork is briefed once (history
// injection). Either way the origin goes on without the fork's turn.
func TestForkAtTheLatestTurn(t *testing.T) {
	const first = "Noted: the code word is heron."
	const second = "FINAL: the word was heron."
	const question = "Remember the code word heron."
	for _, tc := range []struct {
		agent, strategy string
	}{
		{"claude", "native_fork"},
		{"qwen", "history_injection"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			a := agentByID(t, tc.agent)
			w := prepareWorld(t, a, modelserver.Start(t, modelserver.Say(first)))
			gitRepo(t, w.cwd)
			w.start()
			t.Cleanup(w.stop)
			sid := w.createSession()
			w.prompt(sid, question, "p1")
			if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
				t.Fatalf("first turn: got %v, want completed", turn["state"])
			}
			code, f := w.do(http.MethodPost, "/session/"+sid+"/fork", map[string]any{})
			if code != http.StatusCreated {
				t.Fatalf("fork: got %d %v", code, f)
			}
			fid := f["id"].(string)
			if f["cwd"] == w.cwd {
				t.Fatalf("fork cwd: got the origin's, want a worktree of its own")
			}
			before := len(w.model.Requests())
			w.model.SetScript(modelserver.Say(second))
			w.prompt(fid, "What was the code word?", "f1")
			if turn := w.waitTurn(fid, "f1"); turn["state"] != "completed" {
				t.Fatalf("the fork's first turn: got %v, want completed: %v", turn["state"], turn)
			}
			if got := agentText(w.transcript(fid), "f1"); !strings.Contains(got, second) {
				t.Errorf("the fork's reply: got %q, want %q", got, second)
			}
			var strategies []any
			for _, e := range w.log(fid) {
				if e.Type == "session.resumed" {
					strategies = append(strategies, e.Data["strategy"])
				}
			}
			if !slices.Equal(strategies, []any{tc.strategy}) {
				t.Errorf("the fork's session.resumed strategies: got %v, want [%s]", strategies, tc.strategy)
			}
			// The fork's model calls: its context, natively or briefed once.
			var calls, briefed, native int
			for _, r := range w.model.Requests()[before:] {
				if len(r.Tools) == 0 || r.API != agentAPI(a) {
					continue
				}
				calls++
				var users, answers []string
				for _, m := range r.Messages {
					switch {
					case strings.Contains(m.Text(), "RESUME CONTEXT FOR CONTINUING TASK"):
						briefed++
					case m.Role == "user" && strings.Contains(m.Text(), question):
						users = append(users, m.Text())
					case m.Role == "assistant" && strings.Contains(m.Text(), first):
						answers = append(answers, m.Text())
					}
				}
				if len(users) == 1 && len(answers) == 1 {
					native++
				}
			}
			switch tc.strategy {
			case "native_fork":
				if calls == 0 || native != calls || briefed != 0 {
					t.Errorf("the fork's model calls: %d, %d holding the origin's turn as its own messages, %d briefed; want all, none briefed",
						calls, native, briefed)
				}
			default:
				if calls == 0 || briefed != 1 {
					t.Errorf("the fork's model calls: %d, %d briefed; want exactly 1 briefed", calls, briefed)
				}
			}
			// The origin goes on without the fork's turn.
			before = len(w.model.Requests())
			w.prompt(sid, "And the origin?", "p2")
			if turn := w.waitTurn(sid, "p2"); turn["state"] != "completed" {
				t.Fatalf("the origin's second turn: got %v, want completed", turn["state"])
			}
			for _, r := range w.model.Requests()[before:] {
				for _, m := range r.Messages {
					if strings.Contains(m.Text(), "What was the code word?") {
						t.Errorf("the origin's model call holds the fork's question: %q", m.Text())
					}
				}
			}
		})
	}
}
