package crash_test

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// Host loss (issue 13): an executor host that dies takes the interruption
// path for its own sessions only.

// detachedHostPID is the pid of the world's detached host (the daemon's
// own, in <data-dir>/host), failing if none runs.
func (w *world) detachedHostPID() int {
	w.t.Helper()
	ps := w.hostProcesses()
	if len(ps) != 1 {
		w.t.Fatalf("got detached hosts %v, want one", ps)
	}
	return ps[0].pid
}

// checkLostTurn checks that turn pid ended interrupted because its host
// was lost, with one turn.interrupted saying so.
func (w *world) checkLostTurn(sid, pid string) {
	w.t.Helper()
	if turn := w.waitTurn(sid, pid); turn["state"] != "interrupted" || turn["interruptReason"] != "executor_lost" {
		w.t.Errorf("turn %s: got state %v reason %v (error %v), want interrupted, executor_lost",
			pid, turn["state"], turn["interruptReason"], turn["error"])
	}
	var reasons []any
	for _, f := range w.replay(sid) {
		if p := f.JSON(w.t); f.Event == "turn.interrupted" && p["promptId"] == pid {
			reasons = append(reasons, p["reason"])
		}
	}
	if len(reasons) != 1 || reasons[0] != "executor_lost" {
		w.t.Errorf("turn.interrupted of %s: got reasons %v, want one executor_lost", pid, reasons)
	}
}

// TestHostLoss runs a session on the detached host and one on a remote
// host, both mid-turn, and kills the detached host with SIGKILL. The
// daemon starts a new detached host, which reports the session it found
// without its agent as lost: that session's turn is interrupted
// (executor_lost), and continue starts a new agent there and completes;
// the remote session's turn never notices. Then the remote host is killed
// mid-turn and stays down past --host-lost-after: its session's turn is
// interrupted with executor_lost too, and the host shows lost. In between,
// the daemon is killed while the new local agent streams: its turn goes on.
func TestHostLoss(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	w := hostedWorld(t)
	far := w.newRemoteHost("far", freeAddr(t), nil)
	far.start()
	w.setHosts(far.pinned())
	w.start("--host-lost-after", "3s")
	local, _ := w.createSessionOn("demo", "detached")
	remote, _ := w.createSessionOn("demo", "far")
	fl, fr := w.follow(local), w.follow(remote)
	// The turns the host kills must still be running then: /hang never
	// ends by itself (a 2000-chunk stream could finish first on a fast
	// machine).
	w.prompt(local, "/hang", "local-1")
	w.prompt(remote, streamPrompt, "remote-1")
	w.waitSeen(fl, "the local turn's first chunk", isChunkOf(t, "local-1"))
	w.waitSeen(fr, "the remote turn's first chunk", isChunkOf(t, "remote-1"))

	firstHost := w.detachedHostPID()
	firstExec := w.status(local)["agentExecutionId"]
	if err := syscall.Kill(firstHost, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.checkLostTurn(local, "local-1")
	if w.detachedHostPID() == firstHost {
		t.Fatalf("the detached host %d still runs after SIGKILL", firstHost)
	}

	// The remote session went on as if nothing happened.
	if got := w.waitTurn(remote, "remote-1"); got["state"] != "completed" {
		t.Fatalf("remote turn: got %v, want completed", got)
	}
	checkNoInterruption(t, w.replay(remote))
	checkStreamText(t, "remote-1", w.agentText(remote)["remote-1"])

	// Continue: a new agent on the new detached host takes the turn up.
	code, m := w.do("POST", "/session/"+local+"/continue", map[string]any{"promptId": "local-continue"})
	if code != http.StatusAccepted {
		t.Fatalf("continue: got %d %v, want 202", code, m)
	}
	if got := w.waitTurn(local, "local-continue"); got["state"] != "completed" {
		t.Fatalf("continuation: got %v, want completed", got)
	}
	st := w.status(local)
	if st["runtime"] != "detached" || st["executorStatus"] != "ready" || st["agentExecutionId"] == firstExec {
		t.Errorf("after continue: got runtime %v, executor %v, execution %v, want a new ready execution on the detached host (not %v)",
			st["runtime"], st["executorStatus"], st["agentExecutionId"], firstExec)
	}
	if !strings.HasPrefix(w.agentText(local)["local-continue"], continuationAnswer) {
		t.Errorf("continuation: agent said %q, want it to have been asked to continue", w.agentText(local)["local-continue"])
	}

	// The new agent numbers its outbox from 1 again: a daemon killed while
	// it streams still resumes exactly after the last record it committed.
	w.prompt(local, streamPrompt, "local-stream")
	w.waitSeen(fl, "the new agent's first chunk", isChunkOf(t, "local-stream"))
	w.kill9()
	w.start("--host-lost-after", "3s")
	if got := w.waitTurn(local, "local-stream"); got["state"] != "completed" {
		t.Fatalf("the new agent's turn across a daemon restart: got %v, want completed", got)
	}
	checkStreamText(t, "local-stream", w.agentText(local)["local-stream"])

	// The remote host dies mid-turn and stays down past --host-lost-after.
	w.prompt(remote, "/hang", "remote-2")
	w.waitSeen(fr, "the second remote turn's first chunk", isChunkOf(t, "remote-2"))
	far.kill9()
	w.checkLostTurn(remote, "remote-2")
	w.waitHost("far", "lost", hostState("lost"))
	if st := w.status(remote); st["executorStatus"] == "ready" || st["executorStatus"] == "reconnecting" {
		t.Errorf("remote session after its host was lost: got executor %v, want it no longer ready or reconnecting", st["executorStatus"])
	}
	// The local session is untouched by that.
	w.prompt(local, "/echo still here", "local-2")
	if got := w.waitTurn(local, "local-2"); got["state"] != "completed" {
		t.Fatalf("local turn after the remote host was lost: got %v, want completed", got)
	}
}
