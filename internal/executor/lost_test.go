package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// TestLostAfterEndsAgents: a host unreachable past LostAfter ends its
// agents as lost, fails their calls as disconnected, and, when it comes
// back, is told to stop the agent the daemon gave up on; its exit ends the
// late output.
func TestLostAfterEndsAgents(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	f := newFakeHost(t, func(f *fakeHost) { f.handle = heldPrompt(1, 0, release) })
	h := newTestHost(t, f, func(c *HostConfig) { c.LostAfter = 50 * time.Millisecond })
	rh := newRecHandler(true)
	a := startAgent(t, h, "s1", rh)
	out := promptAsync(t, a, "turn-1")
	rh.waitUpdates(t, 1)
	f.shutdown()

	await(t, "the agent to be lost", a.Done())
	if !a.Lost() || a.Exit().Code != -1 {
		t.Fatalf("got exit %+v lost %t, want lost", a.Exit(), a.Lost())
	}
	o := await(t, "prompt", out)
	if !errcode.Is(o.err, errcode.ExecutorLost) || acp.Classify(o.err) != acp.ClassDisconnected {
		t.Fatalf("pending prompt: got %v (class %q), want %s classified %q", o.err, acp.Classify(o.err), errcode.ExecutorLost, acp.ClassDisconnected)
	}
	info := waitInfo(t, h, "lost", func(i HostInfo) bool { return i.State == StateLost })
	if len(info.Attached) != 0 || info.LastError == nil {
		t.Fatalf("info of a lost host: got %+v", info)
	}
	if _, err := h.Start(ctxT(t), "s2", hostproto.StartPayload{}, newRecHandler(true)); !errcode.Is(err, errcode.ExecutorUnavailable) {
		t.Fatalf("Start on a lost host: got %v, want %s", err, errcode.ExecutorUnavailable)
	}
	if _, err := h.Attach(ctxT(t), "s1", 0, newRecHandler(true)); !errcode.Is(err, errcode.ExecutorLost) {
		t.Fatalf("Attach on a lost host: got %v, want %s", err, errcode.ExecutorLost)
	}

	if err := f.listen(); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "the lost agent stopped", func() bool { return len(f.receivedLocked(hostproto.CommandStop)) == 1 })
	f.waitFor(t, "its exit acknowledged", func() bool { return f.sessions["s1"] == nil })
	waitInfo(t, h, "connected", func(i HostInfo) bool { return i.State == StateConnected })
	// Nothing came late (the fake host's agent sent nothing during the
	// cut): the handler has the update before, then the late output's end.
	f.waitFor(t, "the late output's end", func() bool { return len(rh.snapshot()) >= 2 })
	if got := rh.snapshot(); len(got) != 2 || got[1].Kind != acp.UpdateLateEnd {
		t.Fatalf("the handler of a lost agent got %+v, want the update before, then %s", got, acp.UpdateLateEnd)
	}
}

// TestLostBeforeAttach: a daemon starting up with a host that never
// answers fails the Attach once LostAfter has passed.
func TestLostBeforeAttach(t *testing.T) {
	f := newFakeHost(t, nil)
	f.shutdown()
	h := newTestHost(t, f, func(c *HostConfig) { c.LostAfter = 20 * time.Millisecond })
	if _, err := h.Attach(ctxT(t), "s1", 0, newRecHandler(true)); !errcode.Is(err, errcode.ExecutorLost) {
		t.Fatalf("got %v, want %s", err, errcode.ExecutorLost)
	}
}

// TestStopWhileUnreachable: Stop gives up after the agent's grace with an
// exit saying so; the stop stays queued and reaches the host once it is
// back.
func TestStopWhileUnreachable(t *testing.T) {
	f := newFakeHost(t, nil)
	h := newTestHost(t, f, nil)
	a, err := h.Start(ctxT(t), "s1", hostproto.StartPayload{ProfileID: "demo", StopGraceMS: 10}, newRecHandler(true))
	if err != nil {
		t.Fatal(err)
	}
	f.setRefuse(true)
	f.cut()
	waitInfo(t, h, "reconnecting", func(i HostInfo) bool { return i.State == StateReconnecting })
	exit := a.Stop()
	if exit.Code != -1 || !strings.Contains(exit.Stderr, "unreachable") || a.Lost() {
		t.Fatalf("Stop while unreachable: got %+v (lost %t)", exit, a.Lost())
	}
	select {
	case <-a.Done():
	default:
		t.Fatal("Done is open after Stop returned")
	}
	f.setRefuse(false)
	f.waitFor(t, "the queued stop", func() bool { return len(f.receivedLocked(hostproto.CommandStop)) == 1 })
	waitInfo(t, h, "the session gone", func(i HostInfo) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.agents) == 0
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.receivedLocked(hostproto.CommandStop)[0].cmd.ID != a.stopID {
		t.Fatalf("stop id: got %+v, want %s", f.receivedLocked(hostproto.CommandStop), a.stopID)
	}
}

// TestRefusedHandshake: a refused token or protocol version is the host's
// last error, with its code, and the daemon keeps retrying; a Start on
// that host fails at once with the refusal, whether it came before the
// refusal or after, instead of waiting out its ctx.
func TestRefusedHandshake(t *testing.T) {
	cases := []struct {
		name  string
		setup func(*fakeHost)
		mod   func(*HostConfig)
		want  errcode.Code
	}{
		{"wrong token", nil, func(c *HostConfig) { c.Token = "wrong" }, errcode.HostUnauthorized},
		{"no common version", func(f *fakeHost) {
			f.versions = hostproto.Versions{Min: hostproto.MaxVersion + 1, Max: hostproto.MaxVersion + 2}
		}, nil, errcode.HostProtocolMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHost(t, tc.setup)
			h := newTestHost(t, f, tc.mod)
			checkStartRefused(t, h, "s1", tc.want) // most likely before the first attempt ended
			info := waitInfo(t, h, "a refusal", func(i HostInfo) bool { return i.LastError != nil && errcode.Is(i.LastError, tc.want) })
			if info.State != StateReconnecting {
				t.Fatalf("state: got %s, want %s", info.State, StateReconnecting)
			}
			f.waitFor(t, "a retry", func() bool { return len(f.refusals) >= 2 })
			checkStartRefused(t, h, "s2", tc.want) // after it
			if info := h.Info(); len(info.Attached) != 0 {
				t.Fatalf("attached: got %v, want none", info.Attached)
			}
		})
	}
}

// TestSilentHostIsReconnected: a connection on which the host answers no
// ping is taken for broken, and the daemon reconnects.
func TestSilentHostIsReconnected(t *testing.T) {
	f := newFakeHost(t, func(f *fakeHost) { f.mute = true })
	h := newTestHost(t, f, func(c *HostConfig) { c.PingInterval, c.PingTimeout = 5*time.Millisecond, 5*time.Millisecond })
	info := waitInfo(t, h, "a ping timeout", func(i HostInfo) bool {
		return i.LastError != nil && strings.Contains(i.LastError.Error(), "timeout")
	})
	if info.State == StateConnected {
		t.Fatalf("state after a ping timeout: got %s", info.State)
	}
	f.mu.Lock()
	f.mute = false
	n := f.nconns
	f.mu.Unlock()
	f.waitFor(t, "a new connection", func() bool { return f.nconns > n })
	a := startAgent(t, h, "s1", newRecHandler(true))
	if a.Capabilities().AgentName != "fake-agent" {
		t.Fatalf("capabilities: got %+v", a.Capabilities())
	}
}

// checkStartRefused starts an agent on a host that refuses the daemon: the
// start fails with errcode.ExecutorUnavailable, caused by the refusal.
func checkStartRefused(t *testing.T, h *Host, sid string, want errcode.Code) {
	t.Helper()
	_, err := h.Start(ctxT(t), sid, hostproto.StartPayload{ProfileID: "demo"}, newRecHandler(true))
	if !errcode.Is(err, errcode.ExecutorUnavailable) || !errcode.Is(errors.Unwrap(err), want) {
		t.Fatalf("Start: got %v, want %s caused by %s", err, errcode.ExecutorUnavailable, want)
	}
}

// TestStartOnUnreachableHostSaysWhy: a Start waits for a host that cannot
// be reached (it may come back); when its ctx ends, or the host is
// declared lost meanwhile, it fails with errcode.ExecutorUnavailable and
// the connection error, not a bare deadline.
func TestStartOnUnreachableHostSaysWhy(t *testing.T) {
	cases := []struct {
		name string
		wait time.Duration // the Start's own deadline
		lose bool          // declare the host lost while the Start waits
		want string
	}{
		{"the start's deadline passes", 50 * time.Millisecond, false, "is not connected"},
		{"the host is lost", guardTimeout, true, "unreachable for more than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHost(t, nil)
			f.close() // nothing listens any more
			h := newTestHost(t, f, func(c *HostConfig) { c.LostAfter = time.Hour })
			waitInfo(t, h, "a failed attempt", func(i HostInfo) bool { return i.LastError != nil })
			ctx, cancel := context.WithTimeout(ctxT(t), tc.wait)
			defer cancel()
			done := make(chan error, 1)
			rh := newRecHandler(true)
			go func() {
				_, err := h.Start(ctx, "s1", hostproto.StartPayload{ProfileID: "demo"}, rh)
				done <- err
			}()
			// While it waits, the session hears why (and once per reason).
			rh.waitFor(t, "the reason the host is unreachable", func() bool { return len(rh.whys) > 0 })
			rh.mu.Lock()
			why := rh.whys[0]
			rh.mu.Unlock()
			if !strings.Contains(why, "is not connected") || !strings.Contains(why, "connect") {
				t.Fatalf("HostUnreachable: got %q, want it to say the host is not connected and why the connection failed", why)
			}
			if tc.lose {
				waitInfo(t, h, "the start waiting", func(i HostInfo) bool { return len(i.Attached) == 1 })
				h.mu.Lock()
				epoch := h.downEpoch
				h.mu.Unlock()
				h.declareLost(epoch) // as the LostAfter timer does
			}
			err := await(t, "the start", done)
			if !errcode.Is(err, errcode.ExecutorUnavailable) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "connect") {
				t.Fatalf("Start: got %v, want %s saying %q and why the connection failed", err, errcode.ExecutorUnavailable, tc.want)
			}
			if info := h.Info(); len(info.Attached) != 0 {
				t.Fatalf("attached: got %v, want none", info.Attached)
			}
		})
	}
}

// TestExitFoundOnReconnect: a host that restarted finds its sessions
// without their agents and reports each exit lost; the daemon learns it
// from the records its re-attach brings, racing the attach's result. Every
// pending prompt must fail as its agent's exit (classified disconnected,
// so that the turn is interrupted), never as a detached session (a turn
// failed): an agent is ended before its exit record is committed, so the
// attach result that finds the exit committed cannot forget an agent
// whose calls are still pending.
func TestExitFoundOnReconnect(t *testing.T) {
	const n = 24
	release := make(chan struct{})
	defer close(release)
	f := newFakeHost(t, func(f *fakeHost) { f.handle = heldPrompt(1, 0, release) })
	h := newTestHost(t, f, nil)
	agents := make([]*Agent, n)
	outs := make([]<-chan promptOutcome, n)
	for i := range agents {
		rh := newRecHandler(true)
		agents[i] = startAgent(t, h, fmt.Sprintf("s%d", i), rh)
		outs[i] = promptAsync(t, agents[i], "turn-1")
		rh.waitUpdates(t, 1)
	}
	f.setRefuse(true)
	f.cut()
	waitInfo(t, h, "reconnecting", func(i HostInfo) bool { return i.State == StateReconnecting })
	for i := range agents {
		f.emit(fmt.Sprintf("s%d", i), hostproto.RecordExit, hostproto.Exit{Code: -1, Lost: true})
	}
	f.setRefuse(false)

	for i, a := range agents {
		await(t, "the agent's exit", a.Done())
		if !a.Lost() {
			t.Errorf("s%d: got exit %+v not lost, want lost", i, a.Exit())
		}
		if o := await(t, "prompt", outs[i]); acp.Classify(o.err) != acp.ClassDisconnected {
			t.Errorf("s%d: pending prompt got %v (class %q), want the exit (class %q)", i, o.err, acp.Classify(o.err), acp.ClassDisconnected)
		}
	}
}
