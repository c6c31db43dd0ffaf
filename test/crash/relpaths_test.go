package crash_test

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tether/tether/internal/testbin"
)

// TestRelativePathFlags: path flags given relative to the directory
// tetherd starts in name the same files for the daemon's whole life,
// whichever directory its children run in. With a relative --data-dir
// (serve on each local runtime, and a remote `tetherd host` whose every
// path flag is relative) a turn that changes a file of a git repository
// gets its checkpoint, and the diff against the turn shows the change.
func TestRelativePathFlags(t *testing.T) {
	cases := []struct {
		name string
		// executor is the session's; remote runs a `tetherd host` named so.
		executor string
		remote   bool
	}{
		{name: "serve, standalone", executor: "standalone"},
		{name: "serve, detached", executor: "detached"},
		{name: "host --listen", executor: "far", remote: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			w.relative = true
			if tc.remote {
				far := w.newRemoteHost(tc.executor, testbin.FreeAddr(t), nil)
				far.relative = true
				far.start()
				w.setHosts(far.pinned())
				w.start()
				w.waitHost(tc.executor, "connected", hostState("connected"))
			} else {
				w.start("--executor", tc.executor)
			}
			repo := newRepo(t)
			code, s := w.do(http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": repo, "executor": tc.executor})
			if code != http.StatusCreated {
				t.Fatalf("create session: got %d %v, want 201", code, s)
			}
			sid := s["id"].(string)

			w.prompt(sid, "/tool write README.md changed by the turn", "p1")
			if got := w.waitTurn(sid, "p1")["state"]; got != "completed" {
				t.Fatalf("turn p1: got state %v, want completed", got)
			}
			if b, _ := os.ReadFile(filepath.Join(repo, "README.md")); string(b) != "changed by the turn" {
				t.Fatalf("README.md after the turn: got %q, want the agent's write", b)
			}
			code, d := w.do(http.MethodGet, "/session/"+sid+"/workspace/git/diff?turn=p1", nil)
			if code != http.StatusOK {
				t.Fatalf("diff against turn p1's checkpoint: got %d %v, want 200", code, d)
			}
			if got := diffPaths(d); !slices.Equal(got, []string{"README.md"}) {
				t.Errorf("diff against turn p1: got files %v, want README.md", got)
			}
		})
	}
}
