package executor

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// heldPrompt scripts a prompt that emits before chunks, waits for release,
// emits after more and answers end_turn.
func heldPrompt(before, after int, release <-chan struct{}) func(*fakeHost, hostproto.Command) hostproto.CommandResult {
	return func(f *fakeHost, cmd hostproto.Command) hostproto.CommandResult {
		switch cmd.Kind {
		case hostproto.CommandNew:
			return okResult(hostproto.NewResult{AcpSessionID: "acp-1"})
		case hostproto.CommandPrompt:
			for range before {
				f.chunk(cmd.SessionID)
			}
			if !f.wait(release) {
				return errResult(errors.New("host closed"))
			}
			for range after {
				f.chunk(cmd.SessionID)
			}
			return okResult(hostproto.PromptResult{StopReason: "end_turn"})
		}
		return okResult(nil)
	}
}

func attachFrom(t *testing.T, r fakeReceived) uint64 {
	t.Helper()
	var p hostproto.AttachPayload
	if err := json.Unmarshal(r.cmd.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p.From
}

// TestReconnectMidTurn cuts the connection mid-turn, with records
// emitted while the daemon is away and some delivered but not yet
// committed: the session is re-attached from its last commit, the handler
// gets every update exactly once, in order, and the pending prompt is
// resent once, after the attach, and answered on the new connection.
func TestReconnectMidTurn(t *testing.T) {
	release := make(chan struct{})
	f := newFakeHost(t, func(f *fakeHost) { f.handle = heldPrompt(5, 3, release) })
	h := newTestHost(t, f, nil)
	rh := newRecHandler(false)
	a := startAgent(t, h, "s1", rh)
	if _, err := a.NewSession(ctxT(t), acp.SessionParams{Cwd: "/tmp"}); err != nil {
		t.Fatal(err)
	}
	out := promptAsync(t, a, "turn-1")
	rh.waitUpdates(t, 5)
	rh.done(0, 3) // 4 and 5 are delivered, not committed
	f.waitFor(t, "ack of 3", func() bool { return f.lastAckLocked("s1") == 3 })

	f.setRefuse(true)
	f.cut()
	rh.waitFor(t, "link down", func() bool { return slices.Equal(rh.links, []bool{false}) })
	waitInfo(t, h, "reconnecting", func(i HostInfo) bool { return i.State == StateReconnecting && i.LastError != nil })
	// The session hears why it waits, never the same reason twice in a row.
	rh.waitFor(t, "the reason", func() bool { return len(rh.whys) > 0 })
	rh.mu.Lock()
	whys := slices.Clone(rh.whys)
	rh.mu.Unlock()
	if !strings.Contains(whys[0], "is not connected") || len(slices.Compact(slices.Clone(whys))) != len(whys) {
		t.Fatalf("HostUnreachable: got %q, want no reason twice in a row, the first saying the host is not connected", whys)
	}
	f.chunk("s1") // 6 and 7 while the daemon is away
	f.chunk("s1")
	f.setRefuse(false)

	rh.waitUpdates(t, 7)
	rh.waitFor(t, "link up", func() bool { return slices.Equal(rh.links, []bool{false, true}) })
	f.waitFor(t, "the prompt resent", func() bool { return len(f.receivedLocked(hostproto.CommandPrompt)) == 2 })
	close(release)
	if o := await(t, "prompt", out); o.err != nil || o.stop != "end_turn" {
		t.Fatalf("prompt: got %q, %v; want end_turn", o.stop, o.err)
	}
	checkOffsets(t, rh.snapshot(), 1, 10)
	rh.done(3, 10)
	f.waitFor(t, "ack of 10", func() bool { return f.lastAckLocked("s1") == 10 })

	f.mu.Lock()
	defer f.mu.Unlock()
	prompts := f.receivedLocked(hostproto.CommandPrompt)
	if prompts[0].cmd.ID != prompts[1].cmd.ID || prompts[0].conn != 1 || prompts[1].conn == 1 {
		t.Fatalf("prompt sends: got %+v, want the same id once per connection", prompts)
	}
	if n := f.applied[prompts[0].cmd.ID]; n != 1 {
		t.Fatalf("prompt applied %d times, want once", n)
	}
	var attach *fakeReceived
	for i, r := range f.received {
		if r.conn == prompts[1].conn {
			if r.cmd.Kind == hostproto.CommandAttach {
				attach = &f.received[i]
			}
			if r.cmd.Kind == hostproto.CommandPrompt && attach == nil {
				t.Fatal("the prompt was resent before the session was attached again")
			}
		}
	}
	if attach == nil || attachFrom(t, *attach) != 3 {
		t.Fatalf("re-attach: got %+v, want one from offset 3", attach)
	}
}

// TestStartResentAcrossCut cuts the connection while the host is still
// starting the agent (and the agent already streams): the start is resent,
// answered once on the new connection, and the records emitted meanwhile
// reach the handler in order.
func TestStartResentAcrossCut(t *testing.T) {
	release := make(chan struct{})
	f := newFakeHost(t, func(f *fakeHost) {
		f.started = func(f *fakeHost, cmd hostproto.Command) {
			f.chunk(cmd.SessionID)
			f.chunk(cmd.SessionID)
			f.wait(release)
		}
	})
	h := newTestHost(t, f, nil)
	rh := newRecHandler(true)
	started := make(chan error, 1)
	var a *Agent
	go func() {
		var err error
		a, err = h.Start(ctxT(t), "s1", hostproto.StartPayload{ProfileID: "demo"}, rh)
		started <- err
	}()
	rh.waitUpdates(t, 2)
	f.cut()
	f.waitFor(t, "the start resent", func() bool { return len(f.receivedLocked(hostproto.CommandStart)) == 2 })
	f.chunk("s1")
	close(release)
	if err := await(t, "start", started); err != nil {
		t.Fatal(err)
	}
	rh.waitUpdates(t, 3)
	checkOffsets(t, rh.snapshot(), 1, 3)
	f.chunk("s1")
	rh.waitUpdates(t, 4)
	checkOffsets(t, rh.snapshot(), 1, 4)
	if a.Capabilities().AgentName != "fake-agent" {
		t.Fatalf("capabilities: got %+v", a.Capabilities())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if starts := f.receivedLocked(hostproto.CommandStart); f.applied[starts[0].cmd.ID] != 1 || starts[0].cmd.ID != starts[1].cmd.ID {
		t.Fatalf("start: got %+v applied %d times, want one id applied once", starts, f.applied[starts[0].cmd.ID])
	}
}

// TestPromptTurnAfterDaemonRestart closes the Host mid-turn (the daemon
// dies), then a new Host attaches from the last commit and calls
// PromptTurn again for the same turn: the host does not prompt twice, and
// the new daemon gets the turn's stop reason and the rest of its updates.
func TestPromptTurnAfterDaemonRestart(t *testing.T) {
	release := make(chan struct{})
	f := newFakeHost(t, func(f *fakeHost) { f.handle = heldPrompt(3, 2, release) })
	h1 := newTestHost(t, f, nil)
	rh1 := newRecHandler(true)
	a1 := startAgent(t, h1, "s1", rh1)
	out1 := promptAsync(t, a1, "turn-1")
	rh1.waitUpdates(t, 3)
	f.waitFor(t, "ack of 3", func() bool { return f.lastAckLocked("s1") == 3 })
	h1.Close()
	o := await(t, "the first daemon's prompt", out1)
	if !errcode.Is(o.err, errcode.ServiceShuttingDown) || acp.Classify(o.err) != acp.ClassDisconnected {
		t.Fatalf("prompt on a closed host: got %v, want %s classified disconnected", o.err, errcode.ServiceShuttingDown)
	}
	select {
	case <-a1.Done():
	default:
		t.Fatal("an agent of a closed host is not done")
	}

	h2 := newTestHost(t, f, nil)
	rh2 := newRecHandler(true)
	a2, err := h2.Attach(ctxT(t), "s1", 3, rh2)
	if err != nil {
		t.Fatal(err)
	}
	out2 := promptAsync(t, a2, "turn-1")
	f.waitFor(t, "the turn's prompt again", func() bool { return len(f.receivedLocked(hostproto.CommandPrompt)) == 2 })
	close(release)
	if o := await(t, "the second daemon's prompt", out2); o.err != nil || o.stop != "end_turn" {
		t.Fatalf("prompt after restart: got %q, %v; want end_turn", o.stop, o.err)
	}
	checkOffsets(t, rh2.snapshot(), 4, 5)
	f.mu.Lock()
	defer f.mu.Unlock()
	prompts := f.receivedLocked(hostproto.CommandPrompt)
	if prompts[0].cmd.ID != prompts[1].cmd.ID || f.applied[prompts[0].cmd.ID] != 1 {
		t.Fatalf("prompts: got %+v, applied %d; want one id applied once", prompts, f.applied[prompts[0].cmd.ID])
	}
}
