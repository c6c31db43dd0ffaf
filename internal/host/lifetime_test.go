package host_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/testbin"
)

// TestLoadReplayBeforeResult: a new start of a session begins its offsets
// again at 1, after its result (what comes before is the previous
// incarnation's), and a load's result follows the history the agent
// replays.
func TestLoadReplayBeforeResult(t *testing.T) {
	th := startHost(t, t.TempDir(), nil)
	d := th.mustDial()
	acpID := d.open("s1")
	decode[hostproto.PromptResult](t, d.do(hostproto.CommandPrompt, "s1", prompt(acpID, "/echo remember me")))

	first := len(d.recs["s1"])
	lastOld := d.recs["s1"][first-1].Offset
	decode[hostproto.StartResult](t, d.do(hostproto.CommandStart, "s1", hostproto.StartPayload{ProfileID: "demo", Cwd: t.TempDir()}))
	// Before the start's result only the previous incarnation's records
	// (its exit), on its own offsets; from the result on, the new one's.
	mid := len(d.recs["s1"])
	checkGapless(t, d.recs["s1"][first:mid], lastOld+1)
	decode[hostproto.RestoreResult](t, d.do(hostproto.CommandLoad, "s1", hostproto.RestorePayload{AcpSessionID: acpID, Params: hostproto.SessionParams{Cwd: t.TempDir()}}))
	second := d.recs["s1"][mid:]
	checkGapless(t, second, 1)
	if got := texts(t, second); !slices.Contains(got, "remember me") {
		t.Fatalf("records before the load's result: got chunks %q, want the replayed reply", got)
	}
}

// TestLinger: with no daemon and idle agents the host ends by itself, but
// not while a permission request waits; Close then stops the agents, whose
// exits are recorded as real ones, not lost.
func TestLinger(t *testing.T) {
	dir := t.TempDir()
	var th *testHost
	var d *daemon
	// The linger runs from the start; should it pass before the test
	// connects, the test tries again with a longer one.
	linger := 500 * time.Millisecond
	for d == nil {
		th = startHost(t, dir, func(c *host.Config) { c.Linger = linger })
		var err error
		if d, err = th.dial(testToken); err != nil {
			th.stop()
			linger *= 2
		}
	}
	acpID := d.open("s1")
	promptID := d.send("", hostproto.CommandPrompt, "s1", prompt(acpID, "/permission"))
	var req hostproto.PermissionRequest
	for req.RequestID == "" {
		if r, ok := d.next().(*hostproto.Record); ok && r.Kind == hostproto.RecordRequest {
			if err := json.Unmarshal(r.Payload, &req); err != nil {
				t.Fatal(err)
			}
		}
	}
	d.close()
	// Long past the linger: a host that lingered out despite the request
	// refuses the next connection.
	time.Sleep(3 * linger)
	d = th.mustDial()
	decode[hostproto.AttachResult](t, d.do(hostproto.CommandAttach, "s1", hostproto.AttachPayload{}))
	decode[struct{}](t, d.do(hostproto.CommandPermissionAnswer, "s1", hostproto.PermissionAnswerPayload{RequestID: req.RequestID, OptionID: "allow_once"}))
	decode[hostproto.PromptResult](t, d.await(d.send(promptID, hostproto.CommandPrompt, "s1", prompt(acpID, "/permission"))))
	pid := decode[hostproto.StatusResult](t, d.do(hostproto.CommandStatus, "", nil)).Sessions[0].PID
	d.close()
	if err := th.waitServed(); err != nil {
		t.Fatalf("Serve after the linger: %v", err)
	}
	th.stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("agent %d after the host closed: kill 0 answered %v, want it gone", pid, err)
	}

	th = startHost(t, dir, func(c *host.Config) { c.Linger = -1 })
	d = th.mustDial()
	decode[hostproto.AttachResult](t, d.do(hostproto.CommandAttach, "s1", hostproto.AttachPayload{}))
	recs := readToExit(d, "s1")
	if e := exitOf(t, recs[len(recs)-1]); e.Lost {
		t.Fatalf("exit after a clean close: got %+v, want the agent's own", e)
	}
}

// readToExit reads until sid's exit record and returns sid's records.
func readToExit(d *daemon, sid string) []hostproto.Record {
	d.t.Helper()
	for recs := d.recs[sid]; len(recs) == 0 || recs[len(recs)-1].Kind != hostproto.RecordExit; recs = d.recs[sid] {
		d.next()
	}
	return d.recs[sid]
}

// hostProcess runs `tetherd host` on dataDir, waits until its socket
// takes connections and returns the process and a channel closed once it
// exited. The socket file is removed first, so that the wait sees this
// host's.
func hostProcess(t *testing.T, dataDir, sock string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	logs := &testbin.LogBuffer{}
	cmd := exec.Command(testbin.Tetherd(t), "host", "--data-dir", dataDir, "--socket", sock, "--log-level", "debug")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			t.Logf("tetherd host log:\n%s", logs.String())
		}
	})
	waitFor(t, "the host's socket", func() bool {
		select {
		case <-exited:
			t.Fatalf("tetherd host exited early:\n%s", logs.String())
		default:
		}
		// The socket file exists from bind, before listen: dial it.
		nc, err := net.Dial("unix", sock)
		if err == nil {
			_ = nc.Close()
		}
		return err == nil
	})
	return cmd, exited
}

// processGone reports whether pid no longer runs (reaped, or a zombie
// nobody reaps: the killed host's orphans go to a reaper that may be slow
// or absent in a container).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: comm may hold spaces, the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// killedHost runs `tetherd host` on a fresh data dir, starts the demo
// agent for session s1 and prompts it with text; the daemon keeps the
// records unacknowledged, unless beforeKill acknowledges some. Then it
// kills the host with SIGKILL and waits until its agent, which reads the
// end of its stdin, has exited. It returns the data dir, the socket, the
// session's records and the agent's ACP session id.
func killedHost(t *testing.T, text string, beforeKill func(a *daemon, recs []hostproto.Record)) (dir, sock string, recs []hostproto.Record, acpID string) {
	t.Helper()
	dir, sock = t.TempDir(), testbin.SocketPath(t)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, exited := hostProcess(t, dir, sock)
	a, err := dialSocket(t, sock, testToken)
	if err != nil {
		t.Fatal(err)
	}
	acpID = a.open("s1")
	agentPID := decode[hostproto.StatusResult](t, a.do(hostproto.CommandStatus, "", nil)).Sessions[0].PID
	a.autoAck = false
	decode[hostproto.PromptResult](t, a.do(hostproto.CommandPrompt, "s1", prompt(acpID, text)))
	recs = a.recs["s1"]
	if beforeKill != nil {
		beforeKill(a, recs)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.close()
	<-exited
	waitFor(t, "the killed host's agent to exit", func() bool { return processGone(agentPID) })
	return dir, sock, recs, acpID
}

// TestHostKilledReportsLostExit: a host killed under its agents finds
// their sessions on restart and ends each with a lost exit, after every
// record the agent produced before.
func TestHostKilledReportsLostExit(t *testing.T) {
	var committed uint64
	dir, sock, before, acpID := killedHost(t, "/stream 5", func(a *daemon, recs []hostproto.Record) {
		committed = recs[len(recs)-3].Offset
		a.ack("s1", committed)
	})

	hostProcess(t, dir, sock)
	b, err := dialSocket(t, sock, testToken)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(b.welcome.Sessions, "s1") {
		t.Fatalf("welcome after the restart lists %q, want s1", b.welcome.Sessions)
	}
	decode[hostproto.AttachResult](t, b.do(hostproto.CommandAttach, "s1", hostproto.AttachPayload{From: committed}))
	b.autoAck = false
	after := readToExit(b, "s1")
	checkGapless(t, after, committed+1)
	want := before[committed:]
	for i, r := range want {
		if got := after[i]; got.Kind != r.Kind || string(got.Payload) != string(r.Payload) {
			t.Fatalf("record %d after the restart: got %s %s, want %s %s", r.Offset, got.Kind, got.Payload, r.Kind, r.Payload)
		}
	}
	if len(after) != len(want)+1 {
		t.Fatalf("after the restart: got records %s, want those after %d and an exit", offsets(after), committed)
	}
	lost := exitOf(t, after[len(after)-1])
	if !lost.Lost {
		t.Fatalf("exit after the host was killed: got %+v, want lost", lost)
	}
	if r := b.do(hostproto.CommandPrompt, "s1", prompt(acpID, "hello")); r.Error == nil || r.Error.Code != errcode.InvalidState {
		t.Fatalf("prompt to a lost agent: got %+v, want %s", r.Error, errcode.InvalidState)
	}
	if got := decode[hostproto.StopResult](t, b.do(hostproto.CommandStop, "s1", nil)); got.Exit != lost {
		t.Fatalf("stop of a lost agent: got %+v, want its lost exit %+v", got.Exit, lost)
	}
	b.ack("s1", after[len(after)-1].Offset)
	waitFor(t, "the session and its directory to be dropped", func() bool {
		_, err := os.Stat(filepath.Join(dir, "sessions", "s1"))
		return errors.Is(err, os.ErrNotExist) && len(decode[hostproto.StatusResult](t, b.do(hostproto.CommandStatus, "", nil)).Sessions) == 0
	})
}
