package demoagent_test

import (
	"errors"
	"slices"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// TestForkCopiesTheConversation: session/fork (unstable) gives a new
// session, in another directory, the stored session's conversation (a
// load after a restart replays it), says so on its first turn only, and
// leaves the stored session as it was.
func TestForkCopiesTheConversation(t *testing.T) {
	state, cwd, other := t.TempDir(), t.TempDir(), t.TempDir()
	h := startAgent(t, state)
	if caps := h.initialize(acp.ClientCapabilities{}); caps.AgentCapabilities.SessionCapabilities.Fork == nil {
		t.Fatal("initialize: want sessionCapabilities.fork advertised")
	}
	sid := h.newSession(cwd)
	h.mustPrompt(sid, "/echo one", acp.StopReasonEndTurn)
	h.mustPrompt(sid, "/echo two", acp.StopReasonEndTurn)
	resp, err := h.conn.UnstableForkSession(h.ctx(), acp.UnstableForkSessionRequest{SessionId: sid, Cwd: other})
	if err != nil {
		t.Fatalf("session/fork: %v", err)
	}
	fid := resp.SessionId
	if fid == "" || fid == sid {
		t.Fatalf("session/fork: got id %q, want a new one (origin %q)", fid, sid)
	}
	h.mustPrompt(fid, "/echo three", acp.StopReasonEndTurn)
	h.mustPrompt(fid, "/echo four", acp.StopReasonEndTurn)
	h.mustPrompt(sid, "/echo origin", acp.StopReasonEndTurn)
	if got, want := reply(h.client.updatesFor(fid)), "[forked with 4 history entries] threefour"; got != want {
		t.Errorf("the fork's replies: got %q, want %q", got, want)
	}
	if got, want := reply(h.client.updatesFor(sid)), "onetwoorigin"; got != want {
		t.Errorf("the origin's replies: got %q, want %q", got, want)
	}
	h.stop()

	second := startAgent(t, state)
	second.initialize(acp.ClientCapabilities{})
	if _, err := second.conn.LoadSession(second.ctx(), acp.LoadSessionRequest{SessionId: fid, Cwd: other, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load of the fork: %v", err)
	}
	var got []string
	for _, u := range conversation(second.client.updatesFor(fid)) {
		got = append(got, text(u))
	}
	want := []string{"user_message_chunk:/echo one", "agent_message_chunk:one", "user_message_chunk:/echo two", "agent_message_chunk:two",
		"user_message_chunk:/echo three", "agent_message_chunk:[forked with 4 history entries] ", "agent_message_chunk:three",
		"user_message_chunk:/echo four", "agent_message_chunk:four"}
	if !slices.Equal(got, want) {
		t.Errorf("the fork's replay: got %q, want %q", got, want)
	}
}

// TestForkRefusals: without the capability session/fork is not found;
// an unknown session is the configured unknown-session error.
func TestForkRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		sid   acp.SessionId
		code  int
	}{
		{name: "no fork", flags: []string{"--no-fork"}, sid: "demo-0000000000000000", code: -32601},
		{name: "unknown session", sid: "demo-0000000000000000", code: -32002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startAgent(t, t.TempDir(), tc.flags...)
			caps := h.initialize(acp.ClientCapabilities{})
			if advertised := caps.AgentCapabilities.SessionCapabilities.Fork != nil; advertised == slices.Contains(tc.flags, "--no-fork") {
				t.Errorf("fork advertised: got %v with flags %v", advertised, tc.flags)
			}
			_, err := h.conn.UnstableForkSession(h.ctx(), acp.UnstableForkSessionRequest{SessionId: tc.sid, Cwd: t.TempDir()})
			var re *acp.RequestError
			if !errors.As(err, &re) || re.Code != tc.code {
				t.Errorf("session/fork: got %v, want error code %d", err, tc.code)
			}
		})
	}
}
