// Package server is tetherd's HTTP adapter: the strict-server code generated
// from api/openapi.yaml, the handlers that translate between API types and
// the core, authentication, request validation and problem+json errors.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/labstack/gommon/bytes"
	oapimw "github.com/oapi-codegen/echo-middleware"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/connlimit"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Config wires the HTTP adapter to the core.
type Config struct {
	Store *store.Store
	// Sessions is the session core the handlers call (the daemon's
	// *sessions.Manager; a test's fake).
	Sessions Sessions
	// Tasks creates and changes tasks (the daemon's *tasks.Service).
	Tasks  Tasks
	Agents *agents.Registry
	// Hub delivers committed events to SSE streams.
	Hub *events.Hub
	// Writer is the event log's single writer: every write the handlers
	// make goes through it (and its counts feed /metrics).
	Writer *events.Writer
	// Webhooks delivers webhooks (the daemon's *webhooks.Dispatcher):
	// told of changes, and making test deliveries.
	Webhooks Webhooks
	// HeartbeatInterval is how often idle streams get a comment (default 15s).
	HeartbeatInterval time.Duration
	// Token is the bearer token every route but /health requires.
	Token string
	// BodyLimit caps request bodies, e.g. "2M".
	BodyLimit string
	// AllowedHosts are the Host names served besides loopback names and IP
	// literals; "*.example.com" allows every subdomain of example.com.
	AllowedHosts []string
	// CORSOrigins enables CORS for these origins; empty means no CORS.
	CORSOrigins []string
	// StreamTicketTTL is how long a stream ticket opens its stream
	// (default DefaultStreamTicketTTL).
	StreamTicketTTL time.Duration
	// StreamTicketsMax bounds the stream tickets outstanding at once
	// (default DefaultStreamTicketsMax).
	StreamTicketsMax int
	// Clock, if set, replaces time.Now for ticket expiry (tests move time).
	Clock func() time.Time
	// Pprof serves the Go profiler under /debug/pprof/ (token required).
	Pprof bool
	// Connections, if set, reports the capped listener's counters for
	// /metrics (the listener lives in cmd/tetherd, outside this adapter).
	Connections func() connlimit.Stats
	// Router, when several nodes share the database, sends a session's
	// requests to the node that owns it (nil: this daemon serves all).
	Router Router
	// EventHorizon, when several nodes share the database, is where the
	// log of global ids is settled (store.EventHorizon): the global
	// stream's head, as the nodes' writers commit ids out of order (nil:
	// this daemon's one writer commits them in order).
	EventHorizon func(ctx context.Context) (int64, error)
	// Ready, if set, says whether this node serves requests now (GET
	// /ready): nil error for yes.
	Ready func() error
	// Cluster, if set, reports the node's cluster counters for /metrics.
	Cluster func() ClusterStats
	// Spec, if set, is the OpenAPI document New validates requests
	// against, decoded ahead (LoadSpec); New decodes one itself otherwise.
	// A document serves one New: the validator changes it.
	Spec   *SpecLoad
	Logger *slog.Logger
}

// New builds the echo instance serving the API.
func New(cfg Config) (*echo.Echo, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BodyLimit == "" {
		cfg.BodyLimit = "2M"
	}
	limit, err := bytes.Parse(cfg.BodyLimit)
	if err != nil || limit <= 0 {
		return nil, fmt.Errorf("body limit %q: want a size such as 2M", cfg.BodyLimit)
	}
	load := cfg.Spec
	if load == nil {
		load = LoadSpec()
	}
	spec, err := load.Wait()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = func(err error, c echo.Context) { writeProblem(c, err, cfg.Logger) }
	latency := newHTTPMetrics()
	e.Use(latency.middleware)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			cfg.Logger.Error("panic in handler", "err", err, "stack", string(stack))
			return err
		},
	}))
	if len(cfg.CORSOrigins) > 0 {
		e.Use(middleware.CORSWithConfig(middleware.CORSConfig{AllowOrigins: cfg.CORSOrigins,
			AllowHeaders: []string{echo.HeaderAuthorization, echo.HeaderContentType, "Last-Event-ID"}}))
	}
	e.Use(hostCheck(cfg.AllowedHosts))
	// Signed with the token's key: this daemon after a restart, and any
	// node of its cluster, redeems a ticket.
	tickets := newStreamTickets(cfg.StreamTicketTTL, cfg.StreamTicketsMax, cfg.Clock, ticketKey(cfg.Token))
	e.Use(bearerAuth(cfg.Token, tickets))
	e.Use(readBody(limit))
	if cfg.Writer != nil {
		e.Use(refuseWritesWhileUnreachable(cfg.Writer))
	}
	if cfg.Router != nil {
		e.Use(forwardToOwner(cfg.Router, cfg.Logger))
	}
	e.Use(oapimw.OapiRequestValidatorWithOptions(spec, &oapimw.Options{
		// The Web Shell's static files are not API operations.
		Skipper: func(c echo.Context) bool {
			return isShellRequest(c.Request()) || (cfg.Pprof && isPprofRequest(c.Request()))
		},
		DoNotValidateServers:  true,
		SilenceServersWarning: true,
		Options: openapi3filter.Options{
			// Authentication already ran; the validator only checks shapes.
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			MultiError:         false,
		},
		ErrorHandler: func(c echo.Context, he *echo.HTTPError) error { return he },
	}))
	h := &handlers{cfg: cfg, http: latency, tickets: tickets}
	RegisterHandlers(e, NewStrictHandler(h, []StrictMiddlewareFunc{withHTTPRequest}))
	registerWebShell(e)
	if cfg.Pprof {
		registerPprof(e)
	}
	return e, nil
}

func jsonEncode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func itoa(n int) string { return strconv.Itoa(n) }

// splitStates accepts both repeated and comma-separated ?state= values.
func splitStates(in []SessionState) []session.SessionState {
	var out []session.SessionState
	for _, s := range in {
		for _, p := range strings.Split(string(s), ",") {
			if p != "" {
				out = append(out, session.SessionState(p))
			}
		}
	}
	return out
}
