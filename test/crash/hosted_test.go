package crash_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The detached runtime (issue 13): the agent runs in a `tetherd host` that
// outlives the daemon, so killing tetherd interrupts nothing.

// streamPrompt is the burst the restart test streams: 2000 chunks with a
// pause every 100, so kills land inside bursts and between them.
const streamPrompt = "/stream 2000 100 15"

// wantStream is what the transcript of one streamPrompt turn must read.
func wantStream() string {
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&b, "chunk %d\n", i)
	}
	return b.String()
}

// stopHosts ends the world's executor hosts (they outlive every daemon on
// purpose) before the world checks that nothing of it still runs.
func (w *world) stopHosts() {
	for _, p := range w.processes(" host ") {
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
	}
}

// startingHosts are the running daemon's children that run `tetherd
// host`: a host it is starting, before it wrote host.lock (by which
// host.Running finds it), is one of them.
func (w *world) startingHosts() map[int]bool {
	out := map[int]bool{}
	w.mu.Lock()
	d := w.daemon
	w.mu.Unlock()
	if d == nil {
		return out
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 {
			continue
		}
		if f := strings.Fields(string(stat[i+1:])); len(f) < 2 || f[1] != strconv.Itoa(d.pid()) { // state, ppid
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && args[1] == "host" {
			pid, _ := strconv.Atoi(e.Name())
			out[pid] = true
		}
	}
	return out
}

// hostedWorld is a world whose sessions run in the detached runtime.
func hostedWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t, profile{id: "demo"})
	return w
}

// startHosted starts tetherd with the detached runtime as the default.
func (w *world) startHosted(extra ...string) {
	w.start(append([]string{"--executor", "detached"}, extra...)...)
}

// TestDetachedRestartInterruptsNothing kills tetherd with SIGKILL at random
// points of streaming turns, of a tool call and of a pending permission,
// 20 times and more, restarting it each time on the same data dir: no turn
// is interrupted, every turn completes, the transcript holds every chunk
// once and in order, and an SSE client that reconnects with Last-Event-ID
// after each crash receives the session's log without a gap or a
// duplicate.
func TestDetachedRestartInterruptsNothing(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	w := hostedWorld(t)
	w.startHosted()
	sid, _ := w.createSession("demo")
	if ex := w.get("/session/" + sid)["executor"].(map[string]any); ex["runtime"] != "detached" {
		t.Fatalf("executor: got %v, want runtime detached", ex)
	}
	fol := w.follow(sid)
	rng := rand.New(rand.NewPCG(13, 2026))
	type turnCase struct{ prompt, kind string }
	var turns []turnCase
	kills := 0
	restart := func() {
		w.kill9()
		kills++
		w.startHosted()
	}
	for i := 0; kills < 24; i++ {
		pid := fmt.Sprintf("turn-%02d", i)
		switch i % 4 {
		case 0, 1: // streaming: killed once or twice mid-burst
			turns = append(turns, turnCase{streamPrompt, "stream"})
			w.prompt(sid, streamPrompt, pid)
			for k := 0; k < 1+i%2; k++ {
				time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
				if w.turnEnded(sid, pid) {
					break
				}
				restart()
			}
		case 2: // a tool call in progress when tetherd dies
			turns = append(turns, turnCase{"/tool sleep 1500", "tool"})
			w.prompt(sid, "/tool sleep 1500", pid)
			w.waitSeen(fol, "tool call started", func(f frame) bool {
				return f.Event == "tool_call.started" && f.JSON(t)["promptId"] == pid
			})
			restart()
		case 3: // a permission pending when tetherd dies, answered after
			turns = append(turns, turnCase{"/permission", "permission"})
			w.prompt(sid, "/permission", pid)
			req := w.waitSeen(fol, "permission requested", func(f frame) bool {
				return f.Event == "permission.requested" && f.JSON(t)["promptId"] == pid
			}).JSON(t)["requestId"].(string)
			restart()
			pending := list(w.transcript(sid), "pendingPermissions")
			if len(pending) != 1 || pending[0]["id"] != req {
				t.Fatalf("after the restart: got pending %v, want request %s still pending", pending, req)
			}
			if code, m := w.do("POST", "/session/"+sid+"/permission/"+req, map[string]any{"optionId": "allow_once"}); code != http.StatusOK {
				t.Fatalf("answer the permission after the restart: got %d, want 200: %v", code, m)
			}
		}
		if got := w.waitTurn(sid, pid); got["state"] != "completed" {
			t.Fatalf("turn %s (%s): got %v, want completed", pid, turns[i].kind, got)
		}
	}
	if kills < 20 {
		t.Fatalf("got %d kills, want at least 20", kills)
	}

	// The durable log: no interruption anywhere.
	log := w.replay(sid)
	checkNoInterruption(t, log)
	// The transcript: each turn's agent text exactly as the agent sent it.
	byTurn := w.agentReplies(sid)
	for i, tc := range turns {
		pid := fmt.Sprintf("turn-%02d", i)
		switch tc.kind {
		case "stream":
			checkStreamText(t, pid, byTurn[pid].text)
			// One reply, one message: a restart does not cut it in two.
			if n := byTurn[pid].messages; n != 1 {
				t.Errorf("turn %s: got %d agent messages, want the one the agent wrote", pid, n)
			}
		case "permission":
			if got := byTurn[pid].text; !strings.Contains(got, "allow_once") || strings.Contains(got, "cancel") {
				t.Errorf("turn %s: agent said %q, want the answer allow_once and never a cancel", pid, got)
			}
		}
	}
	// The reconnecting client: the whole log, each event once, in order.
	w.checkFollowed(fol, sid)

	// The host as GET /executors and `tetherd host ls` show it: one host
	// outlived every daemon, and holds the session.
	hosts := list(w.get("/executors"), "hosts")
	if len(hosts) != 1 || hosts[0]["name"] != "local" || hosts[0]["runtime"] != "detached" || hosts[0]["state"] != "connected" {
		t.Fatalf("GET /executors: got %v, want the local detached host, connected", hosts)
	}
	if held := list(hosts[0], "sessions"); len(held) != 1 || held[0]["sessionId"] != sid {
		t.Errorf("GET /executors: the host holds %v, want session %s", held, sid)
	}
	if n := len(w.processes(" host ")); n != 1 {
		t.Errorf("got %d executor host processes, want 1 (found again after every restart)", n)
	}
	if out := w.hostLs(); !strings.Contains(out, "local") || !strings.Contains(out, "connected") {
		t.Errorf("tetherd host ls: got\n%s\nwant a line for the local host, connected", out)
	}
}

// hostLs runs `tetherd host ls` against the world's daemon.
func (w *world) hostLs() string {
	w.t.Helper()
	ls := exec.Command(w.bin, "host", "ls", "--addr", w.addr)
	ls.Env = append(os.Environ(), "TETHER_TOKEN="+token)
	out, err := ls.CombinedOutput()
	if err != nil {
		w.t.Fatalf("tetherd host ls: %v\n%s", err, out)
	}
	return string(out)
}

// checkNoInterruption checks that a session's durable log holds no
// turn.interrupted.
func checkNoInterruption(t *testing.T, log []frame) {
	t.Helper()
	for _, f := range log {
		if f.Event == "turn.interrupted" {
			t.Errorf("got turn.interrupted: %s", f.Data)
		}
	}
}

// agentReply is the agent's part of one turn in the transcript: its
// text and the messages it is in.
type agentReply struct {
	text     string
	messages int
}

// agentReplies reads the agent's messages in the session's transcript,
// by turn.
func (w *world) agentReplies(sid string) map[string]agentReply {
	w.t.Helper()
	out := map[string]agentReply{}
	for _, m := range list(w.transcript(sid), "messages") {
		if m["role"] == "agent" {
			p, _ := m["promptId"].(string)
			r := out[p]
			r.text += m["text"].(string)
			r.messages++
			out[p] = r
		}
	}
	return out
}

// agentText is the agent's text in the session's transcript, by turn.
func (w *world) agentText(sid string) map[string]string {
	w.t.Helper()
	out := map[string]string{}
	for p, r := range w.agentReplies(sid) {
		out[p] = r.text
	}
	return out
}

// checkStreamText checks a streamPrompt turn's agent text: the 2000
// chunks, each once, in order.
func checkStreamText(t *testing.T, pid, got string) {
	t.Helper()
	if got != wantStream() {
		t.Errorf("turn %s: transcript has %d bytes of agent text, want the %d of the 2000 chunks once each, in order",
			pid, len(got), len(wantStream()))
	}
}

// checkFollowed checks that the live client fol received session sid's
// log whole, gapless and without duplicates. The log is read again until
// the client has its last event: a turn's end may commit a batch before
// the session's move to waiting for input, so a log read as the turn
// ends can lack events the client then receives.
func (w *world) checkFollowed(fol *recorder, sid string) {
	w.t.Helper()
	end := time.Now().Add(deadline)
	var log []frame
	for {
		log = w.replay(sid)
		s := fol.seen()
		if len(s) > 0 && s[len(s)-1].ID == log[len(log)-1].ID {
			break
		}
		if time.Now().After(end) {
			w.t.Fatalf("timed out waiting for the client to catch up: it saw %d events, last %s; the log's last are %s", len(s), frameTail(s, 1), frameTail(log, 4))
		}
		time.Sleep(50 * time.Millisecond)
	}
	fol.stop()
	got := fol.seen()
	for i := 1; i < len(got); i++ {
		if got[i].seq() != got[i-1].seq()+1 {
			w.t.Fatalf("client stream: event %d has seq %d after %d, want a gapless, duplicate-free stream", i, got[i].seq(), got[i-1].seq())
		}
	}
	if got[0].seq() != log[0].seq() || len(got) != len(log) {
		w.t.Errorf("client stream: got %d events from seq %d, want the log's %d from seq %d", len(got), got[0].seq(), len(log), log[0].seq())
	}
}

// frameTail names the last n frames (id and type) of fs, for a failure.
func frameTail(fs []frame, n int) string {
	var b strings.Builder
	for _, f := range fs[max(0, len(fs)-n):] {
		fmt.Fprintf(&b, "[%s %s] ", f.ID, f.Event)
	}
	return b.String()
}

// turnEnded reports whether the turn is terminal already.
func (w *world) turnEnded(sid, pid string) bool {
	w.t.Helper()
	switch w.turn(sid, pid)["state"] {
	case "queued", "running":
		return false
	}
	return true
}
