package sessions

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/commands"
	"github.com/tether/tether/internal/credentials"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/workspace"
)

// Profiles resolves agent profile ids to launchable specs; only the daemon's
// configuration can name a command.
type Profiles interface {
	// Spec, RecordCredentials, ConfigEdited.
	credentials.Profiles
	RecordCapabilities(ctx context.Context, id string, caps acp.Capabilities) error
	// Fingerprint identifies the profile's launch configuration
	// (agents.Registry.Fingerprint); "" for an unknown profile.
	Fingerprint(id string) string
}

// Config tunes the session runtime.
type Config struct {
	// QueueLimit bounds prompts waiting behind a running turn.
	QueueLimit int
	// MaxPendingPermissions bounds an agent's open permission requests;
	// past it a request is answered "cancelled" at once and stored nowhere,
	// so a flooding agent cannot fill the transcript, memory or the user's
	// screen with questions (default 16).
	MaxPendingPermissions int
	// StartTimeout bounds process start + initialize.
	StartTimeout time.Duration
	// RestoreTimeout bounds each session/new, session/resume and
	// session/load call; real agents can take ~10 s offline.
	RestoreTimeout time.Duration
	// ResumeWait bounds how long a resume request waits for the agent.
	ResumeWait time.Duration
	// ReplayGrace is how long a load that replayed nothing waits for a
	// replay sent after the response before the context counts as lost.
	ReplayGrace time.Duration
	// StopGrace is how long stopping an agent lets it end on its own before
	// it is killed (StartRequest.StopGrace).
	StopGrace time.Duration
	// CancelGrace is how long a cancelled turn may take to end before the
	// agent is stopped.
	CancelGrace time.Duration
	// Cwd decides which directories may be a session's (or a task's)
	// working directory; the zero value refuses system directories.
	Cwd workspace.CwdPolicy
	// Files bounds each agent's fs/* requests.
	Files workspace.FileLimits
	// Workspace bounds the workspace API's requests on standalone
	// sessions and says where their checkpoints are kept (a host has its
	// own).
	Workspace workspace.Config
	// TurnCheckpoints has each turn's executor record a checkpoint of the
	// workspace as the turn starts, so that an interrupted turn's recovery
	// report lists the files it changed (workspace.OpCheckpoint).
	TurnCheckpoints bool
	// KeepWorktrees: closing a session keeps its worktree even when
	// nothing in it is uncommitted (a dirty one is always kept).
	KeepWorktrees bool
	// CommandOutputLimit bounds the output of one command recorded in the
	// event log, SessionCommandOutputLimit that of all the session's
	// commands together (package commands: Config.OutputLimit,
	// SessionOutputLimit).
	CommandOutputLimit, SessionCommandOutputLimit int64
	// UpdateWindow bounds one agent's session/update notifications read but
	// not yet committed; a faster agent is slowed down (StartRequest).
	UpdateWindow int
	// MaxAgents caps live agent processes daemon-wide (0: no cap); a
	// profile's MaxAgents caps its own. Past a cap, whatever would start an
	// agent is refused with agent_limit_reached and admits nothing.
	MaxAgents int
	// AgentIdleTimeout stops an agent that has had no turn, queued prompt
	// or pending permission for this long (0: never). Its session stays
	// resumable: the next prompt restores it.
	AgentIdleTimeout time.Duration
	// MailboxLimit bounds the commands (API requests, permission requests)
	// queued for one session's actor (default mailbox.DefaultLimit); past it
	// the next one waits for room.
	MailboxLimit int
	// BusyTimeout is how long an API request waits for a busy session's
	// actor to take it before it is answered session_overloaded (default
	// mailbox.DefaultBusyTimeout).
	BusyTimeout time.Duration
	// PromptMaxDepth bounds how deeply a prompt's JSON may nest (the block
	// array is level 1); at most MaxPromptDepth.
	PromptMaxDepth int
	// Runtime starts the agents of standalone sessions (default
	// Standalone: child processes of the daemon).
	Runtime runtimes.Runtime
	// Executors chooses each session's executor and gives its runtime
	// (default: standalone only, with Runtime).
	Executors runtimes.Executors
	// Ownership, when several nodes share the database, is this node's
	// lease table: a session comes to life here only under its lease.
	Ownership Ownership
	Logger    *slog.Logger
	// Outgoing, if set, receives every line sent to any agent (tests).
	Outgoing func(sessionID string) interface{ Write([]byte) (int, error) }
}

func (c *Config) defaults() {
	if c.MaxPendingPermissions <= 0 {
		c.MaxPendingPermissions = 16
	}
	if c.QueueLimit <= 0 {
		c.QueueLimit = 16
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 60 * time.Second
	}
	if c.RestoreTimeout <= 0 {
		c.RestoreTimeout = 60 * time.Second
	}
	if c.ReplayGrace <= 0 {
		c.ReplayGrace = 500 * time.Millisecond
	}
	if c.ResumeWait <= 0 {
		c.ResumeWait = 90 * time.Second
	}
	if c.StopGrace <= 0 {
		c.StopGrace = 3 * time.Second
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = 10 * time.Second
	}
	if c.PromptMaxDepth <= 0 {
		c.PromptMaxDepth = DefaultPromptMaxDepth
	}
	c.PromptMaxDepth = min(c.PromptMaxDepth, MaxPromptDepth)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Runtime == nil {
		c.Runtime = runtimes.Standalone{}
	}
	if c.Executors == nil {
		c.Executors = runtimes.StandaloneOnly(c.Runtime)
	}
}

// Manager owns the live session actors.
type Manager struct {
	store    *store.Store
	w        EventLog
	profiles Profiles
	cfg      Config

	// slots counts live agent processes against the caps.
	slots *agentSlots

	mu     sync.Mutex
	actors map[string]*actor
	// repairing are the sessions a reconciliation is repairing (a
	// takeover on a running node): an actor for one waits until the
	// repair has committed and registered its own, so that no session has
	// two performers (reconcile.go: claimRepair).
	repairing map[string]chan struct{}
	shutdown  bool

	// life is cancelled by Shutdown: agent starts in flight abort (and
	// stop their process).
	life   context.Context
	cancel context.CancelFunc
	// work counts every goroutine the manager starts (actor loops, agent
	// starts and stops, turns, exit watchers); Shutdown waits for it, so
	// none outlives the manager and touches the writer or store after
	// they close. Start them with spawn.
	work sync.WaitGroup
	// reporting counts the work under way in the background that will
	// write to a session: the workspace reports of interrupted turns
	// (reportChanges) and the automatic continuations that may follow
	// them (maybeAutoContinue), until their actor has recorded them: what
	// a test waits for before it calls a session settled.
	reporting atomic.Int64
	// credentials records and checks agents' credentials (package
	// credentials).
	credentials *credentials.Checker
	// commands runs the sessions' commands (package commands).
	commands *commands.Runner
	// history keeps each session's whole-history check for planning.
	history *historyChecks
	// afterLoad, if set, runs in actor between loading a session and
	// registering its actor (tests: a shutdown in that window).
	afterLoad func()
	// after runs f once d has passed, unless the stop it returns is
	// called first: the backoff of a reload after a failed write
	// (time.AfterFunc; tests count and fire them instead).
	after func(d time.Duration, f func()) (stop func() bool)
}

// afterFunc is Manager.after outside tests.
func afterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// spawn runs f in a goroutine owned by the manager (see work). It is called
// either under mu before shutdown, or from a goroutine spawn already owns:
// the count is then never zero while Shutdown waits.
func (m *Manager) spawn(f func()) {
	m.work.Add(1)
	go func() {
		defer m.work.Done()
		f()
	}()
}

// New returns a Manager. Sessions are brought to life on first use. Every
// change they make goes through w, the event log (the daemon's single
// writer, events.Writer).
func New(st *store.Store, w EventLog, profiles Profiles, cfg Config) *Manager {
	cfg.defaults()
	life, cancel := context.WithCancel(context.Background())
	m := &Manager{store: st, w: w, profiles: profiles, cfg: cfg, slots: newAgentSlots(cfg.MaxAgents), actors: map[string]*actor{}, repairing: map[string]chan struct{}{},
		history: newHistoryChecks(), life: life, cancel: cancel, after: afterFunc}
	m.commands = commands.New(commands.Config{Store: st, Sessions: m, OutputLimit: cfg.CommandOutputLimit,
		SessionOutputLimit: cfg.SessionCommandOutputLimit, Life: life, Spawn: m.spawn})
	m.credentials = credentials.New(credentials.Config{Profiles: profiles, Executors: cfg.Executors, Files: cfg.Files,
		StartTimeout: cfg.StartTimeout, RestoreTimeout: cfg.RestoreTimeout, StopGrace: cfg.StopGrace, UpdateWindow: cfg.UpdateWindow,
		Logger: cfg.Logger, Life: life})
	return m
}

// RunCommand starts command in the session's directory on its executor
// and follows it (package commands).
func (m *Manager) RunCommand(ctx context.Context, sessionID, command string) (store.Command, error) {
	return m.commands.Run(ctx, sessionID, command)
}

// ListCommands returns the session's commands.
func (m *Manager) ListCommands(ctx context.Context, sessionID string) ([]store.Command, error) {
	return m.commands.List(ctx, sessionID)
}

// Load brings session sessionID to life on this node (commands.Sessions).
func (m *Manager) Load(ctx context.Context, sessionID string) error {
	_, err := m.actor(ctx, sessionID)
	return err
}

// Record has the session's actor submit the change made, given the
// session's task id, and waits until it is durable (commands.Sessions):
// a change of a goroutine that is not the actor's, in the session's order.
func (m *Manager) Record(ctx context.Context, sessionID string, made func(taskID string) events.Change) error {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return err
	}
	_, err = callWrites(ctx, a, func() (struct{}, error) {
		a.change(made(a.sess.TaskID))
		return struct{}{}, nil
	})
	return err
}

// ResolveCwd checks a client-supplied working directory against the
// daemon's cwd policy and returns its canonical path.
func (m *Manager) ResolveCwd(path string) (string, error) { return m.cfg.Cwd.ResolveDir(path) }

// actor returns the live actor of a session, loading it from the store
// when the daemon has not touched the session since it started. A loaded
// actor first repairs what the store holds of the session that nothing
// live will finish (takeUp): an earlier actor retired or dropped with
// writes the store refused left it open.
func (m *Manager) actor(ctx context.Context, id string) (*actor, error) {
	m.mu.Lock()
	if m.shutdown {
		m.mu.Unlock()
		return nil, errcode.New(errcode.ServiceShuttingDown, "tetherd is shutting down")
	}
	if a, ok := m.actors[id]; ok {
		m.mu.Unlock()
		return a, nil
	}
	if wait, ok := m.repairing[id]; ok {
		m.mu.Unlock()
		select {
		case <-wait:
			return m.actor(ctx, id)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	m.mu.Unlock()
	if own := m.cfg.Ownership; own != nil {
		// Before it is read: what another node wrote up to its last
		// commit is then in what this actor loads.
		if _, err := own.Acquire(ctx, id); err != nil {
			return nil, err
		}
	}
	l, err := m.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if m.afterLoad != nil {
		m.afterLoad()
	}
	a, wait, err := m.register(l, false)
	if wait != nil {
		// A reconciliation began repairing it while it loaded: what it
		// read is stale; the repair's actor is the session's.
		select {
		case <-wait:
			return m.actor(ctx, id)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return a, err
}

// register makes the live actor of the session l holds (unless another
// load registered one first), whose first act is to take up what l
// leaves open (takeUp). A load (repair false) of a session a
// reconciliation is repairing registers nothing and gets the channel to
// wait on (claimRepair).
func (m *Manager) register(l loaded, repair bool) (*actor, <-chan struct{}, error) {
	id := l.sess.ID
	_, _, specErr := m.profiles.Spec(l.sess.AgentProfileID)
	in := restartedOf(l.sess, l.exec, l.turns, l.pending, specErr == nil, true)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shutdown {
		// Shutdown has taken its list of actors: one registered now would
		// never be stopped.
		return nil, nil, errcode.New(errcode.ServiceShuttingDown, "tetherd is shutting down")
	}
	if a, ok := m.actors[id]; ok {
		return a, nil, nil
	}
	if wait, ok := m.repairing[id]; ok && !repair {
		return nil, wait, nil
	}
	a := newActor(m, l.sess, l.exec, l.turns)
	a.mb.Post(func() { a.takeUp(in) }) // first: before whatever loaded it
	m.actors[id] = a
	m.spawn(func() {
		a.mb.Run()
		a.stopTimers() // on the actor's goroutine: its mailbox is closed and drained
	})
	return a, nil, nil
}

// Prompt admits a prompt into a session (running now, or queued).
func (m *Manager) Prompt(ctx context.Context, sessionID string, in PromptInput) (PromptResult, error) {
	if err := m.checkPrompt(in.Prompt); err != nil {
		return PromptResult{}, err
	}
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return PromptResult{}, err
	}
	in.kind = session.TurnPrompt
	return a.prompt(ctx, in)
}

// Cancel cancels the running turn (and drops queued ones unless in.KeepQueue).
func (m *Manager) Cancel(ctx context.Context, sessionID string, in CancelInput) (CancelResult, error) {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return CancelResult{}, err
	}
	res, err := callWrites(ctx, a, func() (CancelResult, error) { return a.cancel(in) })
	if err != nil {
		return CancelResult{}, err
	}
	return res, a.sync(ctx)
}

// AnswerPermission resolves a pending permission request.
func (m *Manager) AnswerPermission(ctx context.Context, sessionID, requestID string, out acp.PermissionOutcome) (session.Permission, error) {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return session.Permission{}, err
	}
	type answer struct {
		p       session.Permission
		pending *events.Pending
	}
	var ans answer
	for {
		var attaching bool
		ans, err = mailbox.Call(ctx, a.mb, func() (answer, error) {
			p, pending, err := a.answerPermission(requestID, out)
			_, onHost := a.hostPending[requestID]
			attaching = a.starting || onHost && a.conn != nil
			return answer{p, pending}, err
		})
		// A request still pending on the executor host while its agent is
		// being attached again (after a restart or a takeover) becomes
		// live once the attach has given it back (the host asks it again
		// after the attach: hostPending until then): the answer waits for
		// it instead of being refused.
		var de *errcode.Error
		if !attaching || !errors.As(err, &de) || de.Code != errcode.PermissionResolved || de.Details["state"] != string(session.PermissionPending) {
			break
		}
		select {
		case <-ctx.Done():
			return session.Permission{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		return session.Permission{}, err
	}
	if _, err := ans.pending.Wait(ctx); err != nil {
		return session.Permission{}, err
	}
	return m.store.GetPermission(ctx, sessionID, requestID)
}

// Shutdown stops every live agent and waits (bounded by ctx) for every
// goroutine the manager started. From its start no new actor is created,
// so none escapes it. Running turns are left as they are in the store: the
// next start-up reconciles them as interrupted (decideShutdown). The
// writer must stay open until Shutdown returns.
func (m *Manager) Shutdown(ctx context.Context) {
	m.mu.Lock()
	m.shutdown = true
	actors := make([]*actor, 0, len(m.actors))
	for _, a := range m.actors {
		actors = append(actors, a)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range actors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _ := mailbox.Call(ctx, a.mb, a.shutdown)
			if s.conn != nil {
				s.conn.Stop()
				_ = a.do(ctx, func() { a.recordStopped(s.conn, s.why) })
			}
			a.mb.Close()
		}()
	}
	wg.Wait()
	m.cancel()
	done := make(chan struct{})
	go func() { m.work.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// do runs f on the actor and waits until it has run.
func (a *actor) do(ctx context.Context, f func()) error {
	_, err := mailbox.Call(ctx, a.mb, func() (struct{}, error) { f(); return struct{}{}, nil })
	return err
}

// sync waits until every change the actor has submitted so far is durable.
func (a *actor) sync(ctx context.Context) error {
	p, err := mailbox.Call(ctx, a.mb, func() (*events.Pending, error) { return a.synced(), nil })
	if err != nil || p == nil {
		return err
	}
	_, err = p.Wait(ctx)
	return err
}
