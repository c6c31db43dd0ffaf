package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
)

// The request-level defences of the HTTP edge: which Host names are served,
// who may call, and what a request body may be. Connection-level ones
// (timeouts, the connection cap) live with the listener in cmd/tetherd.

// hostCheck refuses requests whose Host header names a host this daemon
// does not serve. A page on evil.example whose name an attacker re-points
// at 127.0.0.1 (DNS rebinding) reaches the daemon as same-origin, but its
// requests still say Host: evil.example; only names the user configured,
// loopback names and IP literals (which no DNS answer can rebind) pass.
// /health is checked like every other route: health checkers address the
// daemon by IP or localhost.
func hostCheck(allowed []string) echo.MiddlewareFunc {
	names := map[string]bool{"localhost": true}
	var suffixes []string
	for _, a := range allowed {
		a = normalizeHost(a)
		switch {
		case a == "":
		case strings.HasPrefix(a, "*."):
			suffixes = append(suffixes, a[1:]) // "*.example.com" matches "a.example.com"
		default:
			names[a] = true
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			raw := c.Request().Host
			if raw == "" {
				// HTTP/1.0 without Host: no browser sends that, so it
				// cannot be a rebinding page.
				return next(c)
			}
			h := hostName(raw)
			if names[h] || net.ParseIP(h) != nil || strings.HasSuffix(h, ".localhost") {
				return next(c)
			}
			for _, s := range suffixes {
				if strings.HasSuffix(h, s) {
					return next(c)
				}
			}
			return errcode.New(errcode.HostNotAllowed,
				"host %q is not served here; start tetherd with --allowed-hosts to serve it", h)
		}
	}
}

// hostName is the host part of a Host header, without port, brackets or
// a trailing dot, in lower case.
func hostName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return normalizeHost(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

// bearerAuth requires the daemon token on every route but /health, /ready and the
// Web Shell's public static files. The scheme is matched case-insensitively
// (RFC 9110 §11.1: "Bearer", "bearer" and "BEARER" are one scheme). The two
// stream routes also open with a stream ticket (?ticket=) when no
// Authorization header is sent; the ticket is held for as long as the
// stream is served.
func bearerAuth(token string, tickets *streamTickets) echo.MiddlewareFunc {
	want := []byte(token)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.URL.Path == "/health" || r.URL.Path == "/ready" || isShellRequest(r) || r.Method == http.MethodOptions {
				return next(c)
			}
			authz := r.Header.Get(echo.HeaderAuthorization)
			if tok := r.URL.Query().Get(ticketQuery); authz == "" && tok != "" {
				if stream, ok := requestStreamKey(c); ok {
					start, release, err := tickets.redeem(tok, stream)
					if err != nil {
						c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tetherd"`)
						return err
					}
					// Held while the stream is served, also when it
					// outlives the handler (a parked stream takes it).
					hold := &streamHold{release: release}
					c.SetRequest(r.WithContext(context.WithValue(r.Context(), streamHoldKey{}, hold)))
					defer hold.done()
					// The ticket's start cursor stands in for the
					// Last-Event-ID a fresh EventSource cannot send; its
					// reconnects send their own, which wins.
					if start != "" && r.Header.Get("Last-Event-ID") == "" {
						r.Header.Set("Last-Event-ID", start)
					}
					return next(c)
				}
			}
			scheme, cred, _ := strings.Cut(authz, " ")
			got := []byte(strings.TrimLeft(cred, " "))
			if token == "" || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got, want) != 1 {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tetherd"`)
				return errcode.New(errcode.Unauthorized, "missing or invalid bearer token")
			}
			return next(c)
		}
	}
}

// streamHold is what a request holds until its stream ends (a stream
// ticket's use); streamHoldKey carries it in the request's context.
type streamHold struct {
	release func()
	kept    bool // a parked stream took it: its end releases it
}

type streamHoldKey struct{}

// done releases the hold as the handler returns, unless a parked stream
// kept it.
func (h *streamHold) done() {
	if !h.kept {
		h.release()
	}
}

// readBody reads a request body whole, up to limit bytes, before anything
// else looks at it: a body over the limit is 413 whether its length was
// declared or it came chunked, and a JSON body must be exactly one JSON
// value (trailing data after it is refused, not ignored). The validator and
// the handler then read the buffered copy.
func readBody(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.Body == nil || r.Body == http.NoBody {
				return next(c)
			}
			if r.ContentLength > limit {
				return tooLarge(limit)
			}
			b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					return errcode.Wrap(errcode.RequestTimeout, err, "the request body did not arrive in time")
				}
				return errcode.Wrap(errcode.InvalidRequest, err, "could not read the request body")
			}
			if int64(len(b)) > limit {
				return tooLarge(limit)
			}
			if len(b) > 0 && isJSONMedia(r.Header.Get(echo.HeaderContentType)) && !json.Valid(b) {
				return errcode.New(errcode.MalformedJSON, "request body is not valid JSON: %s", jsonProblem(b))
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			return next(c)
		}
	}
}

func tooLarge(limit int64) error {
	return errcode.New(errcode.PayloadTooLarge, "request body is larger than the limit of %d bytes", limit).With("limit", limit)
}

// isJSONMedia reports whether a Content-Type is JSON (application/json or
// any +json type).
func isJSONMedia(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// jsonProblem says what is wrong with b, which json.Valid refused.
func jsonProblem(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return err.Error()
	}
	return "unexpected data after the JSON value at offset " + itoa(int(dec.InputOffset()))
}

// refuseWritesWhileUnreachable answers a request that would change
// something 503 database_unavailable (Retry-After) while the event writer
// cannot reach the database: nothing of it is done, so asking again later
// is safe. What the writer holds already (an agent's output, changes
// accepted before the outage) commits once the database is back; reads
// fail by themselves, with the same code. A terminal's keystrokes and
// size never touch the database and go on.
func refuseWritesWhileUnreachable(w *events.Writer) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
				return next(c)
			}
			if !w.Unreachable() || strings.HasSuffix(r.URL.Path, "/input") || strings.HasSuffix(r.URL.Path, "/resize") {
				return next(c)
			}
			return errcode.New(errcode.DatabaseUnavailable, "the database cannot be reached; nothing was done: try again").With("retryAfter", 2)
		}
	}
}
