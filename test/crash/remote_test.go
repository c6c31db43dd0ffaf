package crash_test

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// pingFlags make the daemon notice a silent host connection (a cut link)
// within a few seconds rather than the default twenty.
var pingFlags = []string{"--host-ping-interval", "500ms", "--host-ping-timeout", "1500ms"}

// isChunkOf matches the first agent text of turn pid (not the user's
// message, which is recorded before the agent has the prompt).
func isChunkOf(t *testing.T, pid string) func(frame) bool {
	return func(f frame) bool {
		if f.Event != "message.added" && f.Event != "message.chunk" {
			return false
		}
		p := f.JSON(t)
		return p["promptId"] == pid && p["role"] == "agent"
	}
}

// netnsWorld is a world whose daemon (started with pingFlags and extra)
// is connected to a remote host "far" in a network namespace of its own,
// ns, reached over a veth pair whose link the test cuts.
func netnsWorld(t *testing.T, extra ...string) (*world, *netns) {
	t.Helper()
	ns := newNetns(t)
	w := newWorld(t, profile{id: "demo"})
	far := w.newRemoteHost("far", net.JoinHostPort(ns.IP, "7778"), ns)
	far.start()
	w.setHosts(far.pinned())
	w.start(append(slices.Clone(pingFlags), extra...)...)
	w.waitHost("far", "connected", hostState("connected"))
	return w, ns
}

// TestRemoteSurvivesNetworkCut runs a session on a remote host in its own
// network namespace, reached over a veth pair with TLS (a pinned
// certificate) and a token, and cuts the link for 10 s in the middle of a
// streaming turn: the daemon shows the host reconnecting, the turn goes on
// on the host and is never interrupted, and once the link is back the
// daemon catches up: the transcript holds every chunk once, in order, and
// an SSE client sees the log without a gap or a duplicate.
func TestRemoteSurvivesNetworkCut(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	w, ns := netnsWorld(t)

	sid, _ := w.createSessionOn("demo", "far")
	if ex := w.get("/session/" + sid)["executor"].(map[string]any); ex["runtime"] != "remote" || ex["host"] != "far" {
		t.Fatalf("executor: got %v, want runtime remote on host far", ex)
	}
	fol := w.follow(sid)
	w.prompt(sid, streamPrompt, "cut")
	w.waitSeen(fol, "the turn's first chunk", isChunkOf(t, "cut"))

	ns.SetLink(false)
	cutAt := time.Now()
	// The daemon gives up on the silent connection and retries; the
	// session's executor says the host is being reconnected to.
	w.waitHost("far", "reconnecting", hostState("reconnecting"))
	w.waitFor("the session's executor to show reconnecting", func() bool {
		return w.status(sid)["executorStatus"] == "reconnecting"
	})
	time.Sleep(time.Until(cutAt.Add(10 * time.Second))) // the cut lasts 10 s
	// The daemon cannot have heard the turn's end: it runs on, on the host.
	if got := w.turn(sid, "cut")["state"]; got != "running" {
		t.Fatalf("turn during the cut: got %v, want running (the cut must land mid-turn, and a cut interrupts nothing)", got)
	}
	ns.SetLink(true)

	w.waitHost("far", "connected again", hostState("connected"))
	if got := w.waitTurn(sid, "cut"); got["state"] != "completed" {
		t.Fatalf("turn after the cut: got %v, want completed", got)
	}
	w.waitFor("the session's executor to be ready again", func() bool {
		return w.status(sid)["executorStatus"] == "ready"
	})
	log := w.replay(sid)
	checkNoInterruption(t, log)
	checkStreamText(t, "cut", w.agentText(sid)["cut"])
	w.checkFollowed(fol, sid)
}

// TestRemoteRefusals: a host reached with the wrong token, one whose
// certificate is not the pinned one, and one that speaks no protocol
// version the daemon speaks are each refused with an error that says so
// in GET /executors, and a session created on such a host fails its start
// with that error instead of waiting; on a host that cannot be reached at
// all the start fails, saying why, once --host-lost-after has passed. A
// host verified by a CA file (its own certificate) serves a turn
// meanwhile.
func TestRemoteRefusals(t *testing.T) {
	w := newWorld(t, profile{id: "demo"})
	good := w.newRemoteHost("good", freeAddr(t), nil)
	good.start()
	newer := w.newRemoteHost("newer", freeAddr(t), nil, "--protocol-versions", "3..3")
	newer.start()
	otherCert, _, _ := testbin.SelfSigned(t)
	wrongToken := good.dir + "/wrong-token"
	writeToken(t, wrongToken)
	nobody := freeAddr(t) // nothing listens there
	w.setHosts(
		hostEntry{Name: "down", URL: "tls://" + nobody, TokenFile: good.tokenFile, PinSHA256: good.pin()},
		hostEntry{Name: "good", URL: good.url(), TokenFile: good.tokenFile, CAFile: good.cert, ServerName: "localhost"},
		hostEntry{Name: "badtoken", URL: good.url(), TokenFile: wrongToken, PinSHA256: good.pin()},
		hostEntry{Name: "badcert", URL: good.url(), TokenFile: good.tokenFile, PinSHA256: certPin(t, otherCert)},
		newer.pinned(),
	)
	// A host that cannot be reached is given 3 s before its starts fail.
	w.start("--host-protocol-versions", "1..1", "--host-lost-after", "3s")

	w.waitHost("good", "connected", hostState("connected"))
	cases := []struct {
		host, code, message string
	}{
		{"badtoken", "host_unauthorized", "wrong token"},
		{"badcert", "host_certificate_rejected", "not the pinned " + certPin(t, otherCert)},
		{"newer", "host_protocol_mismatch", "daemon speaks protocol versions 1..1, host 3..3"},
		{"down", "executor_unavailable", "connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			h := w.waitHost(tc.host, "refused with "+tc.code, func(h map[string]any) bool { return h["errorCode"] == tc.code })
			if msg, _ := h["errorMessage"].(string); !strings.Contains(msg, tc.message) {
				t.Errorf("errorMessage: got %q, want it to say %q", msg, tc.message)
			}
			if h["state"] == "connected" {
				t.Errorf("state: got connected, want a host that was refused not to be")
			}
			// A session there fails its start with the reason, at once.
			sid, _ := w.createSessionOn("demo", tc.host)
			var st map[string]any
			w.waitFor("the session's start to fail", func() bool {
				st = w.status(sid)
				return st["executorStatus"] == "error"
			})
			if st["errorCode"] != "executor_unavailable" || !strings.Contains(st["errorMessage"].(string), tc.message) {
				t.Errorf("status: got errorCode %v, errorMessage %q, want executor_unavailable saying %q", st["errorCode"], st["errorMessage"], tc.message)
			}
			// So does a prompt, which starts the agent again.
			w.prompt(sid, "/echo hi", "p-"+tc.host)
			turn := w.waitTurn(sid, "p-"+tc.host)
			if e, _ := turn["error"].(map[string]any); turn["state"] != "failed" || e["code"] != "executor_unavailable" {
				t.Errorf("turn: got %v, want failed with executor_unavailable", turn)
			}
		})
	}

	// tetherd host ls says the same.
	out := w.hostLs()
	for _, want := range []string{"(host_unauthorized)", "(host_certificate_rejected)", "(host_protocol_mismatch)"} {
		if !strings.Contains(out, want) {
			t.Errorf("tetherd host ls: got\n%s\nwant a host %s", out, want)
		}
	}

	sid, _ := w.createSessionOn("demo", "good")
	w.prompt(sid, "/echo over a CA-verified connection", "p-good")
	if got := w.waitTurn(sid, "p-good"); got["state"] != "completed" {
		t.Fatalf("turn on the CA-verified host: got %v, want completed", got)
	}
}

// TestRemoteUnreachableSaysWhy: a session whose remote host cannot be
// reached yet says why while it waits (still starting, with the
// connection's error), and starts once the host is up, the reason gone.
func TestRemoteUnreachableSaysWhy(t *testing.T) {
	w := newWorld(t, profile{id: "demo"})
	late := w.newRemoteHost("late", freeAddr(t), nil)
	w.setHosts(late.pinned())
	w.start()
	sid, _ := w.createSessionOn("demo", "late")
	var st map[string]any
	w.waitFor("the waiting session to say why", func() bool {
		st = w.status(sid)
		msg, _ := st["errorMessage"].(string)
		return strings.Contains(msg, "connection refused")
	})
	if st["executorStatus"] != "starting" || st["errorCode"] != "executor_unavailable" {
		t.Errorf("while the host is down: got executorStatus %v, errorCode %v; want starting, executor_unavailable", st["executorStatus"], st["errorCode"])
	}
	late.start()
	w.waitFor("the session to start once its host is up", func() bool {
		st = w.status(sid)
		return st["executorStatus"] == "ready"
	})
	if msg, _ := st["errorMessage"].(string); msg != "" {
		t.Errorf("once ready: got errorMessage %q, want none", msg)
	}
	w.prompt(sid, "/echo hi", "p1")
	if got := w.waitTurn(sid, "p1"); got["state"] != "completed" {
		t.Fatalf("turn: got %v, want completed", got)
	}
}
