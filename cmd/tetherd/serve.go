package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/labstack/gommon/bytes"
	"golang.org/x/sync/errgroup"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/buildinfo"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/tasks"
	"github.com/tether/tether/internal/telemetry"
	"github.com/tether/tether/internal/terminal"
	"github.com/tether/tether/internal/webhooks"
	"github.com/tether/tether/internal/workspace"
	"github.com/tether/tether/server"
)

// options are the daemon's settings: flag, else environment, else default.
type options struct {
	dataDir   string
	addr      string
	token     string
	logLevel  string
	cors      string
	bodyLimit string
	queue     int
	maxPerms  int
	depth     int
	heartbeat time.Duration
	retention events.Retention
	// webhooks tunes webhook delivery (--webhook-*).
	webhooks  webhooks.Config
	resumeOn  string
	resumeN   int
	restoreTO time.Duration
	// probeN and probeTO are --probe-concurrency and --probe-timeout.
	probeN    int
	probeTO   time.Duration
	maxAgents int
	agentIdle time.Duration
	hub       events.HubConfig
	traceExp  string
	traceURL  string
	edge      edgeOptions
	pprof     bool
	// checkpoints: each turn's executor records a checkpoint of the
	// workspace as the turn starts (sessions.Config.TurnCheckpoints).
	checkpoints bool
	// keepWorktrees: closing a session never removes its worktree, clean
	// or not (sessions.Config.KeepWorktrees).
	keepWorktrees bool
	// terminals: standalone sessions get interactive terminals.
	terminals bool
	// termSandbox runs terminals and commands in a sandbox (--terminal-sandbox).
	termSandbox bool
	files       workspace.FileLimits
	cwd         workspace.CwdPolicy
	// commandOutput and sessionCommandOutput are --command-output-limit and
	// --session-command-output-limit, parsed.
	commandOutput, sessionCommandOutput int64
	// agentEnv is --agent-env-passthrough, comma-separated.
	agentEnv string
	// updateWindow is --agent-update-window.
	updateWindow int
	// writerQueue, mailbox and busy are --writer-queue, --session-mailbox
	// and --session-busy-timeout.
	writerQueue, mailbox int
	busy                 time.Duration
	// ticketTTL and ticketsMax are --stream-ticket-ttl and --stream-tickets-max.
	ticketTTL  time.Duration
	ticketsMax int
	// exec are the executor flags; fileArgs the --fs-* flags as given,
	// for the detached host.
	exec     executorOptions
	fileArgs []string
	// database is --database: "" for SQLite in the data dir, or a
	// postgres:// URL several nodes share (cluster their flags).
	database string
	cluster  clusterOptions
}

const serveUsage = `usage: tetherd [serve] [flags]

Run the daemon: it hosts coding-agent sessions, records every turn in the
database (SQLite in --data-dir, or --database) and serves the HTTP API and
the Web Shell on --addr. A variable in [brackets] sets its flag's default.

Flags:
`

// parseOptions reads serve's command line; an error is the user's.
func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("tetherd serve", flag.ContinueOnError)
	fs.StringVar(&o.dataDir, "data-dir", env("TETHER_DATA_DIR", defaultDataDir()), "data directory (SQLite database, token, agents.yaml) [TETHER_DATA_DIR]")
	fs.StringVar(&o.addr, "addr", env("TETHER_ADDR", "127.0.0.1:7777"), "listen address [TETHER_ADDR]")
	fs.StringVar(&o.token, "token", env("TETHER_TOKEN", ""), "bearer token (default: generated once into <data-dir>/token) [TETHER_TOKEN]")
	fs.StringVar(&o.logLevel, "log-level", env("TETHER_LOG_LEVEL", "info"), "debug, info, warn or error [TETHER_LOG_LEVEL]")
	fs.StringVar(&o.cors, "cors-origins", env("TETHER_CORS_ORIGINS", ""), "comma-separated origins allowed by CORS (default: none) [TETHER_CORS_ORIGINS]")
	fs.StringVar(&o.bodyLimit, "body-limit", env("TETHER_BODY_LIMIT", "2M"), "maximum request body size [TETHER_BODY_LIMIT]")
	fs.IntVar(&o.queue, "queue-limit", 16, "prompts that may wait behind a running turn, per session")
	fs.IntVar(&o.maxPerms, "max-pending-permissions", 16, "open permission requests one agent may have; more are answered cancelled at once")
	fs.StringVar(&o.agentEnv, "agent-env-passthrough", env("TETHER_AGENT_ENV_PASSTHROUGH", ""), "comma-separated variables of the daemon's environment every agent also gets, e.g. ANTHROPIC_API_KEY or OPENAI_* (TETHER_* never) [TETHER_AGENT_ENV_PASSTHROUGH]")
	fs.IntVar(&o.updateWindow, "agent-update-window", acp.DefaultUpdateWindow, "session/update notifications of one agent read but not yet committed; a faster agent is slowed down")
	fs.IntVar(&o.writerQueue, "writer-queue", events.DefaultMaxQueue, "changes that may wait for the event writer; past it their producers wait (a session's agent is read more slowly), so a slow disk slows the agents instead of growing memory")
	fs.IntVar(&o.mailbox, "session-mailbox", mailbox.DefaultLimit, "requests (API calls, agent permission requests) queued for one session; past it the next one waits")
	fs.DurationVar(&o.busy, "session-busy-timeout", mailbox.DefaultBusyTimeout, "how long an API request waits for a busy session to take it before it gets 503 session_overloaded (nothing done)")
	fs.IntVar(&o.depth, "prompt-max-depth", sessions.DefaultPromptMaxDepth, fmt.Sprintf("deepest JSON nesting a prompt may have, the block array being level 1 (at most %d); deeper prompts get 400", sessions.MaxPromptDepth))
	fs.StringVar(&o.resumeOn, "resume-on-start", env("TETHER_RESUME_ON_START", "lazy"), "lazy: restore agents when a session is used; eager: restore resumable sessions at start-up [TETHER_RESUME_ON_START]")
	fs.IntVar(&o.resumeN, "resume-concurrency", 8, "agents restored at once in eager mode")
	fs.DurationVar(&o.restoreTO, "restore-timeout", 60*time.Second, "timeout of each session/new, session/load and session/resume call")
	fs.IntVar(&o.probeN, "probe-concurrency", 2, "agents started at once in the background to learn their capabilities (first start, new profiles)")
	fs.DurationVar(&o.probeTO, "probe-timeout", 30*time.Second, "timeout of one capability probe (start and initialize)")
	fs.IntVar(&o.maxAgents, "max-agents", 32, "live agent processes at most, daemon-wide (0: no cap); past it, requests that need an agent get 503 agent_limit_reached")
	fs.DurationVar(&o.agentIdle, "agent-idle-timeout", 30*time.Minute, "stop an agent with no turn, queued prompt or pending permission for this long; its session stays resumable (0: never)")
	fs.StringVar(&o.traceExp, "trace-exporter", env("TETHER_TRACE_EXPORTER", ""), "OpenTelemetry spans: none, stdout or otlp (OTLP over HTTP; endpoint from --trace-endpoint or OTEL_EXPORTER_OTLP_*) [TETHER_TRACE_EXPORTER]")
	fs.StringVar(&o.traceURL, "trace-endpoint", env("TETHER_TRACE_ENDPOINT", ""), "OTLP/HTTP traces URL, e.g. http://127.0.0.1:4318/v1/traces [TETHER_TRACE_ENDPOINT]")
	fs.BoolVar(&o.checkpoints, "turn-checkpoints", true, "record a checkpoint of the session's directory as each turn starts, so an interrupted turn's recovery report lists the files it changed")
	fs.BoolVar(&o.termSandbox, "terminal-sandbox", false, "run standalone sessions' terminals and commands in a sandbox like the agents' (the session's directory writable, tetherd's data dir and tokens invisible; HOME empty) instead of as tetherd's user; docs/security.md")
	fs.BoolVar(&o.terminals, "terminal", true, "serve interactive terminals for standalone sessions (a shell on a PTY in the session's directory, as tetherd's user; hosted sessions' terminals are their host's, see tetherd host --terminal and docs/security.md)")
	fs.BoolVar(&o.keepWorktrees, "keep-worktrees", false, "closing a session keeps its worktree even when nothing in it is uncommitted (a dirty one is always kept, its branch always)")
	fs.BoolVar(&o.pprof, "pprof", false, "serve the Go profiler under /debug/pprof/ (bearer token required)")
	fs.IntVar(&o.hub.MaxPerSession, "max-session-streams", 64, "live SSE streams per session; at the limit a new one displaces a stalled or quiet one, else gets 429")
	fs.IntVar(&o.hub.MaxTotal, "max-streams", 4096, "live SSE streams in all (same displacement rule)")
	fs.DurationVar(&o.hub.StallAfter, "stream-stall-after", 5*time.Second, "a stream whose write has been in flight this long counts as stalled and is displaced first")
	fs.DurationVar(&o.hub.MinAge, "stream-min-age", 30*time.Second, "a quiet stream may be displaced only once it has been open this long")
	fs.DurationVar(&o.ticketTTL, "stream-ticket-ttl", server.DefaultStreamTicketTTL, "how long a stream ticket (POST /events/tickets) opens its stream, reconnects included")
	fs.IntVar(&o.ticketsMax, "stream-tickets-max", server.DefaultStreamTicketsMax, "stream tickets outstanding at once; past it, POST /events/tickets gets 429")
	fs.DurationVar(&o.heartbeat, "heartbeat", 15*time.Second, "interval of SSE heartbeat comments on idle streams")
	fs.DurationVar(&o.webhooks.Timeout, "webhook-timeout", 10*time.Second, "how long one webhook delivery attempt may take (docs/webhooks.md)")
	fs.DurationVar(&o.webhooks.RetryBase, "webhook-retry-base", time.Second, "wait after a webhook's first failed attempt; doubled after each further one, with jitter")
	fs.DurationVar(&o.webhooks.RetryMax, "webhook-retry-max", 5*time.Minute, "longest wait between a webhook's attempts")
	fs.IntVar(&o.webhooks.MaxFailures, "webhook-max-failures", 20, "failed attempts in a row that disable a webhook (PATCH it active again to resume)")
	fs.DurationVar(&o.retention.Age, "event-retention", 7*24*time.Hour, "prune events of sessions closed longer ago than this (0 keeps everything)")
	fs.IntVar(&o.retention.Keep, "event-retention-keep", 0, "newest events kept per pruned session")
	fs.DurationVar(&o.retention.Every, "event-retention-every", time.Hour, "how often retention runs")
	fs.IntVar(&o.retention.Batch, "event-retention-batch", events.DefaultRetentionBatch, "events one retention delete removes at most; each batch is its own write, so a large backlog never holds up other writes for long")
	o.edge.flags(fs)
	o.exec.flags(fs)
	fs.StringVar(&o.database, "database", env("TETHER_DATABASE_URL", ""), "the database: empty for SQLite in the data dir (one daemon), or a postgres:// URL that several tetherd nodes share (docs/scale-out.md) [TETHER_DATABASE_URL]")
	o.cluster.flags(fs)
	files := addFileFlags(fs)
	commandOutput := fs.String("command-output-limit", "16MiB", "most bytes of one command's output (POST /session/{id}/commands) recorded in the event log; past it command.truncated says so, the rest is dropped and the command runs on to its exit code")
	sessionCommandOutput := fs.String("session-command-output-limit", "256MiB", "most bytes of command output recorded for one session, all its commands together (the same truncation past it)")
	allowCwd := fs.String("allow-cwd", env("TETHER_ALLOW_CWD", ""), "comma-separated directories (with everything under them) allowed as a session cwd although refused as system directories; / allows any [TETHER_ALLOW_CWD]")
	refuseCwd := fs.String("refuse-cwd", env("TETHER_REFUSE_CWD", ""), "comma-separated directories refused as a session cwd, besides the built-in system directories; DIR/... refuses everything under DIR too [TETHER_REFUSE_CWD]")
	fs.Usage = flagUsage(fs, serveUsage, nil, map[string]bool{"token": true, "database": true})
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s (serve takes flags only)", strings.Join(fs.Args(), " "))
	}
	fs.Visit(func(f *flag.Flag) { o.edge.tokenOnCommandLine = o.edge.tokenOnCommandLine || f.Name == "token" })
	if err := absPaths(&o.dataDir, &o.edge.tokenFile, &o.edge.tlsCert, &o.edge.tlsKey, &o.exec.hostsFile, &o.exec.hostDir); err != nil {
		return o, err
	}
	if err := o.edge.check(); err != nil {
		return o, err
	}
	var err error
	if o.files, err = files.parse(); err != nil {
		return o, err
	}
	o.fileArgs = files.args()
	for _, f := range []struct {
		flag, value string
		dst         *int64
	}{{"--command-output-limit", *commandOutput, &o.commandOutput}, {"--session-command-output-limit", *sessionCommandOutput, &o.sessionCommandOutput}} {
		if *f.dst, err = bytes.Parse(f.value); err != nil || *f.dst <= 0 {
			return o, fmt.Errorf("%s: want a positive size such as 16MiB, got %q", f.flag, f.value)
		}
	}
	if o.ticketTTL <= 0 || o.ticketsMax <= 0 {
		return o, errors.New("--stream-ticket-ttl and --stream-tickets-max must be positive")
	}
	if o.cwd.Allow, err = workspace.ParseCwdList(*allowCwd); err != nil {
		return o, fmt.Errorf("--allow-cwd: %w", err)
	}
	if o.cwd.Refuse, err = workspace.ParseCwdList(*refuseCwd); err != nil {
		return o, fmt.Errorf("--refuse-cwd: %w", err)
	}
	if o.dataDir == "" {
		return o, errors.New("no data directory: set --data-dir, TETHER_DATA_DIR or HOME")
	}
	if o.retention.Batch <= 0 {
		return o, fmt.Errorf("--event-retention-batch must be positive, got %d", o.retention.Batch)
	}
	if o.maxPerms <= 0 {
		return o, fmt.Errorf("--max-pending-permissions must be positive, got %d", o.maxPerms)
	}
	if o.updateWindow <= 0 {
		return o, fmt.Errorf("--agent-update-window must be positive, got %d", o.updateWindow)
	}
	if o.writerQueue <= 0 || o.mailbox <= 0 || o.busy <= 0 {
		return o, errors.New("--writer-queue, --session-mailbox and --session-busy-timeout must be positive")
	}
	if o.maxAgents < 0 || o.agentIdle < 0 {
		return o, errors.New("--max-agents and --agent-idle-timeout must not be negative")
	}
	if o.hub.MaxPerSession <= 0 || o.hub.MaxTotal <= 0 || o.hub.StallAfter <= 0 || o.hub.MinAge <= 0 {
		return o, errors.New("--max-session-streams, --max-streams, --stream-stall-after and --stream-min-age must be positive")
	}
	if o.depth < 1 || o.depth > sessions.MaxPromptDepth {
		return o, fmt.Errorf("--prompt-max-depth must be between 1 and %d (SQLite's JSON nesting limit), got %d", sessions.MaxPromptDepth, o.depth)
	}
	if o.resumeOn != "lazy" && o.resumeOn != "eager" {
		return o, fmt.Errorf("--resume-on-start must be lazy or eager, got %q", o.resumeOn)
	}
	if o.database != "" && !store.IsPostgresURL(o.database) {
		return o, fmt.Errorf("--database must be a postgres:// URL (SQLite needs none: it lives in the data dir), got %q", o.database)
	}
	return o, nil
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// defaultDataDir follows the XDG base directory spec.
func defaultDataDir() string {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "tether")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "tether")
	}
	return ""
}

// serve is `tetherd serve`, also `tetherd` alone or with flags first.
func serve(ctx context.Context, args []string) (failed error) {
	o, err := parseOptions(args)
	if err != nil {
		return asUsage(err)
	}
	setGCPercent()
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return asUsage(fmt.Errorf("--log-level: %w", err))
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	shutdownTracing, err := telemetry.Setup(ctx, o.traceExp, o.traceURL, buildinfo.Get().Version)
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.Background()) }()

	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	warnLooseDataDir(logger, o.dataDir)
	tok, err := loadToken(o.dataDir, o.token, o.edge.tokenFile, logger)
	if err != nil {
		return err
	}
	if o.edge.tokenOnCommandLine {
		logger.Warn("--token is visible to every local user in ps; prefer TETHER_TOKEN or --token-file")
	}
	token := tok.value
	// The API's OpenAPI document decodes while the store opens and
	// reconciles: it needs neither, and the API is built right after.
	spec := server.LoadSpec()
	defer func() { _, _ = spec.Wait() }()
	hub := events.NewHub(o.hub)
	st, err := openStore(ctx, o)
	if err != nil {
		return err
	}
	defer st.Close()
	// With a shared database this daemon is a node of a cluster: it
	// registers before anything takes a lease.
	var nd *node
	if o.database != "" {
		ccfg, err := o.cluster.config(o.addr, o.dataDir)
		if err != nil {
			return err
		}
		if nd, err = newNode(ctx, ccfg, o.database, st, hub, logger); err != nil {
			return err
		}
		defer func() {
			// A node that could not start (or serve on) leaves no row
			// that looks alive to the other nodes.
			if failed != nil {
				if uerr := st.UnregisterNode(context.WithoutCancel(ctx), ccfg.NodeID); uerr != nil {
					logger.Warn("cluster: could not remove this node's row", "node", ccfg.NodeID, "err", uerr)
				}
			}
		}()
	}

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locate tetherd executable: %w", err)
	}
	wcfg := events.WriterConfig{MaxQueue: o.writerQueue, Logger: logger}
	if nd != nil {
		wcfg.Cluster = nd.writes
	}
	w, err := events.NewWriter(ctx, st, hub, wcfg)
	if err != nil {
		return err
	}
	defer w.Close()
	warnSandbox(logger)
	// What no sandboxed agent (or terminal) may see: the daemon's files
	// and secrets.
	hidden := append([]string{o.dataDir, o.edge.tokenFile, o.edge.tlsKey, o.exec.hostsFile, o.exec.hostDir},
		remoteTokenFiles(o.dataDir, o.exec.hostsFile)...)
	reg, err := agents.Load(ctx, agents.Config{DataDir: o.dataDir, Self: self, Store: profileWrites{st, w}, Logger: logger,
		EnvPassthrough: splitList(o.agentEnv), ProbeTimeout: o.probeTO, Hidden: hidden})
	if err != nil {
		return err
	}
	// A host drops what is acknowledged: only what is on disk is (w.Durable).
	executors, pool, err := daemonExecutors(o, self, generation(nd), w.Durable, logger)
	if err != nil {
		return err
	}
	// Closed after the manager: the hosts' agents run on, for the next daemon.
	defer pool.Close()
	// Standalone sessions' terminals are this daemon's children and end
	// with it (a hosted session's are its host's).
	var terms *terminal.Set
	if o.terminals {
		terms = terminal.New(terminal.Options{Sandbox: terminalSandbox(o.termSandbox, hidden, self)})
		defer terms.CloseAll()
	}
	mgr := sessions.New(st, w, reg, sessions.Config{QueueLimit: o.queue, MaxPendingPermissions: o.maxPerms, PromptMaxDepth: o.depth, RestoreTimeout: o.restoreTO, MaxAgents: o.maxAgents,
		AgentIdleTimeout: o.agentIdle, Cwd: o.cwd, Files: o.files, UpdateWindow: o.updateWindow,
		MailboxLimit: o.mailbox, BusyTimeout: o.busy, Logger: logger,
		Workspace: workspace.Config{Checkpoints: filepath.Join(o.dataDir, "checkpoints"), Worktrees: filepath.Join(o.dataDir, "worktrees"),
			Terminals: terms},
		TurnCheckpoints: o.checkpoints, KeepWorktrees: o.keepWorktrees,
		CommandOutputLimit: o.commandOutput, SessionCommandOutputLimit: o.sessionCommandOutput,
		// Standalone agents run as children of this daemon; the others in
		// executor hosts (the detached one, remote ones).
		Runtime: runtimes.Standalone{}, Executors: executors, Ownership: ownership(nd)})
	// The supervisor owns every goroutine the daemon starts besides the
	// session manager's own (which mgr.Shutdown joins): the HTTP server,
	// retention, capability probing (each probe starts an agent once; in the
	// background, so start-up never waits on a slow agent), eager resume
	// and a cluster node's loops. Its context ends with the daemon's or
	// when one of them fails.
	sup, supCtx := errgroup.WithContext(ctx)
	if nd != nil {
		// Leases taken by the reconciliation are renewed from the start.
		nd.startLeases(sup, supCtx, mgr)
	}
	// Reconcile before serving: nobody may see the previous daemon's
	// half-finished state as if it were live.
	rec, err := mgr.Reconcile(ctx)
	if err != nil {
		return fmt.Errorf("start-up reconciliation: %w", err)
	}
	logger.Info("reconciled sessions", "sessions", rec.Sessions, "interruptedTurns", rec.InterruptedTurns,
		"reattaching", rec.Reattached, "took", rec.Took)
	if nd != nil {
		// After the reconciliation, which repaired what this node holds:
		// the feed of every node's events, and the takeover of orphans.
		nd.startFollowing(sup, supCtx, mgr, logger)
	}
	var origins []string
	if o.cors != "" {
		origins = strings.Split(o.cors, ",")
	}
	l, err := listen(o.addr, o.edge, logger)
	if err != nil {
		return err
	}
	whc := o.webhooks
	whc.Store, whc.Writer, whc.Hub, whc.Horizon, whc.Logger, whc.UserAgent = st, w, hub, eventHorizon(nd, st), logger, "tetherd/"+buildinfo.Get().Version
	hooks := webhooks.New(whc)
	e, err := server.New(server.Config{Store: st, Sessions: mgr, Tasks: tasks.New(st, w, o.cwd), Agents: reg, Hub: hub, Writer: w, Webhooks: hooks, HeartbeatInterval: o.heartbeat, Token: token,
		BodyLimit: o.bodyLimit, CORSOrigins: origins, StreamTicketTTL: o.ticketTTL, StreamTicketsMax: o.ticketsMax, AllowedHosts: o.edge.allowedHosts(o.addr), Pprof: o.pprof,
		Connections: l.capped.Stats, Spec: spec, Logger: logger, Router: router(nd), Ready: ready(nd), Cluster: clusterStats(nd), EventHorizon: eventHorizon(nd, st)})
	if err != nil {
		_ = l.ln.Close()
		return err
	}
	// Streams end when shutdown starts: Shutdown would otherwise wait for
	// every open SSE connection until its timeout.
	baseCtx, cancelStreams := context.WithCancel(context.Background())
	defer cancelStreams()
	// Parked streams (their connections out of net/http's hands) end
	// with it too.
	srv := l.server(e, server.StreamBase(baseCtx))
	srv.RegisterOnShutdown(cancelStreams)
	printBanner(os.Stderr, stderrIsTerminal(), l, o.dataDir, tok)

	sup.Go(func() error {
		if err := srv.Serve(l.ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	sup.Go(func() error { events.RunRetention(supCtx, w, o.retention, logger); return nil })
	sup.Go(func() error { return hooks.Run(supCtx) })
	sup.Go(func() error { reg.ProbeAll(supCtx, o.probeN); return nil })
	if o.resumeOn == "eager" {
		sup.Go(func() error { mgr.ResumeOnStart(supCtx, o.resumeN); return nil })
	}
	<-supCtx.Done()

	// Ordered shutdown: stop accepting, stop the actors (and their agents),
	// join the background work (probes stop their agents, retention its
	// batches), then the deferred w.Close drains the writer and st.Close
	// closes the store: nothing can write to either once they close.
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	mgr.Shutdown(sctx)
	if nd != nil {
		// Its sessions need not wait for the TTL to be taken over.
		nd.leases.ReleaseAll(sctx)
	}
	return sup.Wait()
}

// splitList splits a comma-separated flag value, dropping empty items and
// surrounding spaces.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// profileWrites persists agent profiles through the event writer, like
// every other write: probes and agent starts record capabilities while
// sessions stream, and a write beside the writer could wait on SQLite's
// lock past busy_timeout.
type profileWrites struct {
	*store.Store
	w *events.Writer
}

// UpsertAgentProfile implements agents.Persister through the writer.
func (p profileWrites) UpsertAgentProfile(ctx context.Context, prof store.AgentProfile) error {
	return p.w.Exec(ctx, func(tx *store.Store) error { return tx.UpsertAgentProfile(ctx, prof) })
}

// daemonGCPercent is the daemon's GOGC unless the environment sets one.
// Its live heap is small (10–20 MB) and its allocation rate high while
// agents stream, so at Go's default of 100 it collects every 30–50 ms and
// the collector's idle workers take the daemon's idle moments: measured
// at full speed, 58 (standalone) and 97 (detached) cycles a 100,000-chunk
// turn. Twice the headroom halves that for some 10–20 MB more heap
// (docs/benchmarks.md, "Fifth round").
const daemonGCPercent = 200

// setGCPercent applies daemonGCPercent unless GOGC is set.
func setGCPercent() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(daemonGCPercent)
	}
}
