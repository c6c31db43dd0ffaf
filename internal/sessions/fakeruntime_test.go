package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/runtimes"
)

// fakeRuntime is a Runtime whose agents are Go values the test drives: no
// subprocess, no pipes. Each Start hands the new agent to the test on
// started; its behaviour is the runtime's script at that moment.
type fakeRuntime struct {
	mu sync.Mutex
	// script is applied to every agent this runtime starts.
	script fakeScript
	// started receives every agent Start returned, in order.
	started chan *fakeAgent
}

// fakeScript is what a fake agent answers.
type fakeScript struct {
	caps acp.Capabilities
	// startErr fails Start itself (the handshake); newErr, loadErr,
	// resumeErr and forkErr fail those calls.
	startErr, newErr, loadErr, resumeErr, forkErr error
	// replay is what session/load replays before answering.
	replay []acp.Update
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{started: make(chan *fakeAgent, 16)}
}

func (rt *fakeRuntime) set(s fakeScript) {
	rt.mu.Lock()
	rt.script = s
	rt.mu.Unlock()
}

// Start returns a new scripted agent; it never calls OnSpawn, as a runtime
// without a pid would not.
func (rt *fakeRuntime) Start(_ context.Context, req runtimes.StartRequest) (runtimes.Agent, error) {
	rt.mu.Lock()
	s := rt.script
	rt.mu.Unlock()
	if s.startErr != nil {
		return nil, s.startErr
	}
	life, cancel := context.WithCancelCause(context.Background())
	a := &fakeAgent{session: req.SessionID, script: s, h: req.Handler, prompts: make(chan *fakePrompt, 16), cancels: make(chan string, 16),
		done: make(chan struct{}), life: life, cancelLife: cancel}
	rt.started <- a
	return a, nil
}

// next is the agent the runtime started next.
func (rt *fakeRuntime) next(t *testing.T) *fakeAgent {
	t.Helper()
	return recv(t, rt.started, "no agent was started")
}

// fakeAgent is one scripted agent.
type fakeAgent struct {
	// session is the daemon's session the agent was started for.
	session string
	script  fakeScript
	h       acp.Handler
	// prompts receives each prompt once it has been "sent" to the agent;
	// cancels each session/cancel.
	prompts chan *fakePrompt
	cancels chan string

	mu    sync.Mutex
	calls []string
	// done closes when the agent ends (Stop or exit); life, the context of
	// its requests, ends with it with the cause acp.ErrAgentGone, as the
	// standalone runtime's do.
	done       chan struct{}
	once       sync.Once
	exit       acp.Exit
	stops      int
	life       context.Context
	cancelLife context.CancelCauseFunc
}

var _ runtimes.Agent = (*fakeAgent)(nil)

// fakePrompt is a prompt the agent holds until the test answers it.
type fakePrompt struct {
	session string
	prompt  json.RawMessage
	reply   chan fakeAnswer
}

type fakeAnswer struct {
	stop string
	err  error
}

// answer ends the prompt with the agent's stop reason.
func (p *fakePrompt) answer(stop string) { p.reply <- fakeAnswer{stop: stop} }

// fail ends the prompt with an agent error.
func (p *fakePrompt) fail(err error) { p.reply <- fakeAnswer{err: err} }

func (a *fakeAgent) record(call string) {
	a.mu.Lock()
	a.calls = append(a.calls, call)
	a.mu.Unlock()
}

// called returns the ACP calls the agent received, in order.
func (a *fakeAgent) called() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

func (a *fakeAgent) Capabilities() acp.Capabilities { return a.script.caps.Clone() }

func (a *fakeAgent) NewSession(context.Context, acp.SessionParams) (string, error) {
	a.record("session/new")
	if a.script.newErr != nil {
		return "", a.script.newErr
	}
	return "fake-acp-session", nil
}

func (a *fakeAgent) LoadSession(_ context.Context, id string, _ acp.SessionParams) error {
	a.record("session/load " + id)
	if a.script.loadErr != nil {
		return a.script.loadErr
	}
	for _, u := range a.script.replay {
		u.SessionID = id
		a.h.Update(u, func() {}) // replayed history: the actor drops it
	}
	return nil
}

func (a *fakeAgent) ResumeSession(_ context.Context, id string, _ acp.SessionParams) error {
	a.record("session/resume " + id)
	return a.script.resumeErr
}

func (a *fakeAgent) ForkSession(_ context.Context, id string, _ acp.SessionParams) (string, error) {
	a.record("session/fork " + id)
	if a.script.forkErr != nil {
		return "", a.script.forkErr
	}
	return "fake-forked-session", nil
}

func (a *fakeAgent) SessionOptions() acp.SessionOptions { return acp.SessionOptions{} }

// PromptTurn prompts as an agent the daemon runs itself does: the turn's
// name goes unused (turnAgent records it).
func (a *fakeAgent) PromptTurn(ctx context.Context, sessionID, _ string, prompt json.RawMessage, sent func()) (string, error) {
	return a.PromptNotify(ctx, sessionID, prompt, sent)
}

// A fake agent runs on no executor host: the zero value of what one knows.
func (a *fakeAgent) Lost() bool                   { return false }
func (a *fakeAgent) ExitCause() error             { return nil }
func (a *fakeAgent) PendingPermissions() []string { return nil }
func (a *fakeAgent) EndedOnHost() bool            { return false }
func (a *fakeAgent) Gone() <-chan struct{}        { return nil }

// A fake agent is no process: it runs in no sandbox, and says so.
func (a *fakeAgent) Sandboxed() bool       { return false }
func (a *fakeAgent) SandboxReason() string { return "a fake agent in a test" }

// PromptNotify hands the prompt to the test and waits for its answer; an
// agent that ends first answers as a dead connection does.
func (a *fakeAgent) PromptNotify(ctx context.Context, sessionID string, prompt json.RawMessage, sent func()) (string, error) {
	a.record("session/prompt")
	select {
	case <-a.done:
		return "", errDisconnected
	default:
	}
	if sent != nil {
		sent()
	}
	p := &fakePrompt{session: sessionID, prompt: prompt, reply: make(chan fakeAnswer, 1)}
	a.prompts <- p
	select {
	case ans := <-p.reply:
		return ans.stop, ans.err
	case <-a.done:
		return "", errDisconnected
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (a *fakeAgent) Cancel(_ context.Context, sessionID string) error {
	a.record("session/cancel")
	a.cancels <- sessionID
	return nil
}

func (a *fakeAgent) SetMode(context.Context, string, string) error {
	a.record("session/set_mode")
	return nil
}

func (a *fakeAgent) SetConfigOption(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
	a.record("session/set_config_option")
	return json.RawMessage(`[]`), nil
}

// Stop ends the agent as a clean exit on request.
func (a *fakeAgent) Stop() acp.Exit {
	a.mu.Lock()
	a.stops++
	a.mu.Unlock()
	a.end(acp.Exit{Code: 0})
	return a.Exit()
}

// stopped reports how often Stop was called.
func (a *fakeAgent) stopped() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stops
}

// end makes the agent gone with exit (the first end wins).
func (a *fakeAgent) end(exit acp.Exit) {
	a.once.Do(func() {
		a.exit = exit
		a.cancelLife(acp.ErrAgentGone)
		close(a.done)
	})
}

func (a *fakeAgent) Done() <-chan struct{} { return a.done }

func (a *fakeAgent) Exit() acp.Exit {
	<-a.done
	return a.exit
}

// PID is 0: the daemon cannot see this agent's process, as with a remote
// host.
func (a *fakeAgent) PID() int { return 0 }

// prompt is the next prompt the agent receives.
func (a *fakeAgent) prompt(t *testing.T) *fakePrompt {
	t.Helper()
	return recv(t, a.prompts, "the agent received no prompt")
}

// cancelled waits for a session/cancel.
func (a *fakeAgent) cancelled(t *testing.T) {
	t.Helper()
	recv(t, a.cancels, "the agent received no session/cancel")
}

// update sends u and returns once the actor has dealt with it: its credit
// comes back only when what it made of u is committed.
func (a *fakeAgent) update(t *testing.T, u acp.Update) {
	t.Helper()
	done := make(chan struct{})
	a.h.Update(u, func() { close(done) })
	recv(t, done, "update "+string(u.Kind)+" was never done")
}

// askPermission sends a permission request; the outcome arrives on the
// returned channel once the actor answers (or the agent ends).
func (a *fakeAgent) askPermission(req acp.PermissionRequest) <-chan acp.PermissionOutcome {
	out := make(chan acp.PermissionOutcome, 1)
	go func() {
		o, err := a.h.RequestPermission(a.life, req)
		if err != nil {
			o = acp.PermissionOutcome{Cancelled: true}
		}
		out <- o
	}()
	return out
}

// Agent errors as the ACP SDK reports them, so acp.Classify sees the real
// thing.
var (
	errDisconnected   = &sdk.RequestError{Code: -32603, Message: "peer disconnected before response"}
	errUnsupported    = &sdk.RequestError{Code: -32601, Message: "Method not found"}
	errUnknownSession = &sdk.RequestError{Code: -32002, Message: "Resource not found"}
	errAuthRequired   = &sdk.RequestError{Code: -32000, Message: "Authentication required"}
	errInternal       = &sdk.RequestError{Code: -32603, Message: "model overloaded"}
)

// testDeadline is a guard against a hang (a bug), never an assertion on
// speed: it fires well after anything here should have happened.
func testDeadline(t *testing.T) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithTimeoutCause(context.Background(), guardTimeout, errors.New("test guard"))
	t.Cleanup(cancel)
	return ctx.Done()
}

// recv is the next value of ch; failing says what did not happen.
func recv[T any](t *testing.T, ch <-chan T, failure string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-testDeadline(t):
		t.Fatal(failure)
	}
	var zero T
	return zero
}

// fmtCalls renders calls for messages.
func fmtCalls(calls []string) string { return fmt.Sprintf("%q", calls) }
