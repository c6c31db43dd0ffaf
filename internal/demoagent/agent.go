// Package demoagent is tether's built-in, deterministic ACP agent.
//
// It is the agent new users get before they configure a real one, and the
// scriptable fake the test suites drive: it speaks ACP over stdio through the
// SDK's agent side exactly like an external agent, persists its sessions so
// session/load works across restarts, and its prompt commands (/echo,
// /stream, /permission, /hang, /crash, ...) reproduce the behaviours of real
// agents that the daemon has to cope with. Flags switch capabilities off or
// imitate the error shapes real agents produce.
package demoagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Name is the agentInfo.name the demo agent reports in initialize.
const Name = "tether-demo-agent"

// Version is the agentInfo.version the demo agent reports in initialize.
const Version = "0.1.0"

// osExit is what /crash and /crash-in-tool call. It is a variable so that
// in-process tests can observe the exit instead of losing the test binary.
var osExit = os.Exit

// config is the parsed command line.
type config struct {
	stateDir string
	noLoad   bool
	// noImage leaves promptCapabilities.image out of initialize.
	noImage  bool
	noResume bool
	// noFork leaves sessionCapabilities.fork out of initialize.
	noFork             bool
	resumeUnsupported  bool
	unknownCode        int
	unknownMessage     string
	unknownDetails     string
	unknownData        string // JSON object replacing the error's data
	loadUnknownCreates bool
	// replayAfterResponse answers session/load before replaying history.
	replayAfterResponse bool
	// hangOnLoad never answers session/load.
	hangOnLoad   bool
	authRequired bool
	// authMethod, when set, is announced in initialize and must be
	// authenticated with before sessions work (as codex's api-key).
	authMethod string
	// authFile, when set, stands for a login the agent keeps in a file
	// (made in a terminal, out of tetherd's sight): sessions ask for
	// credentials until the file exists.
	authFile string
	// authAtPrompt moves the --auth-required and --auth-file checks to
	// session/prompt and announces no method for them, as claude-agent-acp.
	authAtPrompt bool
	startupDelay time.Duration
	// startupDelayIn limits startupDelay to processes started in this
	// directory (a capability probe runs elsewhere than a session).
	startupDelayIn string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("demo-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.stateDir, "state-dir", "", "directory for session files (default $TETHER_DEMO_STATE_DIR, else <user cache dir>/tether-demo-agent)")
	fs.BoolVar(&c.noLoad, "no-load", false, "do not advertise or implement session/load (answers -32601)")
	fs.BoolVar(&c.noImage, "no-image", false, "do not advertise promptCapabilities.image (clients must not send image blocks)")
	fs.BoolVar(&c.noResume, "no-resume", false, "do not advertise sessionCapabilities.resume (session/resume answers -32601)")
	fs.BoolVar(&c.noFork, "no-fork", false, "do not advertise sessionCapabilities.fork (the unstable session/fork answers -32601)")
	fs.BoolVar(&c.resumeUnsupported, "resume-unsupported", false, "advertise resume but answer session/resume with -32601, as some real agents do")
	fs.IntVar(&c.unknownCode, "unknown-session-code", -32002, "JSON-RPC error code for an unknown session id")
	fs.StringVar(&c.unknownMessage, "unknown-session-message", "Resource not found", "error message for an unknown session id")
	fs.StringVar(&c.unknownDetails, "unknown-session-details", "", "optional data.details for an unknown session id (e.g. \"Invalid session identifier\")")
	fs.StringVar(&c.unknownData, "unknown-session-data", "", "JSON object sent as the unknown-session error's data instead of {uri, details} (e.g. '{\"service\":\"session\"}')")
	fs.BoolVar(&c.loadUnknownCreates, "load-unknown-creates", false, "answer session/load of an unknown id with success and an empty session")
	fs.BoolVar(&c.hangOnLoad, "hang-on-load", false, "never answer session/load (a restore that hangs)")
	fs.BoolVar(&c.replayAfterResponse, "replay-after-response", false, "answer session/load first, then replay the history")
	fs.BoolVar(&c.authRequired, "auth-required", false, "answer session/new|load|resume|prompt with -32000 Authentication required")
	fs.StringVar(&c.authMethod, "auth-method", "", "announce this auth method; session/new|load|resume|prompt answer -32000 until the client calls authenticate with it")
	fs.StringVar(&c.authFile, "auth-file", "", "session/new|load|resume|prompt answer -32000 until this file exists (a login kept in a file; the announced method says to `touch` it)")
	fs.BoolVar(&c.authAtPrompt, "auth-at-prompt", false, "ask for the credentials of --auth-required and --auth-file only at session/prompt, announcing no auth method (as claude-agent-acp)")
	fs.DurationVar(&c.startupDelay, "startup-delay", 0, "sleep this long before serving")
	fs.StringVar(&c.startupDelayIn, "startup-delay-in", "", "apply --startup-delay only when the working directory is this one")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("demo-agent: unexpected arguments %q", fs.Args())
	}
	if c.unknownData != "" && !json.Valid([]byte(c.unknownData)) {
		return c, fmt.Errorf("demo-agent: --unknown-session-data is not JSON: %q", c.unknownData)
	}
	if c.stateDir == "" {
		c.stateDir = defaultStateDir()
	}
	return c, nil
}

// Run serves one ACP connection on stdin/stdout until the client closes
// stdin or ctx is done. args are the flags that follow "tetherd demo-agent";
// diagnostics go to stderr. It returns nil when the connection ends (stdin
// EOF or ctx done) and an error for bad flags (flag.ErrHelp for -h) or an
// unusable state directory. When ctx ends first, the SDK's reader goroutine
// stays blocked on stdin until the caller closes it; tetherd exits anyway.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.startupDelay > 0 && startedIn(cfg.startupDelayIn) {
		t := time.NewTimer(cfg.startupDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
	store, err := newStateStore(cfg.stateDir)
	if err != nil {
		return err
	}

	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	a := &agent{
		cfg:      cfg,
		store:    store,
		serveCtx: serveCtx,
		wire:     &wireWriter{w: stdout},
		sessions: map[string]*session{},
		exit:     osExit,
	}
	var impl acp.Agent = a
	if !cfg.noLoad {
		// The SDK answers session/load with -32601 unless the agent
		// implements acp.AgentLoader, so --no-load simply omits it.
		impl = loadingAgent{a}
	}
	// The SDK starts reading stdin inside NewAgentSideConnection; the gate
	// holds reads back until a.conn is set, so no handler can see a nil conn.
	ready := make(chan struct{})
	conn := acp.NewAgentSideConnection(impl, a.wire, &gatedReader{r: stdin, ready: ready})
	conn.SetLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	a.conn = conn
	close(ready)

	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	// Cancelling serveCtx ends running turns; wait (boundedly) for them to
	// return so nothing writes to the state dir after Run does: a restarted
	// agent, or the next test, reuses it.
	stop()
	a.mu.Lock()
	a.closing = true // no turns.Add after this point, as WaitGroup requires
	a.mu.Unlock()
	done := make(chan struct{})
	go func() { a.turns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	return nil
}

// startedIn reports whether the working directory is dir (any directory
// when dir is empty), comparing resolved paths.
func startedIn(dir string) bool {
	if dir == "" {
		return true
	}
	wd, err := os.Getwd()
	if err != nil {
		return false
	}
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	got, err := filepath.EvalSymlinks(wd)
	return err == nil && got == want
}

// gatedReader blocks reads until ready is closed.
type gatedReader struct {
	r     io.Reader
	ready chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.ready
	return g.r.Read(p)
}

// wireWriter serialises writes to stdout. The SDK writes each JSON-RPC
// message with a single Write, so holding our own lock per Write lets the
// agent inject raw lines (an unknown session/update kind the SDK cannot
// encode) without interleaving. It also runs one-shot hooks when a line
// mentioning a key has been written: that is how available_commands_update
// is sent strictly after the session/new response, as real agents do.
type wireWriter struct {
	mu    sync.Mutex
	w     io.Writer
	hooks map[string]func()
}

func (w *wireWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.w.Write(p)
	if err == nil {
		for key, fn := range w.hooks {
			if bytes.Contains(p, []byte(key)) {
				delete(w.hooks, key)
				go fn()
			}
		}
	}
	return n, err
}

// afterLine runs fn (in its own goroutine) once a written line contains key.
func (w *wireWriter) afterLine(key string, fn func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hooks == nil {
		w.hooks = map[string]func(){}
	}
	w.hooks[key] = fn
}

// agent implements acp.Agent. Its per-session logic lives in session.go and
// the prompt scripts in commands.go.
type agent struct {
	cfg   config
	store *stateStore
	// serveCtx ends when the connection is over. Turns and outgoing messages
	// use it instead of the SDK's request context, because the SDK cancels a
	// prompt's context when a second prompt for the same session arrives,
	// and the demo agent must instead reject the second prompt.
	serveCtx context.Context
	conn     *acp.AgentSideConnection
	wire     *wireWriter
	exit     func(int)
	turns    sync.WaitGroup

	mu            sync.Mutex
	sessions      map[string]*session // sessions opened on this connection
	clientReadFS  bool                // client advertised fs.readTextFile
	clientWriteFS bool                // client advertised fs.writeTextFile
	authenticated bool                // authenticate succeeded with cfg.authMethod
	closing       bool                // Run is shutting down; no new turns
}

// loadingAgent adds session/load to agent; see Run.
type loadingAgent struct{ *agent }

var (
	_ acp.Agent       = (*agent)(nil)
	_ acp.AgentLoader = loadingAgent{}
)

// Initialize advertises the capabilities selected by the flags.
func (a *agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.mu.Lock()
	a.clientReadFS = p.ClientCapabilities.Fs.ReadTextFile
	a.clientWriteFS = p.ClientCapabilities.Fs.WriteTextFile
	a.mu.Unlock()
	caps := acp.AgentCapabilities{
		LoadSession:        !a.cfg.noLoad,
		PromptCapabilities: acp.PromptCapabilities{EmbeddedContext: true, Image: !a.cfg.noImage},
	}
	if !a.cfg.noResume {
		caps.SessionCapabilities.Resume = &acp.SessionResumeCapabilities{}
	}
	if !a.cfg.noFork {
		caps.SessionCapabilities.Fork = &acp.SessionForkCapabilities{}
	}
	resp := acp.InitializeResponse{
		// Version 1 is the only one this agent speaks; per ACP the agent
		// answers with its own version and the client decides.
		ProtocolVersion:   acp.ProtocolVersionNumber,
		AgentCapabilities: caps,
		AgentInfo:         &acp.Implementation{Name: Name, Title: acp.Ptr("Tether demo agent"), Version: Version},
	}
	if a.cfg.authRequired && !a.cfg.authAtPrompt {
		// Real agents that need a login advertise how; this one can never
		// complete it, which is the "offline, no API key" situation.
		resp.AuthMethods = []acp.AuthMethod{{Agent: &acp.AuthMethodAgent{
			Id: "demo-login", Name: "Demo login",
			Description: acp.Ptr("Always fails: the demo agent was started with --auth-required"),
		}}}
	}
	if f := a.cfg.authFile; f != "" && !a.cfg.authAtPrompt {
		// Shaped like opencode's login: the command in the description.
		resp.AuthMethods = append(resp.AuthMethods, acp.AuthMethod{Agent: &acp.AuthMethodAgent{
			Id: "demo-file-login", Name: "Demo file login", Description: acp.Ptr("Run `touch " + f + "` in the terminal"),
		}})
	}
	if m := a.cfg.authMethod; m != "" {
		// Shaped like codex's api-key method: the provider in _meta.
		resp.AuthMethods = append(resp.AuthMethods, acp.AuthMethod{Agent: &acp.AuthMethodAgent{
			Id: m, Name: "Demo key", Description: acp.Ptr("Sessions work after authenticate with this method"),
			Meta: map[string]any{m: map[string]any{"provider": "demo"}},
		}})
	}
	return resp, nil
}

// Authenticate always fails under --auth-required; with --auth-method it
// succeeds for that method only; otherwise it succeeds.
func (a *agent) Authenticate(_ context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	if a.cfg.authRequired {
		return acp.AuthenticateResponse{}, authRequired()
	}
	if m := a.cfg.authMethod; m != "" {
		if p.MethodId != m {
			return acp.AuthenticateResponse{}, acp.NewInvalidParams(map[string]any{"error": "unknown auth method", "methodId": p.MethodId})
		}
		a.mu.Lock()
		a.authenticated = true
		a.mu.Unlock()
	}
	return acp.AuthenticateResponse{}, nil
}

// checkAuth is what session/new, load, resume and prompt (atPrompt)
// answer first: -32000 under --auth-required, with --auth-file while the
// file is missing (both only at a prompt with --auth-at-prompt), or with
// --auth-method before authenticate.
func (a *agent) checkAuth(atPrompt bool) error {
	if !a.cfg.authAtPrompt || atPrompt {
		if a.cfg.authRequired {
			return authRequired()
		}
		if f := a.cfg.authFile; f != "" {
			if _, err := os.Stat(f); err != nil {
				return acp.NewAuthRequired(map[string]any{"details": "not logged in: " + f + " does not exist"})
			}
		}
	}
	if a.cfg.authMethod == "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.authenticated {
		return acp.NewAuthRequired(map[string]any{"details": "authenticate with method " + a.cfg.authMethod + " first"})
	}
	return nil
}

func authRequired() error {
	return acp.NewAuthRequired(map[string]any{"details": "the demo agent was started with --auth-required"})
}

// CloseSession is not advertised.
func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionClose)
}

// ListSessions is not advertised.
func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

// errConnClosed ends a turn whose connection went away.
var errConnClosed = errors.New("demoagent: connection closed")
