package cli_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/client"
)

// gitRepo makes dir a git repository with one commit.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// TestPromptContinue runs its cases in order on one session: each prompt
// queues behind nothing, and the crash leaves the turn continue picks up.
func TestPromptContinue(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	var crashed string // the turn /crash interrupted
	cases := []struct {
		name  string
		args  []string
		stdin string
		code  int
		check func(t *testing.T, r result)
	}{
		{"prints the prompt id", []string{"prompt", sid, "/echo", "first"}, "", 0, func(t *testing.T, r result) {
			pid := wantUUIDLine(t, r.stdout)
			if turn := d.waitTurn(t, sid, pid); turn.State != "completed" {
				t.Fatalf("got turn %s, want completed", turn.State)
			}
			tr := d.transcript(t, sid)
			if userTurn(tr, "/echo first") != pid || agentText(tr, pid) != "first" {
				t.Errorf("got transcript %+v, want the prompt and the reply first in turn %s", tr.Messages, pid)
			}
		}},
		{"prompt id", []string{"prompt", "--prompt-id", "cli-fixed-id", sid, "/echo", "fixed"}, "", 0, func(t *testing.T, r result) {
			if r.stdout != "cli-fixed-id\n" {
				t.Fatalf("got stdout %q, want cli-fixed-id", r.stdout)
			}
			if turn := d.waitTurn(t, sid, "cli-fixed-id"); turn.State != "completed" {
				t.Fatalf("got turn %s, want completed", turn.State)
			}
		}},
		{"stdin", []string{"prompt", sid, "-"}, "/echo from stdin\n", 0, func(t *testing.T, r result) {
			pid := wantUUIDLine(t, r.stdout)
			d.waitTurn(t, sid, pid)
			tr := d.transcript(t, sid)
			if got := strings.TrimSpace(agentText(tr, pid)); got != "from stdin" {
				t.Errorf("got reply %q, want from stdin", got)
			}
		}},
		{"json", []string{"prompt", "--json", sid, "/echo", "as json"}, "", 0, func(t *testing.T, r result) {
			var acc struct{ PromptId, Cursor string }
			decode(t, r.stdout, &acc)
			wantUUIDLine(t, acc.PromptId+"\n")
			if acc.Cursor == "" {
				t.Errorf("got no cursor in %s", r.stdout)
			}
			if turn := d.waitTurn(t, sid, acc.PromptId); turn.State != "completed" {
				t.Fatalf("got turn %s, want completed", turn.State)
			}
		}},
		{"wait keeps the agent's messages apart", []string{"prompt", "--wait", sid, "/two-messages"}, "", 0, func(t *testing.T, r result) {
			// Two ACP messages (a tool call between them): each its own
			// paragraph, as the transcript keeps them two messages.
			if want := "Let me look that up.\n\nFINAL: done.\n"; r.stdout != want {
				t.Errorf("got stdout %q, want %q", r.stdout, want)
			}
		}},
		{"wait streams the reply", []string{"prompt", "--wait", sid, "/stream", "25"}, "", 0, func(t *testing.T, r result) {
			tr := d.transcript(t, sid)
			pid := userTurn(tr, "/stream 25")
			var want strings.Builder
			for i := 1; i <= 25; i++ {
				fmt.Fprintf(&want, "chunk %d\n", i)
			}
			if got := agentText(tr, pid); got != want.String() {
				t.Fatalf("stored reply: got %q, want chunk 1..25", got)
			}
			if r.stdout != want.String()+"\n" {
				t.Errorf("got stdout %q, want the stored reply %q and a newline", r.stdout, want.String())
			}
			if turn := d.turn(t, sid, pid); turn.State != "completed" {
				t.Errorf("got turn %s, want completed", turn.State)
			}
		}},
		{"wait json", []string{"prompt", "--wait", "--json", sid, "/echo", "lines"}, "", 0, func(t *testing.T, r result) {
			// Lines without an id are control frames (see the next case).
			var events []string
			for _, l := range strings.SplitAfter(r.stdout, "\n") {
				if strings.HasPrefix(l, `{"id":`) {
					events = append(events, l)
				}
			}
			lines := logLines(t, strings.Join(events, ""))
			wantIncreasing(t, lines)
			last := lines[len(lines)-1]
			pid := userTurn(d.transcript(t, sid), "/echo lines")
			if last.Type != "turn.completed" || last.promptID() != pid {
				t.Errorf("got last line %s %s, want turn.completed of %s", last.Type, last.Data, pid)
			}
		}},
		{"wait on a crash exits 4", []string{"prompt", "--wait", sid, "/crash"}, "", 4, func(t *testing.T, r result) {
			crashed = userTurn(d.transcript(t, sid), "/crash")
			turn := d.turn(t, sid, crashed)
			if turn.State != "interrupted" || turn.InterruptReason == nil || *turn.InterruptReason != "agent_exited" {
				t.Fatalf("got turn %s (%v), want interrupted (agent_exited)", turn.State, turn.InterruptReason)
			}
			if !strings.Contains(r.stderr, "interrupted") || !strings.Contains(r.stdout, "crashing") {
				t.Errorf("got %s, want the partial reply on stdout and interrupted on stderr", r)
			}
		}},
		{"continue wait", []string{"continue", "--wait", sid}, "", 0, func(t *testing.T, r result) {
			tr := d.transcript(t, sid)
			last := tr.Turns[len(tr.Turns)-1]
			if last.ContinuesPromptId == nil || *last.ContinuesPromptId != crashed || last.State != "completed" {
				t.Fatalf("got last turn %+v, want a completed continuation of %s", last, crashed)
			}
			if want := agentText(tr, last.PromptId); want == "" || r.stdout != want+"\n" {
				t.Errorf("got stdout %q, want the continuation's stored reply %q", r.stdout, want)
			}
		}},
		{"continue with nothing to continue", []string{"continue", sid}, "", 1, func(t *testing.T, r result) {
			if r.stdout != "" || !strings.HasPrefix(r.stderr, "tether: ") {
				t.Errorf("got %s, want the daemon's refusal on stderr only", r)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run{env: d.env(), stdin: tc.stdin}.tether(t, tc.args...)
			if r.code != tc.code {
				t.Fatalf("got %s, want exit %d", r, tc.code)
			}
			tc.check(t, r)
		})
	}
}

// TestCancel cancels a running /hang turn with a prompt queued behind it:
// plain cancel drops the queued one too, --keep-queue lets it run next.
func TestCancel(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	cases := []struct {
		name       string
		args       []string
		wantQueued string // the queued turn's end
	}{
		{"drops the queue", nil, "cancelled"},
		{"keep the queue", []string{"--keep-queue"}, "completed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sid, _ := d.createSession(t)
			pid := wantUUIDLine(t, d.must(t, "prompt", sid, "/hang").stdout)
			// The agent has the prompt once its first chunk is stored.
			waitFor(t, "the /hang turn to run", func() bool {
				return d.turn(t, sid, pid).State == "running" && agentText(d.transcript(t, sid), pid) != ""
			})
			queued := wantUUIDLine(t, d.must(t, "prompt", sid, "/echo", "queued").stdout)
			if r := d.must(t, append(append([]string{"cancel"}, tc.args...), sid)...); r.stdout != "" {
				t.Errorf("cancel: got stdout %q, want none", r.stdout)
			}
			if turn := d.waitTurn(t, sid, pid); turn.State != "cancelled" {
				t.Fatalf("got turn %s, want cancelled", turn.State)
			}
			if turn := d.waitTurn(t, sid, queued); string(turn.State) != tc.wantQueued {
				t.Errorf("the queued turn: got %s, want %s", turn.State, tc.wantQueued)
			}
			var cancelled []string
			for _, l := range logLines(t, d.must(t, "logs", "--types", "turn.cancelled", sid).stdout) {
				cancelled = append(cancelled, l.promptID())
			}
			want := []string{pid}
			if tc.wantQueued == "cancelled" {
				want = []string{queued, pid} // the queue is dropped first, then the agent answers the cancel
			}
			if !slices.Equal(cancelled, want) {
				t.Errorf("tether logs --types turn.cancelled: got turns %v, want %v", cancelled, want)
			}
		})
	}
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	other, _ := d.createSession(t) // a live session with nothing pending
	pid := d.prompt(t, sid, "/permission")
	var req string
	waitFor(t, "the permission request", func() bool {
		tr := d.transcript(t, sid)
		if len(tr.PendingPermissions) == 1 {
			req = tr.PendingPermissions[0].Id
		}
		return req != ""
	})
	cases := []struct {
		name  string
		args  []string
		code  int
		check func(t *testing.T, r result)
	}{
		{"table", []string{"permissions"}, 0, func(t *testing.T, r result) {
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if got := strings.Join(strings.Fields(lines[0]), " "); got != "SESSION REQUEST TITLE OPTIONS ASKED" {
				t.Fatalf("got header %q, want SESSION REQUEST TITLE OPTIONS ASKED", got)
			}
			if len(lines) != 2 {
				t.Fatalf("got %d rows, want 1:\n%s", len(lines)-1, r.stdout)
			}
			f := strings.Fields(lines[1])
			if len(f) < 6 || f[0] != sid || f[1] != req || !slices.Contains(f, "allow_once,allow_always,reject_once") {
				t.Errorf("got row %q, want %s %s … allow_once,allow_always,reject_once", lines[1], sid, req)
			}
		}},
		{"session table", []string{"permissions", sid}, 0, func(t *testing.T, r result) {
			if !strings.Contains(r.stdout, req) {
				t.Errorf("got %q, want request %s", r.stdout, req)
			}
		}},
		{"other session", []string{"permissions", "--json", other}, 0, func(t *testing.T, r result) {
			if strings.TrimSpace(r.stdout) != "[]" {
				t.Errorf("got %q, want []", r.stdout)
			}
		}},
		{"json", []string{"permissions", "--json"}, 0, func(t *testing.T, r result) {
			var got []client.PermissionRequest
			decode(t, r.stdout, &got)
			if len(got) != 1 || got[0].Id != req || got[0].SessionId != sid || got[0].PromptId == nil || *got[0].PromptId != pid || len(got[0].Options) != 3 {
				t.Errorf("got %+v, want request %s of turn %s with 3 options", got, req, pid)
			}
		}},
		{"answer with an option it does not offer", []string{"permissions", "answer", sid, req, "allow_never"}, 1, func(t *testing.T, r result) {
			if len(d.transcript(t, sid).PendingPermissions) != 1 {
				t.Errorf("the request was answered by a refused answer")
			}
		}},
		{"answer", []string{"permissions", "answer", sid, req, "allow_once"}, 0, func(t *testing.T, r result) {
			if turn := d.waitTurn(t, sid, pid); turn.State != "completed" {
				t.Fatalf("got turn %s, want completed", turn.State)
			}
			tr := d.transcript(t, sid)
			if got := agentText(tr, pid); !strings.Contains(got, "selected allow_once") {
				t.Errorf("got reply %q, want the outcome selected allow_once", got)
			}
			if len(tr.PendingPermissions) != 0 {
				t.Errorf("got pending %+v, want none", tr.PendingPermissions)
			}
			var resolved []string
			for _, f := range d.replay(t, sid) {
				var data struct{ RequestId, OptionId string }
				if f.Event == "permission.resolved" && json.Unmarshal([]byte(f.Data), &data) == nil && data.RequestId == req {
					resolved = append(resolved, data.OptionId)
				}
			}
			if !slices.Equal(resolved, []string{"allow_once"}) {
				t.Errorf("got request %s resolved %v, want once with allow_once", req, resolved)
			}
		}},
		{"none left", []string{"permissions", "--json"}, 0, func(t *testing.T, r result) {
			if strings.TrimSpace(r.stdout) != "[]" {
				t.Errorf("got %q, want []", r.stdout)
			}
		}},
		{"answer again", []string{"permissions", "answer", sid, req, "allow_once"}, 1, func(t *testing.T, r result) {}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := d.tether(t, tc.args...)
			if r.code != tc.code {
				t.Fatalf("got %s, want exit %d", r, tc.code)
			}
			tc.check(t, r)
		})
	}
}
