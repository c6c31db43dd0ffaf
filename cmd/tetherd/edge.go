package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tether/tether/internal/connlimit"
)

// edgeOptions are the settings of the daemon's network edge: timeouts, the
// connection cap, served host names, TLS and where the token comes from.
type edgeOptions struct {
	maxConns      int
	headerTimeout time.Duration
	bodyTimeout   time.Duration
	writeTimeout  time.Duration
	idleTimeout   time.Duration
	hosts         string
	tlsCert       string
	tlsKey        string
	insecureHTTP  bool
	tokenFile     string
	// tokenOnCommandLine: --token was given as a flag (visible in ps).
	tokenOnCommandLine bool
}

func (o *edgeOptions) flags(fs *flag.FlagSet) {
	fs.IntVar(&o.maxConns, "max-connections", connlimit.DefaultMax(), "connections open at once; at the cap the longest-idle one is closed, and 503 when all are busy (default: 3/4 of RLIMIT_NOFILE, at most 16384)")
	fs.DurationVar(&o.headerTimeout, "header-timeout", 10*time.Second, "time a client has to send a request's headers")
	fs.DurationVar(&o.bodyTimeout, "body-timeout", 30*time.Second, "time a client has to send a request's body (408 after)")
	fs.DurationVar(&o.writeTimeout, "write-timeout", 60*time.Second, "time a client has to take a response, from its first byte (event streams: per write)")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 60*time.Second, "idle keep-alive connections are closed after this")
	fs.StringVar(&o.hosts, "allowed-hosts", env("TETHER_ALLOWED_HOSTS", ""), "comma-separated Host names served besides loopback names and IP literals; *.example.com allows subdomains [TETHER_ALLOWED_HOSTS]")
	fs.StringVar(&o.tlsCert, "tls-cert", env("TETHER_TLS_CERT", ""), "PEM certificate: serve HTTPS (with --tls-key) [TETHER_TLS_CERT]")
	fs.StringVar(&o.tlsKey, "tls-key", env("TETHER_TLS_KEY", ""), "PEM private key of --tls-cert [TETHER_TLS_KEY]")
	fs.BoolVar(&o.insecureHTTP, "insecure-http", false, "allow plain HTTP on an address other machines can reach (the token then crosses the network in clear)")
	fs.StringVar(&o.tokenFile, "token-file", env("TETHER_TOKEN_FILE", ""), "read the bearer token from this file (keep it mode 0600) [TETHER_TOKEN_FILE]")
}

func (o *edgeOptions) check() error {
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if o.maxConns <= 0 {
		return fmt.Errorf("--max-connections must be positive, got %d", o.maxConns)
	}
	for name, d := range map[string]time.Duration{"header-timeout": o.headerTimeout, "body-timeout": o.bodyTimeout,
		"write-timeout": o.writeTimeout, "idle-timeout": o.idleTimeout} {
		if d <= 0 {
			return fmt.Errorf("--%s must be positive, got %s", name, d)
		}
	}
	return nil
}

// allowedHosts are --allowed-hosts plus the host of the listen address
// when it is a name (wildcards and IP literals are served anyway).
func (o *edgeOptions) allowedHosts(addr string) []string {
	var out []string
	for _, h := range strings.Split(o.hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && net.ParseIP(host) == nil {
		out = append(out, host)
	}
	return out
}

// edgeListener is the daemon's listener: capped, TLS when configured.
type edgeListener struct {
	ln     net.Listener // what http.Server serves
	capped *connlimit.Listener
	opts   edgeOptions
	tls    bool
}

// listen opens addr. A plain-HTTP listener that other machines can reach
// is refused unless --insecure-http says so: the token would cross the
// network in clear.
func listen(addr string, o edgeOptions, logger *slog.Logger) (*edgeListener, error) {
	var tlsCfg *tls.Config
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		// HTTP/1.1 only: one request per connection at a time keeps the
		// connection cap's notion of busy and idle exact.
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	}
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if !isLoopback(raw.Addr()) {
		if tlsCfg == nil && !o.insecureHTTP {
			_ = raw.Close()
			return nil, fmt.Errorf("%s is reachable from other machines: serve HTTPS with --tls-cert/--tls-key, or pass --insecure-http to serve plain HTTP anyway", raw.Addr())
		}
		logger.Warn("listening on an address other machines can reach: anyone with the token controls the agents",
			"addr", raw.Addr().String(), "tls", tlsCfg != nil)
	}
	l := &edgeListener{opts: o, tls: tlsCfg != nil}
	cfg := connlimit.Config{Max: o.maxConns, BodyTimeout: o.bodyTimeout, WriteTimeout: o.writeTimeout, Logger: logger}
	if tlsCfg != nil {
		cfg.Refuse = connlimit.RefuseClose
	}
	l.capped = connlimit.New(raw, cfg)
	l.ln = l.capped
	if tlsCfg != nil {
		l.ln = tls.NewListener(l.capped, tlsCfg)
	}
	return l, nil
}

// server is the http.Server for h on this listener. http.Server's own
// ReadTimeout and WriteTimeout stay unset: connlimit's Handler sets
// per-request deadlines that do not cut slow handlers and event streams.
func (l *edgeListener) server(h http.Handler, base context.Context) *http.Server {
	srv := &http.Server{
		Handler:           l.capped.Handler(h),
		ReadHeaderTimeout: l.opts.headerTimeout,
		IdleTimeout:       l.opts.idleTimeout,
		ConnState:         l.capped.ConnState,
		ConnContext:       l.capped.ConnContext,
		BaseContext:       func(net.Listener) context.Context { return base },
		// Closing evicted or timed-out connections is routine, not news.
		ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelDebug),
	}
	return srv
}

// url is the listener's base URL as a client on this machine reaches it: a
// wildcard address (":7777", "0.0.0.0") becomes 127.0.0.1.
func (l *edgeListener) url() string {
	scheme := "http://"
	if l.tls {
		scheme = "https://"
	}
	a := l.capped.Addr()
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return scheme + a.String()
	}
	return scheme + net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
