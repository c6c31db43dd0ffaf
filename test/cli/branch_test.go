package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/client"
)

// TestRewindForkHandoff: tether rewind (--dry-run, then for real, then
// --undo), fork and handoff against the real daemon and demo agent: the
// files on disk, what each command prints, and its refusals' codes.
func TestRewindForkHandoff(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sid, cwd := d.createSession(t)
	first := d.prompt(t, sid, "/tool write notes.txt first draft")
	d.waitTurn(t, sid, first)
	second := d.prompt(t, sid, "/tool write notes.txt second draft")
	d.waitTurn(t, sid, second)
	read := func(dir string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	r := d.must(t, "rewind", sid, first, "--dry-run")
	if r.stdout != "modified  notes.txt  \ndry run: 1 files would change; nothing changed\n" || read(cwd) != "second draft" {
		t.Errorf("dry run: got %q, notes.txt %q", r.stdout, read(cwd))
	}
	r = d.must(t, "rewind", sid, first)
	if !strings.Contains(r.stdout, "rewound: 1 files changed, 1 turns marked rewound") || read(cwd) != "first draft" {
		t.Errorf("rewind: got %q, notes.txt %q", r.stdout, read(cwd))
	}
	if tr := d.transcript(t, sid); len(tr.Turns) != 2 || tr.Turns[1].Rewound == nil || !*tr.Turns[1].Rewound {
		t.Errorf("after the rewind: turns %+v, want the second marked rewound", tr.Turns)
	}
	if r = d.must(t, "rewind", "--undo", sid); !strings.HasPrefix(r.stdout, "modified  notes.txt") || read(cwd) != "second draft" {
		t.Errorf("undo: got %q, notes.txt %q", r.stdout, read(cwd))
	}

	forkDir := filepath.Join(d.root, "fork-of-"+sid[:8])
	r = d.must(t, "fork", sid, "--at", first, "--cwd", forkDir, "--json")
	var fork client.Session
	decode(t, r.stdout, &fork)
	if fork.ForkedFrom == nil || fork.ForkedFrom.SessionId != sid || fork.ForkedFrom.PromptId != first || read(forkDir) != "first draft" {
		t.Errorf("fork: got %+v, notes.txt %q", fork.ForkedFrom, read(forkDir))
	}
	r = d.must(t, "handoff", sid, "demo")
	if f := strings.Split(strings.TrimSpace(r.stdout), "\t"); len(f) != 2 || f[1] != cwd {
		t.Errorf("handoff: got %q, want the new session's id and %s", r.stdout, cwd)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown turn", []string{"rewind", sid, "nope"}, 1, "turn_not_found"},
		{"no turn, no undo", []string{"rewind", sid}, 2, "name the TURN"},
		{"a fork into a directory with files", []string{"fork", sid, "--cwd", cwd}, 1, "workspace_target_not_empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := d.tether(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("got %s, want exit %d saying %q", r, tc.code, tc.want)
			}
		})
	}
}
