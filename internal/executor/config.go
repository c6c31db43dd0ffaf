package executor

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/hostproto"
)

// Dialer opens a transport to an executor host: a unix socket (DialUnix,
// Detached.Dial) or TLS over TCP (DialTLS). The Host runs the protocol's
// handshake on what it returns.
type Dialer func(ctx context.Context) (net.Conn, error)

// HostConfig describes one executor host the daemon talks to.
type HostConfig struct {
	// Name is the host's name in the daemon's config ("local" for the
	// detached host); it appears in logs, errors and Info.
	Name string
	// Dial opens a transport to the host. Required.
	Dial Dialer
	// Token is the host's shared secret.
	Token         string
	DaemonID      string
	DaemonVersion string
	// Versions the daemon speaks; zero means hostproto.Supported().
	Versions hostproto.Versions
	// Local says the host runs on this machine, so that its agents' pids
	// mean something to the daemon (Agent.PID); a remote host's agents
	// report 0.
	Local bool
	// LostAfter is how long the host may stay unreachable before its agents
	// count as lost (default 60s).
	LostAfter time.Duration
	// BackoffMin and BackoffMax bound the delay between connection
	// attempts, doubling from min after each failure (defaults 200ms, 10s).
	BackoffMin, BackoffMax time.Duration
	// PingInterval is how often the daemon pings the host; a connection on
	// which nothing arrives for PingInterval+PingTimeout is taken for
	// broken (defaults 10s and 10s).
	PingInterval, PingTimeout time.Duration
	// ConnectTimeout bounds one dial plus handshake (default 10s).
	ConnectTimeout time.Duration
	// WriteTimeout bounds each frame written (default 10s): a cut network
	// link would otherwise keep a write blocked for minutes.
	WriteTimeout time.Duration
	// StopGrace is an attached agent's stop grace (a started one takes its
	// StartPayload.StopGraceMS): how long Agent.Stop waits for an
	// unreachable host before it gives up (default 3s).
	StopGrace time.Duration
	// UpdateWindow bounds the updates handed to a handler and not yet done
	// (default acp.DefaultUpdateWindow), as for a local agent.
	UpdateWindow int
	// AckEvery and AckDelay coalesce acknowledgements: a session's commits
	// are acknowledged once AckEvery records are committed and not yet
	// acknowledged, or AckDelay after the first such commit, whichever
	// comes first (defaults 256 and 100ms). An ack only lets the host drop
	// records and, for a stream that fills it, frees the host's send
	// window, which AckEvery does; every ack costs both sides a wake-up.
	AckEvery int
	AckDelay time.Duration
	// Durable, when set, holds each commit's acknowledgement until the
	// commit is on disk: it calls done once every commit made before the
	// call is (events.Writer.Durable). The host drops what is
	// acknowledged, so without it a power cut on the daemon's machine can
	// lose records that were acknowledged but not yet synced. It must not
	// block; done must be called exactly once.
	Durable func(done func())
	// Generation, when set, is the fencing token of the daemon's session
	// (the generation of this node's lease on it, when several nodes
	// share a database): every command for the session carries it
	// (protocol version 4), taken when the command is made (an attach's
	// when it is sent), and a host that accepted a newer one for the
	// session refuses it with errcode.HostSessionFenced: this node lost
	// the session. Nil means 0, unfenced, as a daemon of one node is. It
	// is called under the Host's lock: it must be quick and must not call
	// the Host.
	Generation func(sessionID string) uint64
	Logger     *slog.Logger
}

func (c HostConfig) withDefaults() HostConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.LostAfter, 60*time.Second)
	def(&c.BackoffMin, 200*time.Millisecond)
	def(&c.BackoffMax, 10*time.Second)
	c.BackoffMax = max(c.BackoffMax, c.BackoffMin)
	def(&c.PingInterval, 10*time.Second)
	def(&c.PingTimeout, 10*time.Second)
	def(&c.ConnectTimeout, 10*time.Second)
	def(&c.WriteTimeout, 10*time.Second)
	def(&c.StopGrace, 3*time.Second)
	def(&c.AckDelay, 100*time.Millisecond)
	if c.UpdateWindow <= 0 {
		c.UpdateWindow = acp.DefaultUpdateWindow
	}
	if c.AckEvery <= 0 {
		c.AckEvery = 256
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// LinkHandler is an optional interface of the acp.Handler given to Start
// or Attach: it learns when the session's link to its host goes down (the
// connection broke; the agent runs on, and the daemon reconnects) and up
// again (re-attached; missed records follow). It is called in order with
// the session's records, on the goroutine that delivers them, so it must
// not block.
type LinkHandler interface {
	LinkChanged(up bool)
}

// WaitHandler is an optional interface of the acp.Handler given to Start
// or Attach: while the daemon cannot reach the session's host (a start or
// attach not yet answered, a link that broke) it learns why, each time
// the reason changes: an unavailable error (errcode.ExecutorUnavailable)
// wrapping the last connection attempt's, so that the session can show
// "cannot connect: …" or "refused: wrong token" instead of a bare
// starting or reconnecting. It is called like LinkChanged, in order with
// the records, and must not block. When a link breaks, the reason comes
// first, then LinkChanged(false), so that the handler can tell the
// outage once, with its cause.
type WaitHandler interface {
	HostUnreachable(why error)
}

// RecordHandler is an optional interface of the acp.Handler given to
// Start or Attach: the records it is handed no update for (a permission
// request, which goes to RequestPermission; its withdrawal; an update
// that does not decode; a record of a kind this build does not know) are
// handed to Record, in order with the updates, so that it commits their
// offsets as it commits an update's, and calls done once that is durable.
// Only then is the record acknowledged and dropped by the host: a record
// acknowledged and not committed would put the host's stream ahead of
// the offset the next attach starts from (a gap, issue 28). Without it
// such a record counts as committed once handed over. done holds a
// credit of the update window, like an update's, and, like an update's,
// is never called for a record the handler did not take.
type RecordHandler interface {
	Record(offset uint64, done func())
}

// State is the daemon's link to a host.
type State string

// The link states.
const (
	// StateConnected: the handshake succeeded and the connection is live.
	StateConnected State = "connected"
	// StateReconnecting: no live connection (yet, or any more); the daemon
	// retries with backoff, and the host's agents are kept.
	StateReconnecting State = "reconnecting"
	// StateLost: unreachable for longer than LostAfter; the host's agents
	// ended as lost. The daemon still retries, to clean up on the host.
	StateLost State = "lost"
	// StateClosed: Host.Close was called.
	StateClosed State = "closed"
)

// HostInfo is what the daemon knows of a host without asking it.
type HostInfo struct {
	Name  string
	State State
	// Version is the protocol version negotiated on the last connection
	// (0 before the first one).
	Version     int
	HostID      string
	HostVersion string
	// LastContact is when the last message from the host arrived (zero if
	// none ever did).
	LastContact time.Time
	// LastError is why the last connection attempt failed or the last
	// connection broke (nil while connected): a refused handshake keeps
	// its hostproto code (errcode.HostUnauthorized,
	// errcode.HostProtocolMismatch).
	LastError error
	// HostSessions are the sessions the host listed in its last Welcome.
	HostSessions []string
	// Attached are the daemon sessions with a live Agent on this host.
	Attached []string
}
