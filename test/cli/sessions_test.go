package cli_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/client"
)

// uuidLine is a command's output that is one id and a newline.
var uuidLine = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$`)

// wantUUIDLine fails t unless out is one UUID on a line, which it returns.
func wantUUIDLine(t *testing.T, out string) string {
	t.Helper()
	if !uuidLine.MatchString(out) {
		t.Fatalf("got stdout %q, want one id and a newline", out)
	}
	return strings.TrimSpace(out)
}

// decode fails t unless s is JSON that decodes into v.
func decode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("stdout is not the JSON wanted (%v):\n%s", err, s)
	}
}

// sessionIDs are the sessions' ids, in order.
func sessionIDs(list []client.Session) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.Id
	}
	return out
}

// apiSessions is GET /sessions with query q: the ids, newest first.
func (d *daemon) apiSessions(t *testing.T, q string) []string {
	t.Helper()
	var l client.SessionList
	d.get(t, "/sessions?"+q, &l)
	return sessionIDs(l.Sessions)
}

// waitState waits until the session is in state.
func (d *daemon) waitState(t *testing.T, sid string, state client.SessionState) {
	t.Helper()
	waitFor(t, fmt.Sprintf("session %s to be %s", sid, state), func() bool { return d.session(t, sid).State == state })
}

func TestLs(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	var ids []string // oldest first
	for i := range 3 {
		r := d.must(t, "new", "--agent", "demo", "--cwd", d.newCwd(t), "--title", fmt.Sprintf("ls-session-%d", i))
		ids = append(ids, wantUUIDLine(t, r.stdout))
	}
	d.must(t, "close", ids[0])
	d.waitState(t, ids[0], "COMPLETED")
	for _, id := range ids[1:] {
		d.waitState(t, id, "WAITING_FOR_INPUT")
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	if got := d.apiSessions(t, "limit=50"); !slices.Equal(got, newest) {
		t.Fatalf("GET /sessions: got %v, want %v", got, newest)
	}
	state := map[string]string{ids[0]: "completed", ids[1]: "waiting for input", ids[2]: "waiting for input"}

	// table checks a table of sessions: the header, then want's rows.
	table := func(t *testing.T, out string, want []string) {
		t.Helper()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if got := strings.Join(strings.Fields(lines[0]), " "); got != "ID TITLE AGENT STATE LAST ACTIVITY" {
			t.Fatalf("got header %q, want ID TITLE AGENT STATE LAST ACTIVITY", got)
		}
		if len(lines)-1 != len(want) {
			t.Fatalf("got %d rows, want %d:\n%s", len(lines)-1, len(want), out)
		}
		for i, id := range want {
			f := strings.Fields(lines[i+1])
			if len(f) < 6 || f[0] != id || f[1] != fmt.Sprintf("ls-session-%d", slices.Index(ids, id)) || f[2] != "demo" ||
				strings.Join(f[3:len(f)-2], " ") != state[id] || f[len(f)-1] != "ago" {
				t.Errorf("row %d: got %q, want %s, its title, demo, %q, its last activity", i+1, lines[i+1], id, state[id])
			}
		}
	}
	// list checks a JSON array of sessions against want (ids, in order)
	// and against the API.
	list := func(t *testing.T, out string, want []string) {
		t.Helper()
		var got []client.Session
		decode(t, out, &got)
		if !slices.Equal(sessionIDs(got), want) {
			t.Fatalf("got sessions %v, want %v", sessionIDs(got), want)
		}
		for _, s := range got {
			api := d.session(t, s.Id)
			if s.State != api.State || s.AgentProfileId != "demo" || s.Title == nil || *s.Title != *api.Title || s.Cwd != api.Cwd {
				t.Errorf("session %s: got %+v, want the API's %+v", s.Id, s, api)
			}
		}
	}
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, out string)
	}{
		{"table", []string{"ls"}, func(t *testing.T, out string) { table(t, out, newest) }},
		{"json", []string{"ls", "--json"}, func(t *testing.T, out string) { list(t, out, newest) }},
		{"limit", []string{"ls", "--json", "--limit", "2"}, func(t *testing.T, out string) { list(t, out, newest[:2]) }},
		{"limit table", []string{"ls", "-n", "1"}, func(t *testing.T, out string) { table(t, out, newest[:1]) }},
		{"all", []string{"ls", "--all", "--json"}, func(t *testing.T, out string) { list(t, out, newest) }},
		{"state", []string{"ls", "--json", "--state", "completed"}, func(t *testing.T, out string) { list(t, out, ids[:1]) }},
		{"states", []string{"ls", "--state", "waiting_for_input,running"}, func(t *testing.T, out string) { table(t, out, newest[:2]) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := d.tether(t, tc.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("got %s, want exit 0 and no stderr", r)
			}
			tc.check(t, r.stdout)
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	cases := []struct {
		name  string
		args  []string // after new; CWD is replaced by a fresh directory
		inCwd bool     // run tether in that directory
		check func(t *testing.T, out, cwd string)
	}{
		{"prints the id", []string{"--agent", "demo", "--cwd", "CWD"}, false, func(t *testing.T, out, cwd string) {
			s := d.session(t, wantUUIDLine(t, out))
			if s.AgentProfileId != "demo" || s.Cwd != cwd {
				t.Errorf("got session agent %q cwd %q, want demo %q", s.AgentProfileId, s.Cwd, cwd)
			}
		}},
		{"json", []string{"--json", "--cwd", "CWD", "--title", "made by tether"}, false, func(t *testing.T, out, cwd string) {
			var s client.Session
			decode(t, out, &s)
			api := d.session(t, s.Id)
			if s.Title == nil || *s.Title != "made by tether" || api.Title == nil || *api.Title != "made by tether" || api.Cwd != cwd {
				t.Errorf("got printed %+v and stored %+v, want title %q and cwd %q", s, api, "made by tether", cwd)
			}
		}},
		{"default agent and cwd", nil, true, func(t *testing.T, out, cwd string) {
			s := d.session(t, wantUUIDLine(t, out))
			if s.AgentProfileId != "demo" || s.Cwd != cwd {
				t.Errorf("got session agent %q cwd %q, want demo (the first available) and the current directory %q", s.AgentProfileId, s.Cwd, cwd)
			}
		}},
		{"prompt and wait", []string{"--cwd", "CWD", "--wait", "/echo", "hello", "**world**"}, false, func(t *testing.T, out, _ string) {
			id, reply, _ := strings.Cut(out, "\n")
			wantUUIDLine(t, id+"\n")
			tr := d.transcript(t, id)
			if len(tr.Turns) != 1 || tr.Turns[0].State != "completed" {
				t.Fatalf("got turns %+v, want one completed", tr.Turns)
			}
			pid := tr.Turns[0].PromptId
			if got := userTurn(tr, "/echo hello **world**"); got != pid {
				t.Errorf("got the prompt in turn %q, want %q", got, pid)
			}
			if want := agentText(tr, pid); want != "hello **world**" || reply != want+"\n" {
				t.Errorf("got reply %q and stored %q, want both hello **world**", reply, want)
			}
		}},
		{"prompt without wait", []string{"--cwd", "CWD", "/echo", "later"}, false, func(t *testing.T, out, _ string) {
			id := wantUUIDLine(t, out)
			var tr client.Transcript
			waitFor(t, "the initial turn", func() bool { tr = d.transcript(t, id); return len(tr.Turns) == 1 })
			turn := d.waitTurn(t, id, tr.Turns[0].PromptId)
			if turn.State != "completed" || turn.Kind != "initial" || agentText(d.transcript(t, id), turn.PromptId) != "later" {
				t.Errorf("got turn %+v, want an initial turn completed with the reply later", turn)
			}
		}},
		{"worktree", []string{"--worktree", "--cwd", "CWD"}, false, func(t *testing.T, out, cwd string) {
			s := d.session(t, wantUUIDLine(t, out))
			if s.Executor == nil || s.Executor.Worktree == nil || s.Executor.Worktree.Repository != cwd || s.Executor.Worktree.Path == cwd {
				t.Errorf("got executor %+v, want a worktree of the repository %s", s.Executor, cwd)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cwd := d.newCwd(t)
			if tc.name == "worktree" {
				gitRepo(t, cwd)
			}
			args := []string{"new"}
			for _, a := range tc.args {
				if a == "CWD" {
					a = cwd
				}
				args = append(args, a)
			}
			r := run{env: d.env()}
			if tc.inCwd {
				r.dir = cwd
			}
			res := r.tether(t, args...)
			if res.code != 0 {
				t.Fatalf("got %s, want exit 0", res)
			}
			tc.check(t, res.stdout, cwd)
		})
	}
}

func TestExport(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	pid := d.prompt(t, sid, "/echo some **bold** reply")
	d.waitTurn(t, sid, pid)
	md := func(t *testing.T, out string) {
		t.Helper()
		for _, want := range []string{
			"# Session " + sid + "\n",
			"\n## Turn " + pid + " (completed)\n",
			"\n**You:**\n\n/echo some **bold** reply\n",
			"\n**Agent:**\n\nsome **bold** reply\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("got Markdown without %q:\n%s", want, out)
			}
		}
	}
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, out string)
	}{
		{"md by default", []string{"export", sid}, md},
		{"md", []string{"export", "--format", "md", sid}, md},
		{"json", []string{"export", "--format", "json", sid}, func(t *testing.T, out string) {
			var got client.Transcript
			decode(t, out, &got)
			want := d.transcript(t, sid)
			if got.SessionId != sid || len(got.Messages) != 2 || len(got.Messages) != len(want.Messages) {
				t.Fatalf("got %d messages of %s, want the API's %d", len(got.Messages), got.SessionId, len(want.Messages))
			}
			for i, m := range got.Messages {
				w := want.Messages[i]
				if m.Id != w.Id || m.Role != w.Role || m.Text != w.Text {
					t.Errorf("message %d: got %s %q, want %s %q", i, m.Role, m.Text, w.Role, w.Text)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := d.tether(t, tc.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("got %s, want exit 0 and no stderr", r)
			}
			tc.check(t, r.stdout)
		})
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	d.waitState(t, sid, "WAITING_FOR_INPUT")
	cases := []struct {
		name  string
		args  []string
		code  int
		check func(t *testing.T, r result)
	}{
		{"daemon", []string{"status"}, 0, func(t *testing.T, r result) {
			lines := strings.Split(r.stdout, "\n")
			if f := strings.Fields(lines[0]); len(f) < 3 || f[0] != "daemon" || f[1] != d.base || !strings.Contains(lines[0], `"status":"ok"`) {
				t.Errorf("got first line %q, want daemon %s and its health", lines[0], d.base)
			}
			if !slices.ContainsFunc(lines, func(l string) bool {
				f := strings.Fields(l)
				return len(f) > 1 && f[0] == "demo" && f[len(f)-1] == "yes"
			}) {
				t.Errorf("got %q, want the demo agent available", r.stdout)
			}
		}},
		{"daemon json", []string{"status", "--json"}, 0, func(t *testing.T, r result) {
			var s struct {
				Addr   string
				Health struct{ Status string }
				Agents []client.AgentProfile
			}
			decode(t, r.stdout, &s)
			if s.Addr != d.base || s.Health.Status != "ok" || !slices.ContainsFunc(s.Agents, func(a client.AgentProfile) bool { return a.Id == "demo" && a.Available }) {
				t.Errorf("got %+v, want %s, ok and the demo agent available", s, d.base)
			}
		}},
		{"session", []string{"status", sid}, 0, func(t *testing.T, r result) {
			got := map[string]string{}
			for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				f := strings.Fields(l)
				got[strings.Join(f[:len(f)-1], " ")] = f[len(f)-1]
			}
			want := map[string]string{"agent": "demo", "runtime": "detached", "executor": "ready", "agent running": "true", "resumable": "true"}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("got %s %q, want %q:\n%s", k, got[k], v, r.stdout)
				}
			}
		}},
		{"session json", []string{"status", "--json", sid}, 0, func(t *testing.T, r result) {
			var got client.SessionStatus
			decode(t, r.stdout, &got)
			var want client.SessionStatus
			d.get(t, "/session/"+sid+"/status", &want)
			if got.AgentProfileId != "demo" || got.Runtime != want.Runtime || got.ExecutorStatus != want.ExecutorStatus || got.IsAgentRunning != want.IsAgentRunning {
				t.Errorf("got %+v, want the API's %+v", got, want)
			}
		}},
		{"unknown session", []string{"status", "no-such-session"}, 1, func(t *testing.T, r result) {
			if r.stdout != "" || !strings.Contains(r.stderr, "session_not_found") {
				t.Errorf("got %s, want the problem code session_not_found on stderr", r)
			}
		}},
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

// TestRenameArchiveSearch: a session is titled by its first prompt, found
// by what was said (ls -q), renamed and archived (then only in ls
// --archived), and brought back; the API agrees at each step.
func TestRenameArchiveSearch(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, _ := d.createSession(t)
	d.waitTurn(t, sid, d.prompt(t, sid, "/echo the persimmon pipeline is green"))
	other, _ := d.createSession(t)
	lsIDs := func(args ...string) []string {
		t.Helper()
		r := d.tether(t, append([]string{"ls", "--json"}, args...)...)
		var list []client.Session
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil {
			t.Fatalf("tether ls %v: got %s, want sessions as JSON", args, r)
		}
		return sessionIDs(list)
	}
	session := func() client.Session {
		t.Helper()
		var s client.Session
		d.get(t, "/session/"+sid, &s)
		return s
	}
	if s := session(); s.Title == nil || *s.Title != "/echo the persimmon pipeline is green" || s.TitleSource == nil || *s.TitleSource != "prompt" {
		t.Errorf("got title %v from %v, want the first prompt's", s.Title, s.TitleSource)
	}
	steps := []struct {
		name         string
		args         []string
		list, want   []string // tether ls's arguments, and the ids it must list
		title        string
		titleSource  string
		wantArchived bool
	}{
		{"search what was said", nil, []string{"-q", "persimmon"}, []string{sid}, "/echo the persimmon pipeline is green", "prompt", false},
		{"rename", []string{"rename", sid, "Persimmon", "work"}, []string{"-q", "persimmon"}, []string{sid}, "Persimmon work", "user", false},
		{"archive", []string{"archive", sid}, nil, []string{other}, "Persimmon work", "user", true},
		{"archived only with --archived", nil, []string{"--archived"}, []string{sid}, "Persimmon work", "user", true},
		{"bring back", []string{"archive", "--undo", sid}, nil, []string{other, sid}, "Persimmon work", "user", false},
	}
	for _, st := range steps {
		if st.args != nil {
			if r := d.tether(t, st.args...); r.code != 0 || r.stdout != "" {
				t.Fatalf("%s: got %s, want exit 0 and no output", st.name, r)
			}
		}
		if got := lsIDs(st.list...); !slices.Equal(got, st.want) {
			t.Errorf("%s: tether ls %v: got %v, want %v", st.name, st.list, got, st.want)
		}
		s := session()
		if s.Title == nil || *s.Title != st.title || s.TitleSource == nil || string(*s.TitleSource) != st.titleSource || (s.Archived != nil && *s.Archived) != st.wantArchived {
			t.Errorf("%s: got title %v from %v archived %v, want %q from %s archived %v", st.name, deref(s.Title), s.TitleSource, s.Archived, st.title, st.titleSource, st.wantArchived)
		}
	}
	if r := d.tether(t, "rename", sid); r.code != 2 {
		t.Errorf("rename without a title: got %s, want exit 2", r)
	}
}

// deref is *p, "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
