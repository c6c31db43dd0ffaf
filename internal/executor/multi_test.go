package executor

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/demoagent"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/testbin"
	"github.com/tether/tether/internal/workspace"
)

// newRealHost serves a real executor host (internal/host, the demo agent
// from the tetherd binary) on a fresh socket until the test ends, and
// returns the socket's path.
func newRealHost(t *testing.T, mod func(*host.Config)) string {
	t.Helper()
	dir := shortTempDir(t)
	cfg := host.Config{DataDir: dir, Self: testbin.Tetherd(t), Token: testToken, Linger: -1, Logger: testLogger()}
	if mod != nil {
		mod(&cfg)
	}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "h.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sock
}

// newHostAt connects a daemon's Host to the host serving sock, as node
// daemonID of generation gen for every session (0: no hook).
func newHostAt(t *testing.T, sock, daemonID string, gen uint64, mod func(*HostConfig)) *Host {
	t.Helper()
	return newTestHostAt(t, sock, func(c *HostConfig) {
		c.DaemonID, c.AckEvery = daemonID, 256
		if gen > 0 {
			c.Generation = func(string) uint64 { return gen }
		}
		if mod != nil {
			mod(c)
		}
	})
}

// demoPrompt runs a PromptTurn of text on a and returns its stop reason.
func demoPrompt(t *testing.T, a *Agent, acpID, turn, text string) (string, error) {
	t.Helper()
	b, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	return a.PromptTurn(ctxT(t), acpID, turn, b, nil)
}

// chunkTexts are the agent message texts rh was handed, in order.
func chunkTexts(rh *recHandler) []string {
	var out []string
	for _, u := range rh.snapshot() {
		if u.Kind == acp.UpdateAgentMessage {
			out = append(out, u.Text)
		}
	}
	return out
}

// demoChunks is what the demo agent's `/stream n` sends.
func demoChunks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = demoagent.ChunkText(i + 1)
	}
	return out
}

// TestSessionTakenOverByNewerGeneration: two daemons on one real host,
// as two nodes sharing a database. B (generation 2) takes over the
// session A (generation 1) started: B gets its records from its attach
// on, A none; A's next command fails with errcode.HostSessionFenced and
// ends its Agent as fenced without stopping the agent, which B goes on
// driving; the workspace is fenced too.
func TestSessionTakenOverByNewerGeneration(t *testing.T) {
	sock := newRealHost(t, nil)
	hA := newHostAt(t, sock, "node-a", 1, nil)
	rhA := newRecHandler(true)
	cwd := t.TempDir()
	a, err := hA.Start(ctxT(t), "s1", hostproto.StartPayload{ProfileID: agents.DemoID, Cwd: cwd}, rhA)
	if err != nil {
		t.Fatalf("A's Start: %v", err)
	}
	acpID, err := a.NewSession(ctxT(t), acp.SessionParams{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if stop, err := demoPrompt(t, a, acpID, "turn-1", "/stream 20"); err != nil || stop != "end_turn" {
		t.Fatalf("A's turn: got %q, %v; want end_turn", stop, err)
	}
	a.mu.Lock()
	committed := a.lastSeen // all done at once by rhA
	a.mu.Unlock()
	seenA := len(rhA.snapshot())

	hB := newHostAt(t, sock, "node-b", 2, nil)
	rhB := newRecHandler(true)
	b, err := hB.Attach(ctxT(t), "s1", committed, rhB)
	if err != nil {
		t.Fatalf("B's Attach: %v", err)
	}
	if stop, err := demoPrompt(t, b, acpID, "turn-2", "/stream 30"); err != nil || stop != "end_turn" {
		t.Fatalf("B's turn: got %q, %v; want end_turn", stop, err)
	}
	if got, want := chunkTexts(rhB), demoChunks(30); !slices.Equal(got, want) {
		t.Fatalf("B's chunks: got %q, want %q", got, want)
	}

	if _, err := demoPrompt(t, a, acpID, "turn-3", "/echo stale"); !errcode.Is(err, errcode.HostSessionFenced) {
		t.Fatalf("A's prompt after the takeover: got %v, want %s", err, errcode.HostSessionFenced)
	}
	await(t, "A's agent to end", a.Done())
	if !a.Fenced() || a.Lost() {
		t.Fatalf("A's agent: got fenced %v, lost %v; want fenced, not lost", a.Fenced(), a.Lost())
	}
	if err := a.Cancel(ctxT(t), acpID); !errcode.Is(err, errcode.HostSessionFenced) {
		t.Fatalf("A's cancel after it was fenced: got %v, want %s", err, errcode.HostSessionFenced)
	}
	a.Stop() // ended already: nothing reaches the host
	if n := len(rhA.snapshot()); n != seenA {
		t.Fatalf("A's handler got %d updates after the takeover, want none", n-seenA)
	}
	if slices.Contains(hA.Info().Attached, "s1") {
		t.Fatalf("A still lists s1 attached: %v", hA.Info().Attached)
	}
	list := workspace.Request{Root: cwd, Op: workspace.OpList}
	if _, err := hA.Workspace(ctxT(t), "s1", list); !errcode.Is(err, errcode.HostSessionFenced) {
		t.Fatalf("A's workspace request: got %v, want %s", err, errcode.HostSessionFenced)
	}
	if _, err := hB.Workspace(ctxT(t), "s1", list); err != nil {
		t.Fatalf("B's workspace request: %v", err)
	}
	// The agent still runs, for B.
	if stop, err := demoPrompt(t, b, acpID, "turn-4", "/echo still here"); err != nil || stop != "end_turn" {
		t.Fatalf("B's turn after A was fenced: got %q, %v; want end_turn", stop, err)
	}
}

// TestReconnectAttachFencedEndsAgent: a daemon whose connection broke
// while another node took its session over (a node cut off, as in a split
// brain) finds its reconnect's attach refused as fenced: its Agent ends as
// fenced, with no command of its own, instead of reconnecting for ever.
func TestReconnectAttachFencedEndsAgent(t *testing.T) {
	sock := newRealHost(t, nil)
	var mu sync.Mutex
	var conns []net.Conn
	hA := newHostAt(t, sock, "node-a", 1, func(c *HostConfig) {
		dial := c.Dial
		c.Dial = func(ctx context.Context) (net.Conn, error) {
			nc, err := dial(ctx)
			if err == nil {
				mu.Lock()
				conns = append(conns, nc)
				mu.Unlock()
			}
			return nc, err
		}
	})
	rhA := newRecHandler(true)
	cwd := t.TempDir()
	a, err := hA.Start(ctxT(t), "s1", hostproto.StartPayload{ProfileID: agents.DemoID, Cwd: cwd}, rhA)
	if err != nil {
		t.Fatal(err)
	}
	hB := newHostAt(t, sock, "node-b", 2, nil)
	if _, err := hB.Attach(ctxT(t), "s1", 0, newRecHandler(true)); err != nil {
		t.Fatalf("B's Attach: %v", err)
	}
	mu.Lock()
	_ = conns[0].Close() // A's connection breaks; it reconnects and attaches again
	mu.Unlock()
	await(t, "A's agent to end", a.Done())
	if !a.Fenced() || a.Lost() {
		t.Fatalf("A's agent: got fenced %v, lost %v, exit %+v; want fenced", a.Fenced(), a.Lost(), a.Exit())
	}
	waitInfo(t, hA, "A connected again, s1 not attached", func(i HostInfo) bool {
		return i.State == StateConnected && !slices.Contains(i.Attached, "s1")
	})
}

// TestGenerationOnEveryCommand: every command for a session carries the
// generation the hook gives when it is made (an attach's when it is
// sent, so a reconnect's attach has the current one); status carries
// none.
func TestGenerationOnEveryCommand(t *testing.T) {
	var mu sync.Mutex
	gens := map[string]uint64{"s1": 7}
	f := newFakeHost(t, func(f *fakeHost) {
		f.handle = func(f *fakeHost, cmd hostproto.Command) hostproto.CommandResult {
			if cmd.Kind == hostproto.CommandWorkspace {
				return okResult(workspace.Result{})
			}
			return streamingPrompt(3)(f, cmd)
		}
	})
	h := newTestHost(t, f, func(c *HostConfig) {
		c.Generation = func(sid string) uint64 {
			mu.Lock()
			defer mu.Unlock()
			return gens[sid]
		}
	})
	rh := newRecHandler(true)
	a := startAgent(t, h, "s1", rh)
	ctx := ctxT(t)
	steps := []struct {
		name string
		run  func() error
	}{
		{"new", func() error { _, err := a.NewSession(ctx, acp.SessionParams{Cwd: "/tmp"}); return err }},
		{"prompt", func() error { _, err := demoPrompt(t, a, "acp-1", "turn-1", "hi"); return err }},
		{"cancel", func() error { return a.Cancel(ctx, "acp-1") }},
		{"set mode", func() error { return a.SetMode(ctx, "acp-1", "code") }},
		{"workspace", func() error {
			_, err := h.Workspace(ctx, "s1", workspace.Request{Root: "/tmp", Op: workspace.OpList})
			return err
		}},
		{"status", func() error { _, err := h.Status(ctx); return err }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	mu.Lock()
	gens["s1"] = 8 // this node took the session again, with a newer lease
	mu.Unlock()
	f.cut()
	f.waitFor(t, "the reconnect's attach", func() bool { return len(f.receivedLocked(hostproto.CommandAttach)) == 1 })

	f.mu.Lock()
	defer f.mu.Unlock()
	want := map[hostproto.CommandKind]uint64{hostproto.CommandStart: 7, hostproto.CommandNew: 7, hostproto.CommandPrompt: 7,
		hostproto.CommandCancel: 7, hostproto.CommandSetMode: 7, hostproto.CommandWorkspace: 7, hostproto.CommandStatus: 0, hostproto.CommandAttach: 8}
	for _, r := range f.received {
		if g, ok := want[r.cmd.Kind]; !ok || r.cmd.Generation != g {
			t.Errorf("%s: got generation %d, want %d", r.cmd.Kind, r.cmd.Generation, g)
		}
	}
	if ws := f.receivedLocked(hostproto.CommandWorkspace); len(ws) != 1 || ws[0].cmd.SessionID != "s1" {
		t.Errorf("workspace commands: got %+v, want one naming s1", ws)
	}
}

// TestVersionsAcrossBuilds: a daemon of this build and a host of the
// previous protocol version, and the other way round, agree on version 3
// and stream a turn; two of this build agree on 4.
func TestVersionsAcrossBuilds(t *testing.T) {
	v3 := hostproto.Versions{Min: 1, Max: 3}
	cases := []struct {
		name           string
		daemon, server hostproto.Versions
		want           int
	}{
		{"daemon 4, host 3", hostproto.Versions{}, v3, 3},
		{"daemon 3, host 4", v3, hostproto.Versions{}, 3},
		{"both 4", hostproto.Versions{}, hostproto.Versions{}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock := newRealHost(t, func(c *host.Config) { c.Versions = tc.server })
			h := newHostAt(t, sock, "node-a", 3, func(c *HostConfig) { c.Versions = tc.daemon })
			rh := newRecHandler(true)
			cwd := t.TempDir()
			a, err := h.Start(ctxT(t), "s1", hostproto.StartPayload{ProfileID: agents.DemoID, Cwd: cwd}, rh)
			if err != nil {
				t.Fatal(err)
			}
			if v := h.Info().Version; v != tc.want {
				t.Fatalf("negotiated version %d, want %d", v, tc.want)
			}
			acpID, err := a.NewSession(ctxT(t), acp.SessionParams{Cwd: cwd})
			if err != nil {
				t.Fatal(err)
			}
			if stop, err := demoPrompt(t, a, acpID, "turn-1", "/stream 50"); err != nil || stop != "end_turn" {
				t.Fatalf("turn: got %q, %v; want end_turn", stop, err)
			}
			if got, want := chunkTexts(rh), demoChunks(50); !slices.Equal(got, want) {
				t.Fatalf("chunks: got %q, want %q", got, want)
			}
		})
	}
}
