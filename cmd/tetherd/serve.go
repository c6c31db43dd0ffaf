package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/telemetry"
	"github.com/tether/tether/server"
)

const version = "0.1.0"

// options are the daemon's settings: flag, else environment, else default.
type options struct {
	dataDir   string
	addr      string
	token     string
	logLevel  string
	cors      string
	bodyLimit string
	queue     int
	depth     int
	heartbeat time.Duration
	retention events.Retention
	resumeOn  string
	resumeN   int
	restoreTO time.Duration
	traceExp  string
	traceURL  string
}

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
	fs.IntVar(&o.depth, "prompt-max-depth", sessions.DefaultPromptMaxDepth, fmt.Sprintf("deepest JSON nesting a prompt may have, the block array being level 1 (at most %d); deeper prompts get 400", sessions.MaxPromptDepth))
	fs.StringVar(&o.resumeOn, "resume-on-start", env("TETHER_RESUME_ON_START", "lazy"), "lazy: restore agents when a session is used; eager: restore resumable sessions at start-up [TETHER_RESUME_ON_START]")
	fs.IntVar(&o.resumeN, "resume-concurrency", 8, "agents restored at once in eager mode")
	fs.DurationVar(&o.restoreTO, "restore-timeout", 60*time.Second, "timeout of each session/new, session/load and session/resume call")
	fs.StringVar(&o.traceExp, "trace-exporter", env("TETHER_TRACE_EXPORTER", ""), "OpenTelemetry spans: none, stdout or otlp (OTLP over HTTP; endpoint from --trace-endpoint or OTEL_EXPORTER_OTLP_*) [TETHER_TRACE_EXPORTER]")
	fs.StringVar(&o.traceURL, "trace-endpoint", env("TETHER_TRACE_ENDPOINT", ""), "OTLP/HTTP traces URL, e.g. http://127.0.0.1:4318/v1/traces [TETHER_TRACE_ENDPOINT]")
	fs.DurationVar(&o.heartbeat, "heartbeat", 15*time.Second, "interval of SSE heartbeat comments on idle streams")
	fs.DurationVar(&o.retention.Age, "event-retention", 7*24*time.Hour, "prune events of sessions closed longer ago than this (0 keeps everything)")
	fs.IntVar(&o.retention.Keep, "event-retention-keep", 0, "newest events kept per pruned session")
	fs.DurationVar(&o.retention.Every, "event-retention-every", time.Hour, "how often retention runs")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.dataDir == "" {
		return o, errors.New("no data directory: set --data-dir, TETHER_DATA_DIR or HOME")
	}
	if o.depth < 1 || o.depth > sessions.MaxPromptDepth {
		return o, fmt.Errorf("--prompt-max-depth must be between 1 and %d (SQLite's JSON nesting limit), got %d", sessions.MaxPromptDepth, o.depth)
	}
	if o.resumeOn != "lazy" && o.resumeOn != "eager" {
		return o, fmt.Errorf("--resume-on-start must be lazy or eager, got %q", o.resumeOn)
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

func serve(ctx context.Context, args []string) error {
	o, err := parseOptions(args)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	shutdownTracing, err := telemetry.Setup(ctx, o.traceExp, o.traceURL, version)
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.Background()) }()

	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	token, err := loadToken(o.dataDir, o.token)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, filepath.Join(o.dataDir, "tether.db"))
	if err != nil {
		return err
	}
	defer st.Close()

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locate tetherd executable: %w", err)
	}
	hub := events.NewHub(events.HubConfig{})
	w, err := events.NewWriter(ctx, st, hub, events.WriterConfig{Logger: logger})
	if err != nil {
		return err
	}
	defer w.Close()
	reg, err := agents.Load(ctx, agents.Config{DataDir: o.dataDir, Self: self, Store: profileWrites{st, w}, Logger: logger})
	if err != nil {
		return err
	}
	mgr := sessions.New(st, w, reg, sessions.Config{QueueLimit: o.queue, PromptMaxDepth: o.depth, RestoreTimeout: o.restoreTO, Logger: logger})
	// Reconcile before serving: nobody may see the previous daemon's
	// half-finished state as if it were live.
	rec, err := mgr.Reconcile(ctx)
	if err != nil {
		return fmt.Errorf("start-up reconciliation: %w", err)
	}
	logger.Info("reconciled sessions", "sessions", rec.Sessions, "interruptedTurns", rec.InterruptedTurns, "took", rec.Took)
	var origins []string
	if o.cors != "" {
		origins = strings.Split(o.cors, ",")
	}
	go events.RunRetention(ctx, w, o.retention, logger)
	e, err := server.New(server.Config{Store: st, Sessions: mgr, Agents: reg, Hub: hub, Writer: w, HeartbeatInterval: o.heartbeat, Token: token,
		BodyLimit: o.bodyLimit, CORSOrigins: origins, Logger: logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	// Streams end when shutdown starts: Shutdown would otherwise wait for
	// every open SSE connection until its timeout.
	baseCtx, cancelStreams := context.WithCancel(context.Background())
	defer cancelStreams()
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return baseCtx }}
	srv.RegisterOnShutdown(cancelStreams)
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(os.Stderr, "tetherd %s listening on %s\n  data dir: %s\n  token:    %s\n  try:      curl -H 'Authorization: Bearer %s' %s/agents\n",
		version, base, o.dataDir, token, token, base)
	// The token travels in the fragment, which the browser never sends.
	fmt.Fprintf(os.Stderr, "\n  Web Shell: %s/shell/#token=%s\n\n", browserBase(ln.Addr()), token)
	// Probing capabilities starts each agent once; do it in the background
	// so start-up never waits on a slow agent.
	go reg.ProbeAll(context.WithoutCancel(ctx), 2)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if o.resumeOn == "eager" {
		go mgr.ResumeOnStart(ctx, o.resumeN)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	mgr.Shutdown(sctx)
	return nil
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

// browserBase is the listener's URL as a browser on this machine reaches
// it: a wildcard address (":7777", "0.0.0.0") becomes 127.0.0.1.
func browserBase(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return "http://" + a.String()
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

// loadToken returns the explicit token, or the one stored in the data dir,
// creating it (mode 0600) on first start.
func loadToken(dir, explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	path := filepath.Join(dir, "token")
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read token: %w", err)
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	t := hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	return t, nil
}
