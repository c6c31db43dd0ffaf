package realagents_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/modelserver"
)

// waitAcked waits until the detached host holds nothing of session sid
// that the daemon has not acknowledged (GET /executors).
func (w *world) waitAcked(sid string) {
	w.t.Helper()
	w.waitFor("every record of the session acknowledged", func() bool {
		code, m := w.do("GET", "/executors", nil)
		if code != http.StatusOK {
			return false
		}
		for _, h := range list(m, "hosts") {
			for _, s := range list(h, "sessions") {
				if s["sessionId"] == sid {
					return s["outboxRecords"] == float64(0)
				}
			}
		}
		return false
	})
}

// idleOnDetached is a world whose daemon runs a's agent on its detached
// executor host, with a session whose first turn ("First answer.") is
// done and acknowledged to the host: the session rests, idle.
func idleOnDetached(t *testing.T, a agent) (*world, string) {
	t.Helper()
	return idleOn(t, a, detached)
}

// idleOn is idleOnDetached on the executor host of runtime rt (detached
// or remote).
func idleOn(t *testing.T, a agent, rt string, extra ...string) (*world, string) {
	t.Helper()
	w := newWorldOn(t, a, rt, modelserver.Say("First answer."), extra...)
	sid := w.createSession()
	w.prompt(sid, "Answer once.", "p1")
	if turn := w.waitTurn(sid, "p1"); turn["state"] != "completed" {
		t.Fatalf("first turn: got %v, want completed", turn)
	}
	w.waitAcked(sid)
	return w, sid
}

// TestDetachedCleanRestartSkipsNothing (issue 28, item 3): a real agent's
// session on the detached executor host, idle after a turn (claude and
// qwen end a turn with usage_update notifications, which change nothing
// in the transcript), survives a clean restart of tetherd (SIGTERM): the
// restarted daemon logs no error, and the next turn is recorded once.
// Before, tetherd acknowledged those records to the host without
// committing their offsets, and the restarted daemon logged "executor host
// skipped records" at the next turn's first record. It did so too (1 run
// in 3 or 4 with qwen) for a record that reached the stopping daemon
// after the session's actor was gone, as qwen's last one after its turn
// can (test/crash TestSlowCleanStopLeavesUntakenRecords).
func TestDetachedCleanRestartSkipsNothing(t *testing.T) {
	forEachAgentOn(t, []string{detached, remote}, func(t *testing.T, a agent, rt string) {
		w, sid := idleOn(t, a, rt)
		w.stop()
		restartedAt := len(w.logs.String())
		w.model.SetScript(modelserver.Say("Second answer."))
		w.start()
		w.prompt(sid, "Answer again.", "p2")
		if turn := w.waitTurn(sid, "p2"); turn["state"] != "completed" {
			t.Fatalf("turn after the restart: got %v, want completed", turn)
		}
		w.waitAcked(sid)
		for _, l := range strings.Split(w.logs.String()[restartedAt:], "\n") {
			if strings.Contains(l, "level=ERROR") {
				t.Errorf("tetherd after a clean restart logged an error: %s", l)
			}
		}
		tr := w.transcript(sid)
		for pid, want := range map[string]string{"p1": "First answer.", "p2": "Second answer."} {
			if got := agentText(tr, pid); got != want {
				t.Errorf("turn %s: got agent text %q, want %q once", pid, got, want)
			}
		}
	})
}

// descendants lists pid's live descendants (/proc's children lists).
func descendants(pid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
			out = append(out, descendants(c)...)
		}
	}
	return out
}

// reboot simulates a power cut: tetherd, its detached executor host and
// every process under the host (the agents and theirs) die at once.
func (w *world) reboot() {
	w.t.Helper()
	w.kill9()
	pid := host.Running(filepath.Join(w.dir, "host"))
	if pid == 0 {
		w.t.Fatal("no detached executor host to take down")
	}
	all := append([]int{pid}, descendants(pid)...)
	for _, pid := range all {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	w.waitFor("the host and its agents to be gone", func() bool {
		return !slices.ContainsFunc(all, running)
	})
}

// TestDetachedRebootRestoresEagerly (issue 28, item 3): the machine
// reboots while a real agent on the detached executor host is mid-reply:
// tetherd, the host and the agent die at once. tetherd started again with
// --resume-on-start eager starts a new host and restores the agent at
// once (session.resumed, without a prompt); the cut turn is interrupted
// once, with executor_lost and a message saying that the host stopped
// under it, and continues. tetherd logs no error. Before, the session
// stayed stopped, and tetherd logged "executor host skipped records".
func TestDetachedRebootRestoresEagerly(t *testing.T) {
	forEachAgent(t, func(t *testing.T, a agent) {
		gate := modelserver.NewGate()
		t.Cleanup(gate.Release)
		w, sid := idleOnDetached(t, a)
		w.model.SetScript(modelserver.Stall("A second answer that a reboot cuts short.", 3, gate))
		w.prompt(sid, "Answer again, slowly.", "p2")
		waitStalled(t, gate)
		w.reboot()
		gate.Release()
		w.model.SetScript(modelserver.Say("Picked up again."))

		restartedAt := len(w.logs.String())
		w.extra = append(w.extra, "--resume-on-start", "eager")
		w.start()
		// The restore is done once the log holds it: the daemon attaches
		// to the new host first, which still lists the session with its
		// agent ended (the executor stays reconnecting, never ready, until
		// the host's exit record says the agent was lost), and the
		// restore follows.
		w.waitFor("the agent to be restored without a prompt", func() bool {
			_, st := w.do("GET", "/session/"+sid+"/status", nil)
			return st["executorStatus"] == "ready" && st["isAgentRunning"] == true &&
				slices.ContainsFunc(w.log(sid), func(e event) bool { return e.Type == "session.resumed" })
		})
		var resumed, interrupted []any
		for _, e := range w.log(sid) {
			switch e.Type {
			case "session.resumed":
				resumed = append(resumed, e.Data["strategy"])
			case "turn.interrupted":
				interrupted = append(interrupted, e.Data["promptId"], e.Data["reason"])
			}
		}
		if len(resumed) != 1 {
			t.Errorf("got session.resumed strategies %v, want one restore after the reboot", resumed)
		}
		if len(interrupted) != 2 || interrupted[0] != "p2" || interrupted[1] != "executor_lost" {
			t.Errorf("got turn.interrupted %v, want p2 once, executor_lost", interrupted)
		}
		var system []string
		for _, m := range list(w.transcript(sid), "messages") {
			if m["role"] == "system" && m["promptId"] == "p2" {
				system = append(system, m["text"].(string))
			}
		}
		if len(system) != 1 || !strings.Contains(system[0], `executor host "local" stopped while the agent ran`) {
			t.Errorf("system messages of p2: got %q, want one saying the executor host stopped under the agent", system)
		}
		w.continueTurn(sid, "p3")
		for _, l := range strings.Split(w.logs.String()[restartedAt:], "\n") {
			if strings.Contains(l, "level=ERROR") {
				t.Errorf("tetherd after the reboot logged an error: %s", l)
			}
		}
	})
}
