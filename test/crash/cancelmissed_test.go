package crash_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestCancelAnAgentMissed: an agent that misses a session/cancel (its
// SDK ran the notification before the prompt it follows, or it ignores
// it) on the standalone and the detached runtime.
//   - It misses one: the daemon asks again, and the turn ends cancelled
//     by the agent itself, its agent never stopped. Before, the turn hung
//     until the cancel grace (10 s) and the agent was stopped.
//   - It misses every one: after the grace the agent is stopped and the
//     turn ends cancelled; a prompt sent after the cancel runs on a fresh
//     agent and completes. Before, it was handed to the agent being
//     stopped and ended interrupted (agent_exited).
func TestCancelAnAgentMissed(t *testing.T) {
	t.Parallel() // it mostly waits (a grace, a cut): beside the others
	cases := []struct {
		name      string
		prompt    string
		wantAgent string // the executor statuses from the cancel on
	}{
		{"one missed cancel", "/deaf 1", "none"},
		{"every cancel missed", "/deaf", "stopped, then a fresh agent"},
	}
	for _, rt := range allRuntimes()[:2] {
		for _, tc := range cases {
			t.Run(rt.name+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t, profile{id: "demo"})
				executor, _ := rt.start(t, w)
				sid := w.createSessionIn("demo", executor, t.TempDir())
				w.prompt(sid, tc.prompt, "deaf")
				w.waitFor("the agent to stop listening", func() bool {
					return strings.Contains(w.agentText(sid)["deaf"], "not listening")
				})
				from := w.lastSeq(sid)
				if code, m := w.do(http.MethodPost, "/session/"+sid+"/cancel", nil); code != http.StatusOK || m["cancelled"] != true {
					t.Fatalf("cancel: got %d %v, want 200 cancelled", code, m)
				}
				w.prompt(sid, "/echo after the cancel", "after")
				if got := w.waitTurn(sid, "deaf"); got["state"] != "cancelled" || got["cancelRequested"] != true {
					t.Fatalf("turn deaf: got %v, want cancelled", got)
				}
				if got := w.waitTurn(sid, "after"); got["state"] != "completed" {
					t.Fatalf("turn after: got %v, want completed on the agent that heard the cancel or a fresh one", got)
				}
				if said := w.agentText(sid)["after"]; said != "after the cancel" {
					t.Errorf("turn after: the agent said %q, want %q", said, "after the cancel")
				}
				statuses := w.executorStatuses(sid, from+1)
				switch tc.wantAgent {
				case "none":
					if len(statuses) != 0 {
						t.Errorf("got executor statuses %v after the cancel, want none: the agent heard the cancel asked again", statuses)
					}
				default:
					if len(statuses) == 0 || statuses[0][0] != "stopped" || statuses[len(statuses)-1][0] != "ready" {
						t.Errorf("got executor statuses %v after the cancel, want the agent stopped, then a fresh one ready", statuses)
					}
				}
			})
		}
	}
}
