package crash_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPermissionAskedDuringCleanStopStaysPending: the agent of a session
// on the detached executor host asks permission while tetherd stops
// cleanly (SIGTERM), after the session's actor has stopped taking
// anything and before the daemon's link to the host closes: the stop is
// slow, another session's standalone agent takes its whole stop grace
// (lingeringEntry). The daemon is only stopping, so the agent keeps
// waiting: the next daemon shows the request pending, answering it lets
// the turn complete, and the log holds one permission.requested and one
// permission.resolved. Before, the stopping daemon's handler failed to
// post the request to the closed mailbox and answered "cancelled", which
// went to the host: the agent heard it and ended its turn cancelled, and
// the next daemon found nothing pending.
func TestPermissionAskedDuringCleanStopStaysPending(t *testing.T) {
	w, slowCwd := slowStopWorld(t)
	sid, cwd := w.createSessionOn("demo", "detached")
	w.prompt(sid, "/permission when go", "ask")
	w.waitFor("the agent to wait for its cue", func() bool {
		return strings.Contains(w.agentReplies(sid)["ask"].text, "waiting for go")
	})

	d := w.takeDaemon()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The daemon stops the lingering agent once the sessions' actors are
	// stopping: its demo agent ends on stdin's end, its shell lingers for
	// the stop grace, and the daemon's link to the host stays up until
	// then. The detached agent asks now.
	w.waitFor("the stopping daemon to stop the lingering agent", func() bool { return len(w.demoAgentsIn(slowCwd)) == 0 })
	if len(w.agentsIn(slowCwd)) == 0 {
		t.Fatal("the lingering agent's shell is gone already; the test needs the daemon still stopping")
	}
	if err := os.WriteFile(filepath.Join(cwd, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d.term(t)

	w.start()
	var pending []map[string]any
	w.waitFor("the request to be pending after the restart", func() bool {
		pending = list(w.transcript(sid), "pendingPermissions")
		return len(pending) > 0 || w.turnEnded(sid, "ask")
	})
	if len(pending) != 1 {
		t.Fatalf("after the restart: got pending %v (turn %v), want the request asked during the stop", pending, w.turn(sid, "ask"))
	}
	req, _ := pending[0]["id"].(string)
	if code, m := w.do(http.MethodPost, "/session/"+sid+"/permission/"+req, map[string]any{"optionId": "allow_once"}); code != http.StatusOK {
		t.Fatalf("answer the permission after the restart: got %d %v, want 200", code, m)
	}
	if got := w.waitTurn(sid, "ask"); got["state"] != "completed" {
		t.Fatalf("turn ask: got %v, want completed", got)
	}
	if got, want := w.agentReplies(sid)["ask"].text, "waiting for go\nPermission outcome: selected allow_once"; !strings.HasPrefix(got, want) {
		t.Errorf("turn ask: got agent text %q, want it to start with %q", got, want)
	}
	counts := map[string]int{}
	for _, f := range w.replay(sid) {
		if f.Event == "permission.requested" || f.Event == "permission.resolved" {
			counts[f.Event]++
		}
	}
	for _, ev := range []string{"permission.requested", "permission.resolved"} {
		if counts[ev] != 1 {
			t.Errorf("log: got %d %s, want 1", counts[ev], ev)
		}
	}
	checkNoErrorLogged(t, "tetherd after the restart", w.daemonLog())
}
