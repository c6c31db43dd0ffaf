package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// streamingPrompt scripts a prompt that emits n updates, then answers
// end_turn.
func streamingPrompt(n int) func(*fakeHost, hostproto.Command) hostproto.CommandResult {
	return func(f *fakeHost, cmd hostproto.Command) hostproto.CommandResult {
		switch cmd.Kind {
		case hostproto.CommandNew:
			return okResult(hostproto.NewResult{AcpSessionID: "acp-1"})
		case hostproto.CommandPrompt:
			for i := 1; i <= n; i++ {
				f.update(cmd.SessionID, fmt.Sprintf("chunk %d", i))
			}
			return okResult(hostproto.PromptResult{StopReason: "end_turn"})
		}
		return okResult(nil)
	}
}

// checkOffsets fails unless us are the chunks first..last, in order, each
// with its outbox offset.
func checkOffsets(t *testing.T, us []acp.Update, first, last int) {
	t.Helper()
	if len(us) != last-first+1 {
		t.Fatalf("got %d updates, want %d (offsets %d..%d)", len(us), last-first+1, first, last)
	}
	for i, u := range us {
		off := first + i
		if u.Offset != uint64(off) || u.Text != fmt.Sprintf("chunk %d", off) || u.SessionID != "acp-1" || u.Kind != acp.UpdateAgentMessage {
			t.Fatalf("update %d: got offset %d %q (%s, %s), want offset %d %q", i, u.Offset, u.Text, u.SessionID, u.Kind, off, fmt.Sprintf("chunk %d", off))
		}
	}
}

func TestUpdatesInOrderAndAcksCoalesced(t *testing.T) {
	const n = 200
	f := newFakeHost(t, func(f *fakeHost) { f.handle = streamingPrompt(n) })
	// AckDelay never fires: only AckEvery sends an ack.
	h := newTestHost(t, f, func(c *HostConfig) { c.AckEvery, c.AckDelay = 64, time.Hour })
	rh := newRecHandler(false)
	a := startAgent(t, h, "s1", rh)
	if id, err := a.NewSession(ctxT(t), acp.SessionParams{Cwd: "/tmp"}); err != nil || id != "acp-1" {
		t.Fatalf("NewSession: got %q, %v; want acp-1", id, err)
	}
	stop, err := a.PromptTurn(ctxT(t), "acp-1", "turn-1", json.RawMessage(`[]`), nil)
	if err != nil || stop != "end_turn" {
		t.Fatalf("PromptTurn: got %q, %v; want end_turn", stop, err)
	}
	// The result comes after the turn's records, and the call returns only
	// once they were handed to the handler.
	checkOffsets(t, rh.snapshot(), 1, n)

	for i, want := range []uint64{64, 128, 192} {
		rh.done(i*64, i*64+63)
		rh.done(i*64+63, i*64+64)
		f.waitFor(t, "ack", func() bool { return len(f.acks) == i+1 })
		f.mu.Lock()
		got := f.acks[i]
		f.mu.Unlock()
		if got != (hostproto.Ack{SessionID: "s1", Offset: want}) {
			t.Fatalf("ack %d: got %+v, want offset %d", i, got, want)
		}
	}
}

func TestAcksAfterDelay(t *testing.T) {
	f := newFakeHost(t, func(f *fakeHost) { f.handle = streamingPrompt(10) })
	h := newTestHost(t, f, func(c *HostConfig) { c.AckEvery, c.AckDelay = 1000, time.Millisecond })
	rh := newRecHandler(false)
	a := startAgent(t, h, "s1", rh)
	if _, err := a.PromptTurn(ctxT(t), "acp-1", "turn-1", json.RawMessage(`[]`), nil); err != nil {
		t.Fatal(err)
	}
	rh.done(0, 10)
	f.waitFor(t, "ack of 10", func() bool { return f.lastAckLocked("s1") == 10 })
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 1; i < len(f.acks); i++ {
		if f.acks[i].Offset <= f.acks[i-1].Offset {
			t.Fatalf("acks not increasing: %+v", f.acks)
		}
	}
}

func TestUpdateWindow(t *testing.T) {
	const n = 20
	f := newFakeHost(t, func(f *fakeHost) { f.handle = streamingPrompt(n) })
	h := newTestHost(t, f, func(c *HostConfig) { c.UpdateWindow = 4 })
	rh := newRecHandler(false)
	rh.window = 4
	a := startAgent(t, h, "s1", rh)
	out := promptAsync(t, a, "turn-1")
	for released := 0; released < n; released++ {
		rh.waitFor(t, "a full window", func() bool { return len(rh.updates) >= min(released+4, n) })
		rh.done(released, released+1)
	}
	if o := await(t, "prompt", out); o.err != nil || o.stop != "end_turn" {
		t.Fatalf("prompt: got %q, %v", o.stop, o.err)
	}
	rh.mu.Lock()
	defer rh.mu.Unlock()
	if rh.overflow {
		t.Fatal("the handler was given an update with the whole window held")
	}
	checkOffsets(t, rh.updates, 1, n)
}

func TestAgentErrorsKeepTheirClass(t *testing.T) {
	f := newFakeHost(t, func(f *fakeHost) {
		f.handle = func(f *fakeHost, cmd hostproto.Command) hostproto.CommandResult {
			return hostproto.CommandResult{Error: &hostproto.ErrorBody{Code: errcode.AgentError, Message: "nope",
				RPC: &hostproto.RPCError{Code: -32601, Message: "Method not found"}}}
		}
	})
	h := newTestHost(t, f, nil)
	a := startAgent(t, h, "s1", newRecHandler(true))
	_, err := a.NewSession(ctxT(t), acp.SessionParams{Cwd: "/tmp"})
	if got := acp.Classify(err); got != acp.ClassUnsupported {
		t.Fatalf("got %v (class %q), want class %q", err, got, acp.ClassUnsupported)
	}
	if caps := a.Capabilities(); caps.AgentName != "fake-agent" || !caps.LoadSession {
		t.Fatalf("capabilities: got %+v", caps)
	}
	if a.PID() != 0 {
		t.Fatalf("a remote host's agent: got pid %d, want 0", a.PID())
	}
}

func TestLocalHostReportsPID(t *testing.T) {
	f := newFakeHost(t, nil)
	h := newTestHost(t, f, func(c *HostConfig) { c.Local = true })
	if a := startAgent(t, h, "s1", newRecHandler(true)); a.PID() != fakePID {
		t.Fatalf("got pid %d, want %d", a.PID(), fakePID)
	}
}

func TestAttachReplaysAfterFromBeforeReturning(t *testing.T) {
	f := newFakeHost(t, nil)
	h1 := newTestHost(t, f, nil)
	rh1 := newRecHandler(false) // commits nothing: the host keeps all five
	startAgent(t, h1, "s1", rh1)
	for i := 1; i <= 5; i++ {
		f.update("s1", fmt.Sprintf("chunk %d", i))
	}
	rh1.waitUpdates(t, 5)
	h1.Close()

	h2 := newTestHost(t, f, nil)
	rh := newRecHandler(true)
	a, err := h2.Attach(ctxT(t), "s1", 2, rh)
	if err != nil {
		t.Fatal(err)
	}
	checkOffsets(t, rh.snapshot(), 3, 5)
	if a.Capabilities().AgentName != "fake-agent" {
		t.Fatalf("capabilities: got %+v", a.Capabilities())
	}
	info := waitInfo(t, h2, "attached", func(i HostInfo) bool { return slices.Equal(i.Attached, []string{"s1"}) })
	if info.State != StateConnected || info.HostID != "fake-host" || info.Version != hostproto.MaxVersion ||
		!slices.Equal(info.HostSessions, []string{"s1"}) || info.LastContact.IsZero() {
		t.Fatalf("info: got %+v", info)
	}

	if _, err := h2.Attach(ctxT(t), "nope", 0, newRecHandler(true)); !errcode.Is(err, errcode.HostSessionUnknown) {
		t.Fatalf("attach of an unknown session: got %v, want %s", err, errcode.HostSessionUnknown)
	}
}

func TestStopAndExit(t *testing.T) {
	f := newFakeHost(t, func(f *fakeHost) {
		f.stop = func(f *fakeHost, cmd hostproto.Command) hostproto.CommandResult {
			f.emit(cmd.SessionID, hostproto.RecordExit, hostproto.Exit{Code: 3, Stderr: "bye"})
			return okResult(hostproto.StopResult{Exit: hostproto.Exit{Code: 3, Stderr: "bye"}})
		}
	})
	h := newTestHost(t, f, nil)
	a := startAgent(t, h, "s1", newRecHandler(true))
	exit := a.Stop()
	if exit.Code != 3 || exit.Stderr != "bye" || a.Lost() {
		t.Fatalf("Stop: got %+v (lost %t), want code 3", exit, a.Lost())
	}
	if again := a.Stop(); again != exit {
		t.Fatalf("second Stop: got %+v, want %+v", again, exit)
	}
	waitInfo(t, h, "the session gone", func(i HostInfo) bool { return len(i.Attached) == 0 })
	f.waitFor(t, "the exit acknowledged", func() bool { return f.sessions["s1"] == nil })
	if _, err := a.NewSession(ctxT(t), acp.SessionParams{}); acp.Classify(err) != acp.ClassDisconnected {
		t.Fatalf("a call after the exit: got %v, want a disconnected error", err)
	}
}

func TestExitRecordLost(t *testing.T) {
	f := newFakeHost(t, nil)
	h := newTestHost(t, f, nil)
	a := startAgent(t, h, "s1", newRecHandler(true))
	f.emit("s1", hostproto.RecordExit, hostproto.Exit{Code: -1, Lost: true})
	await(t, "Done", a.Done())
	if !a.Lost() || a.Exit().Code != -1 {
		t.Fatalf("got exit %+v, lost %t; want lost", a.Exit(), a.Lost())
	}
}

// TestCommandRefusedAfterExit: a host that restarted after a crash holds
// the session with a lost exit and refuses its commands ("not running");
// such a refusal, coming after the exit record, fails the call as
// disconnected, like any call of an agent that went away, so that the
// turn's outcome is the exit's, never a failure of its own. Several
// sessions, as the refusal and the exit race to the caller.
func TestCommandRefusedAfterExit(t *testing.T) {
	f := newFakeHost(t, func(f *fakeHost) {
		f.handle = func(f *fakeHost, cmd hostproto.Command) hostproto.CommandResult {
			if cmd.Kind != hostproto.CommandPrompt {
				return okResult(nil)
			}
			f.emit(cmd.SessionID, hostproto.RecordExit, hostproto.Exit{Code: -1, Lost: true})
			return errResult(errcode.New(errcode.InvalidState, "the agent of session %s is not running", cmd.SessionID))
		}
	})
	h := newTestHost(t, f, nil)
	for i := range 10 {
		a := startAgent(t, h, fmt.Sprintf("s%d", i), newRecHandler(true))
		got := await(t, "the prompt", promptAsync(t, a, "t1"))
		if acp.Classify(got.err) != acp.ClassDisconnected {
			t.Fatalf("session %d: prompt got %v, want a disconnected error", i, got.err)
		}
		await(t, "Done", a.Done())
		if !a.Lost() {
			t.Fatalf("session %d: got exit %+v, want lost", i, a.Exit())
		}
	}
}

func TestStatus(t *testing.T) {
	f := newFakeHost(t, nil)
	h := newTestHost(t, f, nil)
	startAgent(t, h, "s1", newRecHandler(true))
	st, err := h.Status(ctxT(t))
	if err != nil || len(st.Sessions) != 1 || st.Sessions[0].SessionID != "s1" {
		t.Fatalf("Status: got %+v, %v", st, err)
	}
}

// TestAbandonedStartIsStopped: a Start whose caller gave up before the
// host answered leaves no agent running there.
func TestAbandonedStartIsStopped(t *testing.T) {
	release := make(chan struct{})
	f := newFakeHost(t, func(f *fakeHost) { f.started = func(f *fakeHost, _ hostproto.Command) { f.wait(release) } })
	h := newTestHost(t, f, nil)
	ctx, cancel := context.WithCancel(ctxT(t))
	started := make(chan error, 1)
	go func() {
		_, err := h.Start(ctx, "s1", hostproto.StartPayload{ProfileID: "demo"}, newRecHandler(true))
		started <- err
	}()
	f.waitFor(t, "the start", func() bool { return len(f.receivedLocked(hostproto.CommandStart)) == 1 })
	cancel()
	if err := await(t, "Start", started); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want %v", err, context.Canceled)
	}
	close(release)
	f.waitFor(t, "the stop", func() bool { return len(f.receivedLocked(hostproto.CommandStop)) == 1 })
	waitInfo(t, h, "nothing attached", func(i HostInfo) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.agents) == 0
	})
}

func TestOneAgentPerSession(t *testing.T) {
	f := newFakeHost(t, nil)
	h := newTestHost(t, f, nil)
	a := startAgent(t, h, "s1", newRecHandler(true))
	if _, err := h.Start(ctxT(t), "s1", hostproto.StartPayload{}, newRecHandler(true)); !errcode.Is(err, errcode.InvalidState) {
		t.Fatalf("a second agent for a session: got %v, want %s", err, errcode.InvalidState)
	}
	a.Stop()
	// Once the first is done with the host, the session can start again.
	if _, err := h.Start(ctxT(t), "s1", hostproto.StartPayload{}, newRecHandler(true)); err != nil {
		t.Fatalf("a new agent after the stop: %v", err)
	}
}

func TestPromptNotifySentBeforeReturn(t *testing.T) {
	f := newFakeHost(t, func(f *fakeHost) { f.handle = streamingPrompt(1) })
	h := newTestHost(t, f, nil)
	a := startAgent(t, h, "s1", newRecHandler(true))
	var sent atomic.Int32
	stop, err := a.PromptNotify(ctxT(t), "acp-1", json.RawMessage(`[]`), func() { sent.Add(1) })
	if err != nil || stop != "end_turn" || sent.Load() != 1 {
		t.Fatalf("got %q, %v, sent called %d times; want end_turn after one sent", stop, err, sent.Load())
	}
	if _, err := a.PromptNotify(ctxT(t), "acp-1", json.RawMessage(`[]`), nil); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ps := f.receivedLocked(hostproto.CommandPrompt); len(ps) != 2 || ps[0].cmd.ID == ps[1].cmd.ID {
		t.Fatalf("PromptNotify ids: got %+v, want two fresh ones", ps)
	}
}

// TestAgentLinesDecoded: version 2 records carry the agent's own
// session/update lines; the daemon decodes them as it would a local
// agent's, drops what such an agent's would be dropped, and still
// commits (acknowledges) every offset.
func TestAgentLinesDecoded(t *testing.T) {
	line := func(text string) json.RawMessage {
		return json.RawMessage(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"acp-1","update":` +
			`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + text + `"}}}}`)
	}
	records := []json.RawMessage{
		line("chunk 1"),
		json.RawMessage(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"acp-1","update":{"sessionUpdate":"tether_unknown"}}}`),
		line("chunk 3"),
		json.RawMessage(`{"jsonrpc":"2.0","method":"session/update","params":"not an object"}`),
		// The SDK's path, not the fast one: the chunk has annotations.
		json.RawMessage(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"acp-1","update":` +
			`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk 5","annotations":{"priority":1}}}}}`),
	}
	f := newFakeHost(t, func(f *fakeHost) {
		f.handle = func(f *fakeHost, cmd hostproto.Command) hostproto.CommandResult {
			if cmd.Kind == hostproto.CommandPrompt {
				for _, r := range records {
					f.emit(cmd.SessionID, hostproto.RecordACPUpdate, r)
				}
				return okResult(hostproto.PromptResult{StopReason: "end_turn"})
			}
			return okResult(nil)
		}
	})
	h := newTestHost(t, f, func(c *HostConfig) { c.AckDelay = time.Millisecond })
	rh := newRecHandler(true)
	a := startAgent(t, h, "s1", rh)
	if _, err := a.PromptTurn(ctxT(t), "acp-1", "turn-1", json.RawMessage(`[]`), nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range rh.snapshot() {
		got = append(got, fmt.Sprintf("%d %s", u.Offset, u.Text))
	}
	if want := []string{"1 chunk 1", "3 chunk 3", "5 chunk 5"}; !slices.Equal(got, want) {
		t.Fatalf("got updates %q, want %q", got, want)
	}
	f.waitFor(t, "ack of every record", func() bool { return f.lastAckLocked("s1") == uint64(len(records)) })
}

// TestUpdatesKeepOrderUnderAShortWindow: with a window of one credit,
// given back from another goroutine as each update arrives, records race
// between the dispatcher (one waiting for the credit) and inline delivery
// on the connection's reader; the handler must still see every update once,
// in order.
func TestUpdatesKeepOrderUnderAShortWindow(t *testing.T) {
	const n = 3000
	f := newFakeHost(t, func(f *fakeHost) { f.handle = streamingPrompt(n) })
	h := newTestHost(t, f, func(c *HostConfig) { c.UpdateWindow = 1 })
	rh := newRecHandler(false)
	stop := make(chan struct{})
	released := make(chan struct{})
	go func() { // give each credit back as soon as its update arrived
		defer close(released)
		for i := 0; i < n; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if !rh.waitCount(i+1, stop) {
				return
			}
			rh.done(i, i+1)
		}
	}()
	defer func() { close(stop); <-released }()
	a := startAgent(t, h, "s1", rh)
	if _, err := a.PromptTurn(ctxT(t), "acp-1", "turn-1", json.RawMessage(`[]`), nil); err != nil {
		t.Fatal(err)
	}
	checkOffsets(t, rh.snapshot(), 1, n)
}
