package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether/tether/internal/errcode"
)

// Router says which node serves a session's requests when several nodes
// share the database (internal/cluster.Leases).
type Router interface {
	// Owner is the URL of the live node that owns the session when that
	// is another node; "" when this node serves it (it owns it, or nobody
	// does and it takes it on the request's first write).
	Owner(ctx context.Context, sessionID string) (string, error)
	// NodeID is this node's id.
	NodeID() string
	// Owns reports whether this node holds the session's lease now.
	Owns(sessionID string) bool
}

// forwardedHeader marks a request one node forwarded to another: the
// receiving node serves it whatever it believes, so a request makes at
// most one hop while ownership moves.
const forwardedHeader = "X-Tether-Forwarded-By"

// forwardToOwner sends a session's requests to the node that owns the
// session, transparently for the client: the answer, a stream of events
// or a WebSocket (a terminal) come back as the owner sends them. A
// session's event stream and transcript are served by any node from the
// log (every node's feed follows every commit), so they stay here.
// forwardDialTimeout bounds a forwarded request's connect to the owner.
const forwardDialTimeout = time.Second

func forwardToOwner(r Router, log *slog.Logger) echo.MiddlewareFunc {
	var mu sync.Mutex
	proxies := map[string]*httputil.ReverseProxy{}
	// A node cut off from the network answers no connect: without a
	// bound the default 30 s held every request forwarded to it (and the
	// balancer's clients with them) well past the lease that hands its
	// sessions to another node. Nodes share a network; a second is long.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: forwardDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	proxyTo := func(owner string) (*httputil.ReverseProxy, error) {
		mu.Lock()
		defer mu.Unlock()
		if p := proxies[owner]; p != nil {
			return p, nil
		}
		target, err := url.Parse(owner)
		if err != nil {
			return nil, err
		}
		p := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.Out.Host = pr.In.Host // the owner checks the Host the client used
				pr.Out.Header.Set(forwardedHeader, r.NodeID())
			},
			Transport: transport,
			// Event streams are written as they come.
			FlushInterval: -1,
			ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
				log.Warn("cluster: forwarding to the session's owner failed", "owner", owner, "path", req.URL.Path, "err", err)
				writeProblemHTTP(w, req, errcode.Wrap(errcode.SessionOwnedElsewhere, err,
					"the node that owns this session (%s) cannot be reached; another node takes the session once its lease expires: retry", owner).
					With("retryAfter", 1), log)
			},
		}
		proxies[owner] = p
		return p, nil
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.Header.Get(forwardedHeader) != "" {
				return next(c)
			}
			id := forwardedSession(c)
			if id == "" {
				return next(c)
			}
			owner, err := r.Owner(req.Context(), id)
			if err != nil || owner == "" {
				return next(c)
			}
			p, err := proxyTo(owner)
			if err != nil {
				return err
			}
			p.ServeHTTP(c.Response(), req)
			return nil
		}
	}
}

// forwardedSession is the session whose owner a request acts on, "" when
// any node serves it: every per-session route but those served from the
// log anywhere, and a terminal's ticket (only the owner knows the
// terminal, on its executor).
func forwardedSession(c echo.Context) string {
	path, r := c.Path(), c.Request()
	if path == "/events/tickets" && r.Method == http.MethodPost {
		return terminalTicketSession(r)
	}
	if !strings.HasPrefix(path, "/session/:id") {
		return ""
	}
	if r.Method == http.MethodGet {
		switch path {
		case "/session/:id", "/session/:id/events", "/session/:id/transcript", "/session/:id/history.jsonl",
			"/session/:id/turns", "/session/:id/turns/:promptId":
			return ""
		}
	}
	id, err := url.PathUnescape(c.Param("id"))
	if err != nil {
		return ""
	}
	return id
}

// terminalTicketSession is the session of a terminal ticket's request
// body ("" for a stream's ticket, which any node issues). readBody has
// buffered the body, so reading it here leaves it for the handler.
func terminalTicketSession(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	var body struct {
		SessionID  string `json:"sessionId"`
		TerminalID string `json:"terminalId"`
	}
	if json.Unmarshal(b, &body) != nil || body.TerminalID == "" {
		return ""
	}
	return body.SessionID
}
