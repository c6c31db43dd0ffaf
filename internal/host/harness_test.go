package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/demoagent"
	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/testbin"
)

const testToken = "test-token"

func TestMain(m *testing.M) { testbin.RunLeakChecked(m) }

// testHost is a Host serving a unix socket in a goroutine of the test.
type testHost struct {
	t      *testing.T
	h      *host.Host
	sock   string
	logs   *testbin.LogBuffer
	cancel context.CancelFunc
	served chan error
	// serveErr is Serve's error once waitServed saw it return.
	serveErr  error
	serveDone bool
	once      sync.Once
}

// startHost runs a host on dataDir; mod adjusts its config.
func startHost(t *testing.T, dataDir string, mod func(*host.Config)) *testHost {
	t.Helper()
	logs := &testbin.LogBuffer{}
	cfg := host.Config{DataDir: dataDir, Self: testbin.Tetherd(t), Token: testToken,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if mod != nil {
		mod(&cfg)
	}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	th := &testHost{t: t, h: h, sock: testbin.SocketPath(t), logs: logs, served: make(chan error, 1)}
	ln, err := net.Listen("unix", th.sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	th.cancel = cancel
	go func() { th.served <- h.Serve(ctx, ln) }()
	t.Cleanup(th.stop)
	return th
}

// stop ends Serve and closes the host (its agents stop, exits recorded).
func (th *testHost) stop() {
	th.once.Do(func() {
		th.cancel()
		if err := th.waitServed(); err != nil {
			th.t.Errorf("Serve: %v", err)
		}
		if err := th.h.Close(); err != nil {
			th.t.Errorf("Close: %v", err)
		}
		if th.t.Failed() {
			th.t.Logf("host log:\n%s", th.logs.String())
		}
	})
}

// waitServed waits for Serve to return (by itself, or after stop).
func (th *testHost) waitServed() error {
	if !th.serveDone {
		th.serveErr, th.serveDone = <-th.served, true
	}
	return th.serveErr
}

// daemon plays the daemon's side of a connection: it answers pings,
// keeps every record it received per session, and acknowledges them when
// autoAck is set.
type daemon struct {
	t       *testing.T
	conn    *hostproto.Conn
	welcome hostproto.Welcome
	in      chan hostproto.Message
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	autoAck bool
	// gen is the generation every command carries (0: unfenced).
	gen uint64
	// mute stops answering pings, as a daemon that hangs.
	mute    atomic.Bool
	recs    map[string][]hostproto.Record
	results map[string]hostproto.CommandResult
}

func (th *testHost) dial(token string) (*daemon, error) {
	return dialSocket(th.t, th.sock, token)
}

func dialSocket(t *testing.T, sock, token string) (*daemon, error) {
	t.Helper()
	return dialSocketVersions(t, sock, token, hostproto.Versions{})
}

// dialSocketVersions plays a daemon that speaks vs (zero: this build's).
func dialSocketVersions(t *testing.T, sock, token string, vs hostproto.Versions) (*daemon, error) {
	t.Helper()
	nc, err := net.Dial("unix", sock)
	if err != nil {
		return nil, err
	}
	conn, w, err := hostproto.Client(context.Background(), nc, hostproto.ClientConfig{Token: token, DaemonID: "test-daemon", DaemonVersion: "test", Versions: vs})
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	d := &daemon{t: t, conn: conn, welcome: w, in: make(chan hostproto.Message, 1<<14), quit: make(chan struct{}), done: make(chan struct{}),
		autoAck: true, recs: map[string][]hostproto.Record{}, results: map[string]hostproto.CommandResult{}}
	go d.read()
	t.Cleanup(d.close)
	return d, nil
}

// mustDial connects with the right token.
func (th *testHost) mustDial() *daemon {
	th.t.Helper()
	d, err := th.dial(testToken)
	if err != nil {
		th.t.Fatalf("dial host: %v", err)
	}
	return d
}

func (d *daemon) read() {
	defer close(d.done)
	defer close(d.in)
	for {
		m, err := d.conn.Recv()
		if err != nil {
			return
		}
		if p, ok := m.(*hostproto.Ping); ok {
			if !d.mute.Load() {
				_ = d.conn.Send(&hostproto.Pong{Nonce: p.Nonce})
			}
			continue
		}
		select {
		case d.in <- m:
		case <-d.quit:
			return
		}
	}
}

// close drops the connection, as a daemon that dies does.
func (d *daemon) close() {
	d.once.Do(func() {
		_ = d.conn.Close()
		close(d.quit)
		<-d.done
	})
}

// next returns the next message; a record is kept (and acked if autoAck).
func (d *daemon) next() hostproto.Message {
	d.t.Helper()
	m, ok := <-d.in
	if !ok {
		d.t.Fatal("the host closed the connection")
	}
	switch m := m.(type) {
	case *hostproto.Record:
		d.recs[m.SessionID] = append(d.recs[m.SessionID], *m)
		if d.autoAck {
			d.ack(m.SessionID, m.Offset)
		}
	case *hostproto.CommandResult:
		d.results[m.ID] = *m
	}
	return m
}

func (d *daemon) ack(sid string, off uint64) {
	d.t.Helper()
	if err := d.conn.Send(&hostproto.Ack{SessionID: sid, Offset: off}); err != nil {
		d.t.Fatalf("send ack: %v", err)
	}
}

// send sends a command with the given id (a new one if empty) and
// returns the id.
func (d *daemon) send(id string, kind hostproto.CommandKind, sid string, payload any) string {
	d.t.Helper()
	if id == "" {
		id = uuid.NewString()
	}
	cmd := &hostproto.Command{ID: id, Kind: kind, SessionID: sid, Generation: d.gen}
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			d.t.Fatal(err)
		}
		cmd.Payload = b
	}
	if err := d.conn.Send(cmd); err != nil {
		d.t.Fatalf("send %s: %v", kind, err)
	}
	return id
}

// await reads messages until the result of command id.
func (d *daemon) await(id string) hostproto.CommandResult {
	d.t.Helper()
	for {
		if r, ok := d.results[id]; ok {
			delete(d.results, id)
			return r
		}
		d.next()
	}
}

// do sends a command and waits for its result.
func (d *daemon) do(kind hostproto.CommandKind, sid string, payload any) hostproto.CommandResult {
	d.t.Helper()
	return d.await(d.send("", kind, sid, payload))
}

// decode reads a successful result's payload.
func decode[T any](t *testing.T, r hostproto.CommandResult) T {
	t.Helper()
	var v T
	if r.Error != nil {
		t.Fatalf("command %s failed: %s: %s", r.ID, r.Error.Code, r.Error.Message)
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatalf("result of %s: %v (%s)", r.ID, err, r.Result)
	}
	return v
}

// open starts the demo agent for sid in a fresh directory and opens its
// ACP session; it returns the agent's session id.
func (d *daemon) open(sid string) string {
	d.t.Helper()
	start := decode[hostproto.StartResult](d.t, d.do(hostproto.CommandStart, sid, hostproto.StartPayload{ProfileID: agents.DemoID, Cwd: d.t.TempDir(), FS: true}))
	if start.PID <= 0 || start.Capabilities.AgentName != "tether-demo-agent" {
		d.t.Fatalf("start: got %+v, want a pid and the demo agent's capabilities", start)
	}
	res := decode[hostproto.NewResult](d.t, d.do(hostproto.CommandNew, sid, hostproto.NewPayload{Params: hostproto.SessionParams{Cwd: d.t.TempDir()}}))
	if res.AcpSessionID == "" {
		d.t.Fatal("session/new answered no session id")
	}
	return res.AcpSessionID
}

// prompt is a PromptPayload of one text block.
func prompt(acpID, text string) hostproto.PromptPayload {
	b, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	return hostproto.PromptPayload{AcpSessionID: acpID, Prompt: b}
}

// texts returns the agent message chunks among recs, in order.
func texts(t *testing.T, recs []hostproto.Record) []string {
	t.Helper()
	var out []string
	var dec acp.UpdateDecoder
	for _, r := range recs {
		var u acp.Update
		switch r.Kind {
		case hostproto.RecordUpdate:
			var wire hostproto.Update
			if err := json.Unmarshal(r.Payload, &wire); err != nil {
				t.Fatalf("update record %d: %v", r.Offset, err)
			}
			u = wire.ACP()
		case hostproto.RecordACPUpdate:
			var ok bool
			if u, ok = dec.Decode(r.Payload); !ok {
				t.Fatalf("acp_update record %d does not decode: %s", r.Offset, r.Payload)
			}
		default:
			continue
		}
		if u.Kind == acp.UpdateAgentMessage {
			out = append(out, u.Text)
		}
	}
	return out
}

// chunks is what `/stream n` sends.
func chunks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = demoagent.ChunkText(i + 1)
	}
	return out
}

// checkGapless fails unless recs have the offsets from, from+1, ...
func checkGapless(t *testing.T, recs []hostproto.Record, from uint64) {
	t.Helper()
	for i, r := range recs {
		if r.Offset != from+uint64(i) {
			t.Fatalf("record %d has offset %d, want %d (offsets: %s)", i, r.Offset, from+uint64(i), offsets(recs))
		}
	}
}

func offsets(recs []hostproto.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "%d:%s ", r.Offset, r.Kind)
	}
	return b.String()
}

// exitOf decodes an exit record.
func exitOf(t *testing.T, r hostproto.Record) hostproto.Exit {
	t.Helper()
	if r.Kind != hostproto.RecordExit {
		t.Fatalf("record %d is %s, want exit", r.Offset, r.Kind)
	}
	var e hostproto.Exit
	if err := json.Unmarshal(r.Payload, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// waitFor polls cond until it holds; the test's own timeout bounds it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i%500 == 499 {
			t.Logf("still waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
