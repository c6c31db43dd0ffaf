package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/onetruth"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
	"github.com/tether/tether/internal/tasks"
	"github.com/tether/tether/internal/testbin"
	"github.com/tether/tether/server"
)

const testToken = "test-token"

// tetherdBinary is the tetherd executable shared by this package's tests.
func tetherdBinary(t *testing.T) string { return testbin.Tetherd(t) }

// daemon is an in-process tetherd (real store, real agents, real HTTP).
type daemon struct {
	t      *testing.T
	URL    string
	Store  *store.Store
	Dir    string
	router routers.Router
	client *http.Client
	Server *httptest.Server
	Hub    *events.Hub
	Writer *events.Writer
	// Mgr is the daemon's session manager.
	Mgr *sessions.Manager
	// Sent records every line the daemon wrote to any agent, per session.
	Sent *agentWire
	// streams are its streams' lifetimes (dropConnections).
	streams *streamLifetimes
	// EagerDone closes when eager resume at start-up has finished (at
	// once in lazy mode).
	EagerDone <-chan struct{}

	opts     daemonOptions
	stopOnce sync.Once
	stopFn   func()
}

type daemonOptions struct {
	sessions sessions.Config
	// writer tunes the event writer (its Logger is the daemon's).
	writer events.WriterConfig
	// agentsYAML is written to <data-dir>/agents.yaml when set.
	agentsYAML string
	hub        events.HubConfig
	heartbeat  time.Duration
	// dir is the data directory to use; empty means a fresh temp dir. A
	// restart passes the previous daemon's dir.
	dir string
	// leakCheck fails the test if a process naming the data dir (its demo
	// agents) outlives the daemons of the test.
	leakCheck bool
	// eager restores resumable sessions in the background after start-up
	// reconciliation (resume_on_start: eager) with this concurrency; 0 is lazy.
	eager int
	// allowedHosts are Host names served besides loopback names.
	allowedHosts []string
	// clock replaces time.Now for stream ticket expiry; ticketsMax
	// bounds outstanding stream tickets (0: the default).
	clock      func() time.Time
	ticketsMax int
	// logger receives the server's, the writer's and the sessions' log
	// (nil: slog's default).
	logger *slog.Logger
}

func startDaemon(t *testing.T, opts daemonOptions) *daemon {
	t.Helper()
	bin := tetherdBinary(t)
	dir := opts.dir
	if dir == "" {
		dir = t.TempDir()
		if opts.leakCheck {
			// Registered first, so it runs after every daemon on dir stopped.
			t.Cleanup(func() { noSurvivors(t, dir) })
		}
	}
	if opts.agentsYAML != "" {
		if err := os.WriteFile(filepath.Join(dir, "agents.yaml"), []byte(opts.agentsYAML), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	st := storetest.Open(t, dir)
	reg, err := agents.Load(ctx, agents.Config{DataDir: dir, Self: bin, Store: st, LookPath: func(cmd string) (string, error) {
		// Real agents on PATH are hidden from tests; profiles of agents.yaml
		// that name an absolute path (the demo agent binary) resolve.
		if filepath.IsAbs(cmd) {
			return exec.LookPath(cmd)
		}
		return "", exec.ErrNotFound
	}})
	if err != nil {
		t.Fatalf("load agents: %v", err)
	}
	if opts.sessions.CancelGrace == 0 {
		opts.sessions.CancelGrace = 3 * time.Second
	}
	hub := events.NewHub(opts.hub)
	wcfg := opts.writer
	wcfg.Logger = opts.logger
	w, err := events.NewWriter(ctx, st, hub, wcfg)
	if err != nil {
		t.Fatalf("event writer: %v", err)
	}
	if opts.sessions.Logger == nil {
		opts.sessions.Logger = opts.logger
	}
	sent := newAgentWire()
	if opts.sessions.Outgoing == nil {
		opts.sessions.Outgoing = sent.writer
	}
	mgr := sessions.New(st, w, reg, opts.sessions)
	// Like tetherd serve: reconcile what a previous daemon left behind
	// before serving anything.
	if _, err := mgr.Reconcile(ctx); err != nil {
		t.Fatalf("start-up reconciliation: %v", err)
	}
	e, err := server.New(server.Config{Store: st, Sessions: mgr, Tasks: tasks.New(st, w, opts.sessions.Cwd), Agents: reg, Hub: hub, Writer: w, Token: testToken, BodyLimit: "64K",
		HeartbeatInterval: opts.heartbeat, AllowedHosts: opts.allowedHosts, Clock: opts.clock, StreamTicketsMax: opts.ticketsMax, Logger: opts.logger})
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	// As tetherd serve: parked streams live under the server's base
	// context, which the stop cancels; dropConnections cancels that of
	// the connections so far (ConnContext: later ones get a fresh one).
	srv := httptest.NewUnstartedServer(e)
	streams := &streamLifetimes{}
	streams.renew()
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return server.StreamBase(streams.current(ctx))
	}
	srv.Start()
	spec, err := openapi3.NewLoader().LoadFromData(mustRead(t, "../api/openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec.Servers = nil
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{t: t, URL: srv.URL, Store: st, Dir: dir, router: router, client: srv.Client(),
		Server: srv, Hub: hub, Writer: w, Mgr: mgr, Sent: sent, opts: opts, streams: streams}
	eagerDone := make(chan struct{})
	d.EagerDone = eagerDone
	eagerCtx, cancelEager := context.WithCancel(ctx)
	if opts.eager > 0 {
		go func() {
			defer close(eagerDone)
			mgr.ResumeOnStart(eagerCtx, opts.eager)
		}()
	} else {
		close(eagerDone)
	}
	d.stopFn = func() {
		// Streams still open are cut, as a dying daemon cuts them.
		streams.end()
		srv.CloseClientConnections()
		srv.Close()
		cancelEager()
		mgr.Shutdown(context.Background())
		<-eagerDone
		w.Close()
		d.checkLog(st)
		_ = st.Close()
	}
	t.Cleanup(d.stop)
	return d
}

// streamLifetimes is the context the test daemon's streams live in, one
// per generation of connections: ending one ends the parked streams of
// its connections (server/sseparked.go), which httptest's
// CloseClientConnections does not reach (they left net/http).
type streamLifetimes struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

// renew starts a new generation, for the connections to come.
func (l *streamLifetimes) renew() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ctx, l.cancel = context.WithCancel(context.Background())
}

// current is the generation of a connection accepted now, with the
// values of connCtx.
func (l *streamLifetimes) current(connCtx context.Context) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, stop := context.WithCancel(connCtx)
	context.AfterFunc(l.ctx, stop)
	return ctx
}

// end ends the streams of the connections so far.
func (l *streamLifetimes) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancel()
}

// dropConnections drops every client connection, parked streams' too, as a
// restarting proxy or a network blip would; clients reconnect.
func (d *daemon) dropConnections() {
	d.streams.end()
	d.streams.renew()
	d.Server.CloseClientConnections()
}

// checkOneTruth compares what the daemon serves about sid (transcript,
// status, context and recovery plan) with what its event log implies
// (issue 29); see package onetruth. Tests call it where the daemon has
// come back from a fault: a restart, or a store that refused writes and
// takes them again (what a refused write left must be in the log, or
// nowhere).
func (d *daemon) checkOneTruth(sid string) {
	d.t.Helper()
	onetruth.Daemon{Base: d.URL, Token: testToken, Client: d.client}.Check(d.t, sid)
}

// stop shuts the daemon down (agents stopped, store closed). Running turns
// stay as they are in the store, for the next daemon to reconcile. It is
// safe to call more than once.
func (d *daemon) stop() { d.stopOnce.Do(d.stopFn) }

// restart stops this daemon and starts a new one on the same data
// directory with opts (agentsYAML, when set, replaces the profiles). The
// new daemon reconciles before it serves, as tetherd serve does.
func (d *daemon) restart(opts daemonOptions) *daemon {
	d.t.Helper()
	d.stop()
	opts.dir = d.Dir
	return startDaemon(d.t, opts)
}

// agentWire records, per session, the JSON-RPC lines the daemon sent to
// its agents (the Outgoing hook of sessions.Config).
type agentWire struct {
	mu    sync.Mutex
	lines map[string][]string
	part  map[string]string
	// starts lists session ids in the order their agents were initialized.
	starts []string
}

func newAgentWire() *agentWire {
	return &agentWire{lines: map[string][]string{}, part: map[string]string{}}
}

type agentWireWriter struct {
	w   *agentWire
	sid string
}

func (w agentWireWriter) Write(p []byte) (int, error) {
	w.w.mu.Lock()
	defer w.w.mu.Unlock()
	buf := w.w.part[w.sid] + string(p)
	for {
		i := strings.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		w.w.lines[w.sid] = append(w.w.lines[w.sid], buf[:i])
		if strings.Contains(buf[:i], `"method":"initialize"`) {
			w.w.starts = append(w.w.starts, w.sid)
		}
		buf = buf[i+1:]
	}
	w.w.part[w.sid] = buf
	return len(p), nil
}

func (a *agentWire) writer(sessionID string) interface{ Write([]byte) (int, error) } {
	return agentWireWriter{w: a, sid: sessionID}
}

// requests returns the JSON-RPC requests and notifications sent to the
// session's agents, in order, as decoded objects.
func (a *agentWire) requests(sessionID string) []map[string]any {
	a.mu.Lock()
	lines := append([]string(nil), a.lines[sessionID]...)
	a.mu.Unlock()
	var out []map[string]any
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["method"] != nil {
			out = append(out, m)
		}
	}
	return out
}

// methods lists the methods sent to the session's agents, in order.
func (a *agentWire) methods(sessionID string) []string {
	var out []string
	for _, m := range a.requests(sessionID) {
		out = append(out, m["method"].(string))
	}
	return out
}

// startOrder lists session ids in the order their agents were started.
func (a *agentWire) startOrder() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.starts...)
}

// count is how many times method was sent to the session's agents.
func (a *agentWire) count(sessionID, method string) int {
	n := 0
	for _, m := range a.methods(sessionID) {
		if m == method {
			n++
		}
	}
	return n
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// response is a decoded HTTP answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map.
func (r response) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	return m
}

// Decode decodes the body into v.
func (r response) Decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// do sends a request with the token and validates the response against
// the contract (status, content type and body schema).
func (d *daemon) do(method, path string, body any) response {
	d.t.Helper()
	return d.doRaw(method, path, body, map[string]string{"Authorization": "Bearer " + testToken})
}

func (d *daemon) doRaw(method, path string, body any, headers map[string]string) response {
	d.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			d.t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, d.URL+path, rd)
	if err != nil {
		d.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return d.send(req)
}

// send sends req as it is and validates the response against the contract.
func (d *daemon) send(req *http.Request) response {
	d.t.Helper()
	resp, err := d.client.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatal(err)
	}
	r := response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	d.validate(req, r)
	return r
}

// validate checks a response against the operation's declared responses.
// Problems must always be problem+json with a code.
func (d *daemon) validate(req *http.Request, r response) {
	d.t.Helper()
	if r.Status >= 400 {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			d.t.Errorf("%s %s: status %d with content type %q, want application/problem+json", req.Method, req.URL.Path, r.Status, ct)
		}
		var p map[string]any
		if err := json.Unmarshal(r.Body, &p); err != nil || p["code"] == nil || p["code"] == "" {
			d.t.Errorf("%s %s: problem without code: %s", req.Method, req.URL.Path, r.Body)
		}
	}
	route, params, err := d.router.FindRoute(req)
	if err != nil {
		return // not an API route (404 cases): nothing declared to check against
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	// The YAML contract itself is a document, not a value to validate.
	// kin-openapi cannot decode JSON lines either: the status and content
	// type are still checked, the lines by the tests themselves.
	raw := strings.HasPrefix(r.Header.Get("Content-Type"), "application/yaml") ||
		strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-ndjson")
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.Status, Header: r.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: raw}}
	out.SetBodyBytes(r.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		d.t.Errorf("%s %s: response %d does not match the contract: %v\nbody: %s", req.Method, req.URL.Path, r.Status, err, r.Body)
	}
}

// createSession starts a demo-agent session in a fresh directory.
func (d *daemon) createSession(extra map[string]any) (id, cwd string) {
	d.t.Helper()
	cwd = d.t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "README.md"), []byte("# Fixture\nhello from the fixture\n"), 0o644); err != nil {
		d.t.Fatal(err)
	}
	body := map[string]any{"agentProfileId": "demo", "cwd": cwd}
	for k, v := range extra {
		body[k] = v
	}
	r := d.do("POST", "/session", body)
	if r.Status != http.StatusCreated {
		d.t.Fatalf("create session: got %d, want 201: %s", r.Status, r.Body)
	}
	return r.JSON(d.t)["id"].(string), cwd
}

func text(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }

// prompt sends a prompt and returns its promptId.
func (d *daemon) prompt(sid, promptText, promptID string) string {
	d.t.Helper()
	body := map[string]any{"prompt": text(promptText)}
	if promptID != "" {
		body["promptId"] = promptID
	}
	r := d.do("POST", "/session/"+sid+"/prompt", body)
	if r.Status != http.StatusAccepted {
		d.t.Fatalf("prompt %q: got %d, want 202: %s", promptText, r.Status, r.Body)
	}
	return r.JSON(d.t)["promptId"].(string)
}

// waitFor polls the session until cond holds; the deadline is a safety net
// against hangs, not a performance assertion.
func (d *daemon) waitFor(what string, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// turn fetches one turn.
func (d *daemon) turn(sid, pid string) map[string]any {
	d.t.Helper()
	r := d.do("GET", "/session/"+sid+"/turns/"+pid, nil)
	if r.Status != http.StatusOK {
		d.t.Fatalf("get turn: got %d: %s", r.Status, r.Body)
	}
	return r.JSON(d.t)
}

// waitTurn waits until the turn reaches a terminal state and returns it.
func (d *daemon) waitTurn(sid, pid string) map[string]any {
	d.t.Helper()
	var turn map[string]any
	d.waitFor("turn "+pid+" to end", func() bool {
		turn = d.turn(sid, pid)
		state, _ := turn["state"].(string)
		return session.TurnState(state).Terminal()
	})
	return turn
}

// waitTurnState waits until the turn is in the given state.
func (d *daemon) waitTurnState(sid, pid, state string) map[string]any {
	d.t.Helper()
	var turn map[string]any
	d.waitFor("turn "+pid+" to be "+state, func() bool {
		turn = d.turn(sid, pid)
		return turn["state"] == state
	})
	return turn
}

// transcript fetches the transcript snapshot.
func (d *daemon) transcript(sid string) map[string]any {
	d.t.Helper()
	r := d.do("GET", "/session/"+sid+"/transcript", nil)
	if r.Status != http.StatusOK {
		d.t.Fatalf("transcript: got %d: %s", r.Status, r.Body)
	}
	return r.JSON(d.t)
}

// list returns a JSON array member as a slice of objects.
func list(m map[string]any, key string) []map[string]any {
	raw, _ := m[key].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, x := range raw {
		if o, ok := x.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}
