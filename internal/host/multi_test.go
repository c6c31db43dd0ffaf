package host_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/workspace"
)

// TestDaemonsSideBySide: two daemons connected at once, each with a
// session of its own, both streaming: neither connection replaces the
// other, each gets its own session's records and no other's, and every
// connection lists every session.
func TestDaemonsSideBySide(t *testing.T) {
	cases := []struct {
		name       string
		genA, genB uint64
	}{
		{"unfenced daemons", 0, 0},
		{"a generation each", 3, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			th := startHost(t, t.TempDir(), nil)
			a, b := th.mustDial(), th.mustDial()
			a.gen, b.gen = tc.genA, tc.genB
			acpA, acpB := a.open("s1"), b.open("s2")
			fromA, fromB := len(a.recs["s1"]), len(b.recs["s2"])
			idA := a.send("", hostproto.CommandPrompt, "s1", prompt(acpA, "/stream 300"))
			idB := b.send("", hostproto.CommandPrompt, "s2", prompt(acpB, "/stream 300"))
			decode[hostproto.PromptResult](t, a.await(idA))
			decode[hostproto.PromptResult](t, b.await(idB))
			for _, c := range []struct {
				name string
				d    *daemon
				own  string
				from int
			}{{"a", a, "s1", fromA}, {"b", b, "s2", fromB}} {
				checkGapless(t, c.d.recs[c.own], 1)
				if got, want := texts(t, c.d.recs[c.own][c.from:]), chunks(300); !slices.Equal(got, want) {
					t.Errorf("daemon %s: got %d chunks of %s, want all 300 once, in order", c.name, len(got), c.own)
				}
				if len(c.d.recs) != 1 {
					t.Errorf("daemon %s: got records of sessions %v, want only %s's", c.name, slices.Collect(mapKeys(c.d.recs)), c.own)
				}
				if st := decode[hostproto.StatusResult](t, c.d.do(hostproto.CommandStatus, "", nil)); len(st.Sessions) != 2 {
					t.Errorf("daemon %s: status lists %d sessions, want both", c.name, len(st.Sessions))
				}
			}
			if c := th.mustDial(); !slices.Contains(c.welcome.Sessions, "s1") || !slices.Contains(c.welcome.Sessions, "s2") {
				t.Errorf("a third daemon's welcome lists %q, want s1 and s2", c.welcome.Sessions)
			}
		})
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestSessionMovesToNewerGeneration: daemon B attaches, with a newer
// generation, a session daemon A started and partly committed. B gets
// every record after its attach's offset exactly once and everything
// after; A gets nothing more of it, and whatever A still sends for it
// (its commands, a command it resends, its acknowledgements) is refused
// or ignored and never reaches the agent.
func TestSessionMovesToNewerGeneration(t *testing.T) {
	th := startHost(t, t.TempDir(), nil)
	a := th.mustDial()
	a.gen = 1
	acpID := a.open("s1")
	a.autoAck = false
	promptID := a.send("", hostproto.CommandPrompt, "s1", prompt(acpID, "/stream 10"))
	decode[hostproto.PromptResult](t, a.await(promptID))
	sentA := a.recs["s1"]
	lastA := sentA[len(sentA)-1].Offset
	committed := lastA - 4 // A committed all but its turn's last 4 records
	a.ack("s1", committed)

	b := th.mustDial()
	b.gen = 2
	decode[hostproto.AttachResult](t, b.do(hostproto.CommandAttach, "s1", hostproto.AttachPayload{From: committed}))
	bPrompt := b.send("", hostproto.CommandPrompt, "s1", prompt(acpID, "/permission"))
	var req hostproto.PermissionRequest
	for req.RequestID == "" {
		if r, ok := b.next().(*hostproto.Record); ok && r.Kind == hostproto.RecordRequest {
			if err := json.Unmarshal(r.Payload, &req); err != nil {
				t.Fatal(err)
			}
		}
	}

	refused := []struct {
		name    string
		id      string
		kind    hostproto.CommandKind
		payload any
	}{
		{"a new prompt", "", hostproto.CommandPrompt, prompt(acpID, "/echo stale")},
		{"its finished prompt, resent", promptID, hostproto.CommandPrompt, prompt(acpID, "/stream 10")},
		{"cancel", "", hostproto.CommandCancel, hostproto.SessionPayload{AcpSessionID: acpID}},
		{"permission answer", "", hostproto.CommandPermissionAnswer, hostproto.PermissionAnswerPayload{RequestID: req.RequestID, OptionID: "allow_once"}},
		{"set mode", "", hostproto.CommandSetMode, hostproto.SetModePayload{AcpSessionID: acpID, ModeID: "code"}},
		{"attach", "", hostproto.CommandAttach, hostproto.AttachPayload{From: lastA}},
		{"workspace", "", hostproto.CommandWorkspace, workspace.Request{Root: t.TempDir(), Op: workspace.OpList}},
		{"start", "", hostproto.CommandStart, hostproto.StartPayload{ProfileID: agents.DemoID, Cwd: t.TempDir()}},
		{"stop", "", hostproto.CommandStop, nil},
	}
	for _, tc := range refused {
		if r := a.await(a.send(tc.id, tc.kind, "s1", tc.payload)); r.Error == nil || r.Error.Code != errcode.HostSessionFenced {
			t.Errorf("A's %s after the move: got %+v (%s), want %s", tc.name, r.Error, r.Result, errcode.HostSessionFenced)
		}
	}
	// A's acknowledgement of records it never had is ignored; the status
	// after it is read after it.
	a.ack("s1", lastA+1000)
	decode[hostproto.StatusResult](t, a.do(hostproto.CommandStatus, "", nil))
	if got := host.AckWanted(th.h, "s1"); got >= lastA+1000 {
		t.Fatalf("acknowledged offset after A's ack: got %d, want A's ignored", got)
	}

	// The request was A's to answer no more: B's answer reaches it.
	decode[struct{}](t, b.do(hostproto.CommandPermissionAnswer, "s1", hostproto.PermissionAnswerPayload{RequestID: req.RequestID, OptionID: "allow_once"}))
	decode[hostproto.PromptResult](t, b.await(bPrompt))
	decode[hostproto.PromptResult](t, b.do(hostproto.CommandPrompt, "s1", prompt(acpID, "/stream 20")))
	recsB := b.recs["s1"]
	checkGapless(t, recsB, committed+1)
	for i, r := range sentA[committed:] {
		if got := recsB[i]; got.Kind != r.Kind || string(got.Payload) != string(r.Payload) {
			t.Fatalf("B's record %d: got %s %s, want A's uncommitted %s %s", r.Offset, got.Kind, got.Payload, r.Kind, r.Payload)
		}
	}
	if got := texts(t, recsB); !slices.Contains(got, "Permission outcome: selected allow_once") || !slices.Equal(got[len(got)-20:], chunks(20)) {
		t.Fatalf("B's chunks: got %q, want the answer's outcome, then 20 chunks", got)
	}
	decode[hostproto.StatusResult](t, a.do(hostproto.CommandStatus, "", nil))
	if got := a.recs["s1"]; got[len(got)-1].Offset != lastA {
		t.Fatalf("A's records: got %s, want none after %d, where B took the session", offsets(got[len(sentA):]), lastA)
	}
}

// TestGenerationKeptAcrossRestart: a host restarted (cleanly) still
// refuses what is older than the newest generation a session accepted.
func TestGenerationKeptAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	th := startHost(t, dir, nil)
	a := th.mustDial()
	a.gen = 5
	a.open("s1")
	th.stop()

	th = startHost(t, dir, nil)
	d := th.mustDial()
	cases := []struct {
		name    string
		gen     uint64
		kind    hostproto.CommandKind
		payload any
		want    errcode.Code // "" for success
	}{
		{"attach of an older generation", 4, hostproto.CommandAttach, hostproto.AttachPayload{}, errcode.HostSessionFenced},
		{"attach of an unfenced daemon", 0, hostproto.CommandAttach, hostproto.AttachPayload{}, errcode.HostSessionFenced},
		{"start of an older generation", 4, hostproto.CommandStart, hostproto.StartPayload{ProfileID: agents.DemoID, Cwd: t.TempDir()}, errcode.HostSessionFenced},
		{"stop of an older generation", 4, hostproto.CommandStop, nil, errcode.HostSessionFenced},
		{"attach of the same generation", 5, hostproto.CommandAttach, hostproto.AttachPayload{}, ""},
	}
	for _, tc := range cases {
		d.gen = tc.gen
		r := d.do(tc.kind, "s1", tc.payload)
		switch {
		case tc.want == "" && r.Error != nil:
			t.Errorf("%s: got %s: %s, want success", tc.name, r.Error.Code, r.Error.Message)
		case tc.want != "" && (r.Error == nil || r.Error.Code != tc.want):
			t.Errorf("%s: got %+v, want %s", tc.name, r.Error, tc.want)
		}
	}
	recs := readToExit(d, "s1")
	if e := exitOf(t, recs[len(recs)-1]); e.Lost {
		t.Fatalf("exit after a clean stop: got %+v, want the agent's own", e)
	}
}

// TestVersion3DaemonReconnects: a daemon of protocol version 3 (no
// generations) that reconnects while its previous connection still
// hangs: the new connection's attach takes the session's records, the
// turn is whole and exactly once across both, and the hung connection
// goes at its ping timeout.
func TestVersion3DaemonReconnects(t *testing.T) {
	th := startHost(t, t.TempDir(), func(c *host.Config) {
		c.PingInterval, c.PingTimeout = 20*time.Millisecond, 500*time.Millisecond
	})
	v3 := hostproto.Versions{Min: 1, Max: 3}
	a, err := dialSocketVersions(t, th.sock, testToken, v3)
	if err != nil {
		t.Fatal(err)
	}
	if a.conn.Version() != 3 {
		t.Fatalf("negotiated version %d, want 3", a.conn.Version())
	}
	acpID := a.open("s1")
	setup := len(a.recs["s1"])
	a.autoAck = false
	promptID := a.send("", hostproto.CommandPrompt, "s1", prompt(acpID, "/stream 200"))
	for len(a.recs["s1"]) < setup+10 {
		a.next()
	}
	committed := a.recs["s1"][setup+4].Offset
	a.ack("s1", committed)
	a.mute.Store(true) // hangs: reads, answers nothing

	b, err := dialSocketVersions(t, th.sock, testToken, v3)
	if err != nil {
		t.Fatal(err)
	}
	decode[hostproto.AttachResult](t, b.do(hostproto.CommandAttach, "s1", hostproto.AttachPayload{From: committed}))
	decode[hostproto.PromptResult](t, b.await(b.send(promptID, hostproto.CommandPrompt, "s1", prompt(acpID, "/stream 200"))))
	checkGapless(t, b.recs["s1"], committed+1)
	all := append(slices.Clone(a.recs["s1"][:committed]), b.recs["s1"]...)
	if got, want := texts(t, all[setup:]), chunks(200); !slices.Equal(got, want) {
		t.Fatalf("turn across the reconnect: got %d chunks, want each of 200 once, in order", len(got))
	}
	<-a.done // the host closed the hung connection
	decode[hostproto.StatusResult](t, b.do(hostproto.CommandStatus, "", nil))
}
