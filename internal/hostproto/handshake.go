package hostproto

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// The protocol versions this build speaks. A change a peer of the previous
// version cannot read raises MaxVersion; MinVersion rises only when support
// for old peers is dropped, one release after the change that made it
// possible (a newer daemon reconnects to hosts of the previous version).
//
// Version 2 adds RecordACPUpdate: a host forwards its agents'
// session/update lines as they are, and only the daemon decodes them.
// Version 3 adds CommandWorkspace: the session's files and git state,
// served by the host whether or not the agent runs. Version 4 adds
// Command.Generation and a host that serves several daemons at once,
// each session's records on the connection that last attached it.
const (
	MinVersion = 1
	MaxVersion = 4
	// FencingVersion introduced Command.Generation: a host of an older
	// version ignores it and serves one daemon at a time.
	FencingVersion = 4
)

// helloMaxFrame bounds the first frame the host reads, before it knows who
// is talking: a Hello is a few hundred bytes, and an unauthenticated peer
// must not make the host allocate DefaultMaxFrame.
const helloMaxFrame = 64 << 10

// Versions is an inclusive range of protocol versions.
type Versions struct {
	Min, Max int
}

// Supported is the range this build speaks.
func Supported() Versions { return Versions{Min: MinVersion, Max: MaxVersion} }

func (v Versions) valid() bool { return v.Min >= 1 && v.Min <= v.Max }

func (v Versions) String() string { return fmt.Sprintf("%d..%d", v.Min, v.Max) }

// orSupported lets a zero Versions mean this build's range; tests set
// another to play a peer of an older or newer build.
func (v Versions) orSupported() Versions {
	if v == (Versions{}) {
		return Supported()
	}
	return v
}

// Negotiate returns the highest version in both ranges, or false when they
// do not overlap (or either is not a range).
func Negotiate(a, b Versions) (int, bool) {
	if !a.valid() || !b.valid() {
		return 0, false
	}
	hi := min(a.Max, b.Max)
	if hi < max(a.Min, b.Min) {
		return 0, false
	}
	return hi, true
}

// ClientConfig is the daemon's side of a handshake.
type ClientConfig struct {
	// Token is the host's shared secret.
	Token         string
	DaemonID      string
	DaemonVersion string
	// Versions the daemon speaks; zero means Supported().
	Versions Versions
	Options
}

// Client runs the daemon's side of the handshake on nc: it sends a Hello
// and reads the host's answer. A Refused becomes an *errcode.Error with the
// host's code (errcode.HostUnauthorized, errcode.HostProtocolMismatch, ...).
// ctx bounds the handshake only. On error the caller closes nc.
func Client(ctx context.Context, nc net.Conn, cfg ClientConfig) (*Conn, Welcome, error) {
	vs := cfg.Versions.orSupported()
	if !vs.valid() {
		return nil, Welcome{}, fmt.Errorf("hostproto: client versions %s are not a range", vs)
	}
	c := newConn(nc, cfg.Options)
	var w Welcome
	err := withContext(ctx, nc, func() error {
		hello := &Hello{MinVersion: vs.Min, MaxVersion: vs.Max, Token: cfg.Token, DaemonID: cfg.DaemonID, DaemonVersion: cfg.DaemonVersion}
		if err := c.Send(hello); err != nil {
			return fmt.Errorf("hostproto: send hello: %w", err)
		}
		m, err := c.Recv()
		if errors.Is(err, io.EOF) {
			return errcode.Wrap(errcode.HostProtocolError, err, "host closed the connection without answering the hello")
		}
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *Welcome:
			if m.Version < vs.Min || m.Version > vs.Max {
				return errcode.New(errcode.HostProtocolMismatch, "host chose protocol version %d, outside the daemon's %s", m.Version, vs)
			}
			w = *m
			return nil
		case *Refused:
			code := m.Code
			if code == "" {
				code = errcode.HostProtocolError
			}
			return errcode.New(code, "host refused the connection: %s", m.Message)
		default:
			return errcode.New(errcode.HostProtocolError, "host answered the hello with a %s message", m.Type())
		}
	})
	if err != nil {
		return nil, Welcome{}, err
	}
	c.version = w.Version
	return c, w, nil
}

// ServerConfig is the host's side of a handshake.
type ServerConfig struct {
	// Token is the secret a daemon must present; it must not be empty.
	Token       string
	HostID      string
	HostVersion string
	// Versions the host speaks; zero means Supported().
	Versions Versions
	// Sessions reports the sessions the host holds when the Welcome is
	// sent; nil reports none.
	Sessions func() []string
	Options
}

// Server runs the host's side of the handshake on nc: it reads the
// daemon's Hello and answers Welcome, or Refused with a stable code and
// returns that refusal as an *errcode.Error: errcode.HostUnauthorized for
// a wrong token, errcode.HostProtocolMismatch when no version is common,
// errcode.HostFrameTooLarge or errcode.HostProtocolError when the first
// frame is not a Hello that fits. The token is checked before anything
// else is looked at, so a peer without it learns nothing but that.
// ctx bounds the handshake only; give it a deadline, or a peer that never
// sends its hello holds the handshake. On error the caller closes nc.
func Server(ctx context.Context, nc net.Conn, cfg ServerConfig) (*Conn, Hello, error) {
	vs := cfg.Versions.orSupported()
	if !vs.valid() {
		return nil, Hello{}, fmt.Errorf("hostproto: host versions %s are not a range", vs)
	}
	if cfg.Token == "" {
		return nil, Hello{}, errors.New("hostproto: the host has no token configured")
	}
	c := newConn(nc, cfg.Options)
	var hello Hello
	var version int
	err := withContext(ctx, nc, func() error {
		m, err := c.recvLimit(min(helloMaxFrame, c.opts.MaxFrame))
		switch {
		case errors.Is(err, io.EOF):
			return errcode.Wrap(errcode.HostProtocolError, err, "daemon closed the connection before its hello")
		case errcode.Is(err, errcode.HostFrameTooLarge), errcode.Is(err, errcode.HostProtocolError):
			return refuse(c, err)
		case err != nil:
			return err
		}
		h, ok := m.(*Hello)
		if !ok {
			return refuse(c, errcode.New(errcode.HostProtocolError, "the first frame must be a hello, got %s", m.Type()))
		}
		if !tokenMatches(h.Token, cfg.Token) {
			return refuse(c, errcode.New(errcode.HostUnauthorized, "wrong token"))
		}
		dv := Versions{Min: h.MinVersion, Max: h.MaxVersion}
		if !dv.valid() {
			return refuse(c, errcode.New(errcode.HostProtocolError, "hello's versions %s are not a range", dv))
		}
		v, ok := Negotiate(dv, vs)
		if !ok {
			return refuse(c, errcode.New(errcode.HostProtocolMismatch, "daemon speaks protocol versions %s, host %s", dv, vs))
		}
		w := &Welcome{Version: v, HostID: cfg.HostID, HostVersion: cfg.HostVersion}
		if cfg.Sessions != nil {
			w.Sessions = cfg.Sessions()
		}
		if err := c.Send(w); err != nil {
			return fmt.Errorf("hostproto: send welcome: %w", err)
		}
		hello, version = *h, v
		return nil
	})
	if err != nil {
		return nil, Hello{}, err
	}
	c.version = version
	return c, hello, nil
}

// refuse tells the daemon why, best effort (it may be gone, or still
// writing an oversized frame), and returns the reason.
func refuse(c *Conn, reason error) error {
	var e *errcode.Error
	if !errors.As(reason, &e) {
		e = errcode.Wrap(errcode.HostProtocolError, reason, "handshake failed")
	}
	_ = c.Send(&Refused{Code: e.Code, Message: e.Message})
	return reason
}

// tokenMatches compares in constant time; hashing first makes the time
// independent of the lengths too.
func tokenMatches(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// withContext runs fn with nc's deadline bound to ctx: ctx's deadline, and
// an immediate one when ctx is cancelled, so that a blocked read or write
// returns. The deadline is cleared afterwards; an error caused by ctx is
// reported as ctx's.
func withContext(ctx context.Context, nc net.Conn, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok {
		if err := nc.SetDeadline(d); err != nil {
			return err
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	err := fn()
	stopped := stop()
	if err != nil {
		if ctx.Err() != nil && isTimeout(err) {
			return fmt.Errorf("hostproto: handshake: %w", ctx.Err())
		}
		return err
	}
	if !stopped {
		// ctx ended as fn returned: its deadline may land at any moment,
		// so the connection cannot be handed on.
		return fmt.Errorf("hostproto: handshake: %w", ctx.Err())
	}
	return nc.SetDeadline(time.Time{})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
