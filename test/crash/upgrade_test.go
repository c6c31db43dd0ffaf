package crash_test

import "testing"

// TestUpgradeSpeaksTheOlderHostsVersion plays an upgrade: the daemon of
// this build (host protocol versions 1..4) against a host that speaks
// only 1, the previous build's version (it sends the agent's updates as
// decoded update records, not as the agent's lines), negotiates 1, and a
// turn on that host runs across a kill -9 of the daemon and its restart
// with nothing interrupted, lost or repeated.
func TestUpgradeSpeaksTheOlderHostsVersion(t *testing.T) {
	w := newWorld(t, profile{id: "demo"})
	old := w.newRemoteHost("old", freeAddr(t), nil, "--protocol-versions", "1..1")
	old.start()
	w.setHosts(old.pinned())
	w.start()
	checkVersion := func(when string) {
		t.Helper()
		h := w.waitHost("old", "connected", hostState("connected"))
		if h["protocolVersion"] != float64(1) {
			t.Fatalf("%s: protocolVersion got %v, want 1", when, h["protocolVersion"])
		}
	}
	checkVersion("first start")

	sid, _ := w.createSessionOn("demo", "old")
	fol := w.follow(sid)
	w.prompt(sid, streamPrompt, "upgrade")
	w.waitSeen(fol, "the turn's first chunk", isChunkOf(t, "upgrade"))
	w.kill9()
	for _, f := range fol.seen() {
		if f.Event == "turn.completed" {
			t.Fatal("the turn completed before the daemon was killed: nothing ran across the restart")
		}
	}
	w.start()
	checkVersion("after the restart")
	if got := w.waitTurn(sid, "upgrade"); got["state"] != "completed" {
		t.Fatalf("turn across the restart: got %v, want completed", got)
	}
	log := w.replay(sid)
	checkNoInterruption(t, log)
	checkStreamText(t, "upgrade", w.agentText(sid)["upgrade"])
	w.checkFollowed(fol, sid)
}
