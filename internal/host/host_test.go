package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/hostproto"
)

// TestPromptRecordsBeforeResult: a prompt's result comes after every
// update of its turn, and a session's records are gapless from 1.
func TestPromptRecordsBeforeResult(t *testing.T) {
	th := startHost(t, t.TempDir(), nil)
	d := th.mustDial()
	acpID := d.open("s1")
	before := len(d.recs["s1"])
	res := decode[hostproto.PromptResult](t, d.do(hostproto.CommandPrompt, "s1", prompt(acpID, "/stream 50")))
	if res.StopReason != "end_turn" {
		t.Fatalf("got stop reason %q, want end_turn", res.StopReason)
	}
	recs := d.recs["s1"]
	checkGapless(t, recs, 1)
	if got, want := texts(t, recs[before:]), chunks(50); !slices.Equal(got, want) {
		t.Fatalf("records before the prompt's result: got %q, want %q", got, want)
	}
}

// TestRecordKindsPerVersion: a daemon of this version gets the agent's
// lines as they are (acp_update), one of version 1 the update records it
// knows, converted by the host; the text is the same either way.
func TestRecordKindsPerVersion(t *testing.T) {
	cases := []struct {
		name     string
		versions hostproto.Versions
		want     hostproto.RecordKind
	}{
		{"version 2", hostproto.Versions{}, hostproto.RecordACPUpdate},
		{"version 1", hostproto.Versions{Min: 1, Max: 1}, hostproto.RecordUpdate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			th := startHost(t, t.TempDir(), nil)
			d, err := dialSocketVersions(t, th.sock, testToken, tc.versions)
			if err != nil {
				t.Fatal(err)
			}
			acpID := d.open("s1")
			before := len(d.recs["s1"])
			decode[hostproto.PromptResult](t, d.do(hostproto.CommandPrompt, "s1", prompt(acpID, "/stream 20")))
			recs := d.recs["s1"][before:]
			for _, r := range recs {
				if (r.Kind == hostproto.RecordUpdate || r.Kind == hostproto.RecordACPUpdate) && r.Kind != tc.want {
					t.Fatalf("update record %d: got kind %s, want %s", r.Offset, r.Kind, tc.want)
				}
			}
			if got, want := texts(t, recs), chunks(20); !slices.Equal(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

// TestExactlyOnceAcrossReconnect: a daemon that committed part of a turn
// and reconnects gets the rest once, and its resent prompt the turn's
// result, not a second turn.
func TestExactlyOnceAcrossReconnect(t *testing.T) {
	const window = 8
	th := startHost(t, t.TempDir(), func(c *host.Config) { c.SendWindow = window })
	a := th.mustDial()
	acpID := a.open("s1")
	setup := uint64(len(a.recs["s1"]))
	a.autoAck = false
	promptID := a.send("", hostproto.CommandPrompt, "s1", prompt(acpID, "/stream 100"))
	// The window lets exactly 8 records out before an ack.
	for len(a.recs["s1"]) < int(setup)+window {
		a.next()
	}
	committed := setup + window/2
	first := slices.Clone(a.recs["s1"][:committed])
	a.close()

	b := th.mustDial()
	if !slices.Contains(b.welcome.Sessions, "s1") {
		t.Fatalf("welcome lists sessions %q, want s1", b.welcome.Sessions)
	}
	att := decode[hostproto.AttachResult](t, b.do(hostproto.CommandAttach, "s1", hostproto.AttachPayload{From: committed}))
	if att.NextOffset <= committed {
		t.Fatalf("attach: next offset %d, want past %d", att.NextOffset, committed)
	}
	if n := len(b.recs["s1"]); n != 0 {
		t.Fatalf("%d records arrived before the attach result, want it first", n)
	}
	res := decode[hostproto.PromptResult](t, b.await(b.send(promptID, hostproto.CommandPrompt, "s1", prompt(acpID, "/stream 100"))))
	if res.StopReason != "end_turn" {
		t.Fatalf("resent prompt: got stop reason %q, want end_turn", res.StopReason)
	}
	second := b.recs["s1"]
	checkGapless(t, second, committed+1)
	all := append(first, second...)
	if got, want := texts(t, all[setup:]), chunks(100); !slices.Equal(got, want) {
		t.Fatalf("turn across the reconnect: got %d chunks %q, want each of 100 once, in order", len(got), got)
	}

	// Once more after the turn: the first result again, and no new turn.
	n := len(b.recs["s1"])
	again := decode[hostproto.PromptResult](t, b.await(b.send(promptID, hostproto.CommandPrompt, "s1", prompt(acpID, "/stream 100"))))
	if again != res || len(b.recs["s1"]) != n {
		t.Fatalf("prompt resent after its end: got %+v and %d new records, want %+v and none", again, len(b.recs["s1"])-n, res)
	}
}

// TestPermissionPendingAcrossDisconnect: a permission request outlives
// the daemon connection it was sent on, and the next daemon answers it.
func TestPermissionPendingAcrossDisconnect(t *testing.T) {
	th := startHost(t, t.TempDir(), nil)
	a := th.mustDial()
	acpID := a.open("s1")
	promptID := a.send("", hostproto.CommandPrompt, "s1", prompt(acpID, "/permission"))
	var req hostproto.PermissionRequest
	for req.RequestID == "" {
		if r, ok := a.next().(*hostproto.Record); ok && r.Kind == hostproto.RecordRequest {
			if err := json.Unmarshal(r.Payload, &req); err != nil {
				t.Fatal(err)
			}
		}
	}
	last := a.recs["s1"][len(a.recs["s1"])-1].Offset
	a.close()

	b := th.mustDial()
	st := decode[hostproto.StatusResult](t, b.do(hostproto.CommandStatus, "", nil))
	if len(st.Sessions) != 1 || !st.Sessions[0].Running || st.Sessions[0].Exited || st.Sessions[0].PID <= 0 || st.Sessions[0].ProfileID != "demo" {
		t.Fatalf("status with a pending permission: got %+v, want s1 running on demo with a pid", st.Sessions)
	}
	att := decode[hostproto.AttachResult](t, b.do(hostproto.CommandAttach, "s1", hostproto.AttachPayload{From: last}))
	if len(att.Pending) != 1 || att.Pending[0].RequestID != req.RequestID || att.Pending[0].AcpSessionID != acpID {
		t.Fatalf("attach: got pending %+v, want the request %s", att.Pending, req.RequestID)
	}
	if att.Capabilities.AgentName != "tether-demo-agent" || att.PID != st.Sessions[0].PID {
		t.Fatalf("attach: got %+v, want the demo agent's capabilities and pid %d", att, st.Sessions[0].PID)
	}
	decode[struct{}](t, b.do(hostproto.CommandPermissionAnswer, "s1", hostproto.PermissionAnswerPayload{RequestID: req.RequestID, OptionID: "allow_once"}))
	res := decode[hostproto.PromptResult](t, b.await(b.send(promptID, hostproto.CommandPrompt, "s1", prompt(acpID, "/permission"))))
	if res.StopReason != "end_turn" {
		t.Fatalf("got stop reason %q, want end_turn", res.StopReason)
	}
	if got := texts(t, b.recs["s1"]); !slices.Contains(got, "Permission outcome: selected allow_once") {
		t.Fatalf("got chunks %q, want the agent to report the answer", got)
	}
	if r := b.do(hostproto.CommandPermissionAnswer, "s1", hostproto.PermissionAnswerPayload{RequestID: req.RequestID, OptionID: "allow_once"}); r.Error == nil || r.Error.Code != errcode.PermissionNotFound {
		t.Fatalf("second answer: got %+v, want %s", r.Error, errcode.PermissionNotFound)
	}
	st = decode[hostproto.StatusResult](t, b.do(hostproto.CommandStatus, "", nil))
	if st.Sessions[0].Running {
		t.Fatalf("status after the turn: got %+v, want not running", st.Sessions[0])
	}
}

// TestAgentExit: the agent's end is the session's last record; once the
// daemon acknowledges it the host drops the session.
func TestAgentExit(t *testing.T) {
	th := startHost(t, t.TempDir(), nil)
	d := th.mustDial()
	acpID := d.open("crash")
	if r := d.do(hostproto.CommandPrompt, "crash", prompt(acpID, "/crash")); r.Error == nil {
		t.Fatalf("prompt of a crashing agent: got %s, want an error", r.Result)
	}
	for recs := d.recs["crash"]; len(recs) == 0 || recs[len(recs)-1].Kind != hostproto.RecordExit; recs = d.recs["crash"] {
		d.next()
	}
	recs := d.recs["crash"]
	if e := exitOf(t, recs[len(recs)-1]); e.Code != 3 || e.Lost {
		t.Fatalf("got exit %+v, want code 3", e)
	}
	if got := texts(t, recs); !slices.Contains(got, "crashing…") {
		t.Fatalf("got chunks %q, want the agent's last words before its exit", got)
	}

	acpID = d.open("stopped")
	d.autoAck = false // the session stays until its exit is acknowledged
	res := d.do(hostproto.CommandStop, "stopped", nil)
	recs = d.recs["stopped"]
	if len(recs) == 0 || recs[len(recs)-1].Kind != hostproto.RecordExit {
		t.Fatalf("records before the stop's result: %s, want the exit last", offsets(recs))
	}
	if got, want := decode[hostproto.StopResult](t, res).Exit, exitOf(t, recs[len(recs)-1]); got != want {
		t.Fatalf("stop: got %+v, want the exit record's %+v", got, want)
	}
	if r := d.do(hostproto.CommandPrompt, "stopped", prompt(acpID, "hello")); r.Error == nil || r.Error.Code != errcode.InvalidState {
		t.Fatalf("prompt after stop: got %+v, want %s", r.Error, errcode.InvalidState)
	}

	// Both exits are acknowledged: the sessions go.
	d.ack("stopped", recs[len(recs)-1].Offset)
	waitFor(t, "the ended sessions to be dropped", func() bool {
		return len(decode[hostproto.StatusResult](t, d.do(hostproto.CommandStatus, "", nil)).Sessions) == 0
	})
	if r := d.do(hostproto.CommandAttach, "crash", hostproto.AttachPayload{}); r.Error == nil || r.Error.Code != errcode.HostSessionUnknown {
		t.Fatalf("attach of a dropped session: got %+v, want %s", r.Error, errcode.HostSessionUnknown)
	}
}

// TestBackPressure: a full outbox holds the agent back; nothing is
// dropped, and the turn completes once the daemon acknowledges.
func TestBackPressure(t *testing.T) {
	th := startHost(t, t.TempDir(), func(c *host.Config) { c.Outbox.MaxBytes = 2048 })
	d := th.mustDial()
	acpID := d.open("s1")
	before := len(d.recs["s1"])
	d.autoAck = false
	id := d.send("", hostproto.CommandPrompt, "s1", prompt(acpID, "/stream 300"))
	waitFor(t, "the outbox to refuse a record", func() bool { return host.Blocked(th.h, "s1") > 0 })
	d.autoAck = true
	for _, r := range d.recs["s1"][before:] {
		d.ack("s1", r.Offset)
	}
	decode[hostproto.PromptResult](t, d.await(id))
	checkGapless(t, d.recs["s1"], 1)
	if got, want := texts(t, d.recs["s1"][before:]), chunks(300); !slices.Equal(got, want) {
		t.Fatalf("got %d chunks, want all 300 once, in order: %q", len(got), got)
	}
}

// TestRefusals: a wrong token is refused without disturbing the daemon
// connected; an unknown command kind and an unknown session get error
// results on a connection that goes on.
func TestRefusals(t *testing.T) {
	th := startHost(t, t.TempDir(), nil)
	d := th.mustDial()
	if _, err := th.dial("wrong"); !errcode.Is(err, errcode.HostUnauthorized) {
		t.Fatalf("wrong token: got %v, want %s", err, errcode.HostUnauthorized)
	}
	cases := []struct {
		name string
		kind hostproto.CommandKind
		sid  string
		want errcode.Code
	}{
		{"unknown kind", "frobnicate", "s1", errcode.InvalidRequest},
		{"attach unknown session", hostproto.CommandAttach, "nope", errcode.HostSessionUnknown},
		{"prompt unknown session", hostproto.CommandPrompt, "nope", errcode.HostSessionUnknown},
		{"start with a path for an id", hostproto.CommandStart, "../x", errcode.InvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if r := d.do(tc.kind, tc.sid, nil); r.Error == nil || r.Error.Code != tc.want {
				t.Fatalf("got %+v, want %s", r.Error, tc.want)
			}
		})
	}
	if r := d.do(hostproto.CommandStart, "s1", hostproto.StartPayload{ProfileID: "no-such-agent", Cwd: t.TempDir()}); r.Error == nil || r.Error.Code != errcode.AgentProfileNotFound {
		t.Fatalf("start of an unknown profile: got %+v, want %s", r.Error, errcode.AgentProfileNotFound)
	}
	if st := decode[hostproto.StatusResult](t, d.do(hostproto.CommandStatus, "", nil)); len(st.Sessions) != 0 || st.StartedAt == "" {
		t.Fatalf("status: got %+v, want no sessions and a start time", st)
	}
}

// TestSilentDaemonDropped: a connection that answers no ping within the
// ping timeout is closed, and the host takes the next one.
func TestSilentDaemonDropped(t *testing.T) {
	th := startHost(t, t.TempDir(), func(c *host.Config) {
		c.PingInterval, c.PingTimeout = 20*time.Millisecond, 200*time.Millisecond
	})
	nc, err := net.Dial("unix", th.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	conn, _, err := hostproto.Client(context.Background(), nc, hostproto.ClientConfig{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	for { // pings arrive, unanswered, until the host gives up
		m, err := conn.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("got %v, want the host to close the connection", err)
		}
		if _, ok := m.(*hostproto.Ping); !ok {
			t.Fatalf("got a %s, want only pings", m.Type())
		}
	}
	d := th.mustDial()
	decode[hostproto.StatusResult](t, d.do(hostproto.CommandStatus, "", nil))
}

// TestProtocolVersions: a host told to speak other versions refuses a
// daemon with none in common, with the code that says so.
func TestProtocolVersions(t *testing.T) {
	th := startHost(t, t.TempDir(), func(c *host.Config) {
		c.Versions = hostproto.Versions{Min: hostproto.MaxVersion + 1, Max: hostproto.MaxVersion + 2}
	})
	if _, err := th.dial(testToken); !errcode.Is(err, errcode.HostProtocolMismatch) {
		t.Fatalf("got %v, want %s", err, errcode.HostProtocolMismatch)
	}
}
