// Package server is tetherd's HTTP adapter: the strict-server code generated
// from api/openapi.yaml, the handlers that translate between API types and
// the core, authentication, request validation and problem+json errors.
package server

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	oapimw "github.com/oapi-codegen/echo-middleware"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
)

// Version is reported by /health.
var Version = "0.1.0"

// Config wires the HTTP adapter to the core.
type Config struct {
	Store    *store.Store
	Sessions *sessions.Manager
	Agents   *agents.Registry
	// Hub delivers committed events to SSE streams.
	Hub *events.Hub
	// Writer is the event log's single writer: every write the handlers
	// make goes through it (and its counts feed /metrics).
	Writer *events.Writer
	// HeartbeatInterval is how often idle streams get a comment (default 15s).
	HeartbeatInterval time.Duration
	// Token is the bearer token every route but /health requires.
	Token string
	// BodyLimit caps request bodies, e.g. "2M".
	BodyLimit string
	// CORSOrigins enables CORS for these origins; empty means no CORS.
	CORSOrigins []string
	Logger      *slog.Logger
}

// New builds the echo instance serving the API.
func New(cfg Config) (*echo.Echo, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BodyLimit == "" {
		cfg.BodyLimit = "2M"
	}
	spec, err := GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = func(err error, c echo.Context) { writeProblem(c, err, cfg.Logger) }
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
	e.Use(middleware.BodyLimit(cfg.BodyLimit))
	e.Use(bearerAuth(cfg.Token))
	e.Use(oapimw.OapiRequestValidatorWithOptions(spec, &oapimw.Options{
		// The Web Shell's static files are not API operations.
		Skipper:               func(c echo.Context) bool { return isShellRequest(c.Request()) },
		DoNotValidateServers:  true,
		SilenceServersWarning: true,
		Options: openapi3filter.Options{
			// Authentication already ran; the validator only checks shapes.
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			MultiError:         false,
		},
		ErrorHandler: func(c echo.Context, he *echo.HTTPError) error { return he },
	}))
	h := &handlers{cfg: cfg}
	RegisterHandlers(e, NewStrictHandler(h, nil))
	registerWebShell(e)
	return e, nil
}

// bearerAuth requires the daemon token on every route but /health and the
// Web Shell's public static files.
func bearerAuth(token string) echo.MiddlewareFunc {
	want := []byte("Bearer " + token)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().URL.Path == "/health" || isShellRequest(c.Request()) || c.Request().Method == http.MethodOptions {
				return next(c)
			}
			got := []byte(c.Request().Header.Get(echo.HeaderAuthorization))
			if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tetherd"`)
				return errcode.New(errcode.Unauthorized, "missing or invalid bearer token")
			}
			return next(c)
		}
	}
}

func jsonEncode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func itoa(n int) string { return strconv.Itoa(n) }

// splitStates accepts both repeated and comma-separated ?state= values.
func splitStates(in []SessionState) []store.SessionState {
	var out []store.SessionState
	for _, s := range in {
		for _, p := range strings.Split(string(s), ",") {
			if p != "" {
				out = append(out, store.SessionState(p))
			}
		}
	}
	return out
}
