package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"
)

// DefaultUpdateWindow is how many session/update notifications of one
// agent may be read but not yet processed (Handler.Update's done not yet
// called) before the daemon stops reading the agent's stdout.
const DefaultUpdateWindow = 256

// maxLineBytes is the longest line accepted from an agent, the SDK's own
// limit: a longer line ends the connection, as it would in the SDK.
const maxLineBytes = 10 << 20

// errLineTooLong ends a connection whose agent sent a line over maxLineBytes.
var errLineTooLong = fmt.Errorf("agent sent a line longer than %d bytes", maxLineBytes)

// errStopped ends the read loop of a connection that is being stopped.
var errStopped = errors.New("agent connection stopped")

// inbound sits between the agent's stdout and the SDK connection and turns
// a flood into back-pressure. The SDK reads every line in one goroutine and
// queues notifications, without blocking, for a second goroutine that
// decodes them; a full queue (1,024) closes the connection, so an agent
// that writes faster than the daemon decodes would kill its own turn, and
// an unbounded hand-off behind the queue would grow without limit instead.
//
// inbound reads one line at a time and routes it:
//   - session/update: decoded here and handed to the Handler in protocol
//     order, each holding one of window credits until the Handler calls its
//     done func. With every credit out, inbound stops reading: the pipe
//     fills and the agent's writes block, which slows it to the daemon's
//     pace. Nothing that frees a credit waits for the agent, so this cannot
//     deadlock (see Handler).
//   - other notifications (extensions such as "_auth/...", methods the
//     daemon does not implement): dropped. The SDK would ignore them too,
//     but only after queueing them, so a flood of them would overflow it.
//   - everything else (responses, requests, $/cancel_request, lines that are
//     not JSON-RPC): passed to the SDK unchanged. The SDK handles responses
//     and cancellations in its reader and runs each request in a goroutine
//     of its own, so none of them enters its queue.
//
// An update is handed over before any later line reaches the SDK, so the
// Handler sees every update an agent sent before, say, its prompt response.
type inbound struct {
	src     *bufio.Reader
	handler Handler
	// credits holds one token per update handed over and not yet done.
	credits chan struct{}
	// stop ends a read waiting for a credit (the connection is stopping).
	stop   <-chan struct{}
	logger *slog.Logger

	line    []byte // the line being assembled
	pending []byte // the part of a pass-through line Read has yet to return
	err     error  // the read error to return once pending is drained
	dropped int    // notifications dropped, for the first-drop log line
}

func newInbound(r io.Reader, h Handler, window int, stop <-chan struct{}, logger *slog.Logger) *inbound {
	if window <= 0 {
		window = DefaultUpdateWindow
	}
	return &inbound{src: bufio.NewReaderSize(r, 64<<10), handler: h, credits: make(chan struct{}, window),
		stop: stop, logger: logger}
}

// Read returns the lines meant for the SDK, consuming the others.
func (in *inbound) Read(p []byte) (int, error) {
	for len(in.pending) == 0 {
		if in.err != nil {
			return 0, in.err
		}
		line, err := in.readLine()
		in.err = err
		if len(line) > 0 {
			pass, rerr := in.route(line)
			if rerr != nil {
				in.err = rerr
				return 0, rerr
			}
			if pass {
				in.pending = line
			}
		}
	}
	n := copy(p, in.pending)
	in.pending = in.pending[n:]
	return n, nil
}

// readLine returns the next line with its '\n' (the last one may lack it),
// in a buffer reused by the next call.
func (in *inbound) readLine() ([]byte, error) {
	in.line = in.line[:0]
	for {
		chunk, err := in.src.ReadSlice('\n')
		if len(in.line)+len(chunk) > maxLineBytes {
			return nil, errLineTooLong
		}
		in.line = append(in.line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return in.line, err
		}
	}
}

// envelope is the part of a JSON-RPC message that decides its route; it
// decodes exactly as the SDK's own message type does.
type envelope struct {
	ID     *json.RawMessage `json:"id,omitempty"`
	Method string           `json:"method,omitempty"`
	Params json.RawMessage  `json:"params,omitempty"`
}

// route handles line and reports whether it goes on to the SDK.
func (in *inbound) route(line []byte) (pass bool, err error) {
	if u, ok := fastTextChunk(line); ok {
		return false, in.handOver(u)
	}
	var m envelope
	if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &m) != nil {
		return true, nil // the SDK skips (and logs) what is not JSON-RPC
	}
	if m.ID != nil || m.Method == "" || m.Method == "$/cancel_request" {
		return true, nil
	}
	if m.Method != sdk.ClientMethodSessionUpdate {
		in.drop("notification the daemon does not implement", "method", m.Method)
		return false, nil
	}
	var n sdk.SessionNotification
	if err := json.Unmarshal(m.Params, &n); err != nil {
		in.drop("session/update that does not decode", "err", err)
		return false, nil
	}
	if err := n.Validate(); err != nil {
		in.drop("invalid session/update", "err", err)
		return false, nil
	}
	u, ok := translate(n)
	if !ok {
		in.logger.Debug("ignoring unknown session/update kind", "session", n.SessionId)
		return false, nil
	}
	return false, in.handOver(u)
}

// handOver gives u to the Handler once a window credit is free.
func (in *inbound) handOver(u Update) error {
	select {
	case in.credits <- struct{}{}:
	case <-in.stop:
		return errStopped
	}
	in.handler.Update(u, in.releaser())
	return nil
}

// releaser returns the done func of one handed-over update: it gives the
// credit back the first time it is called and does nothing after that, so
// a careless second call can never free a credit another update holds.
func (in *inbound) releaser() func() {
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			<-in.credits
		}
	}
}

// drop logs a dropped notification: the first one at warn level, the rest
// at debug, so an agent cannot flood the daemon's log either.
func (in *inbound) drop(what string, args ...any) {
	in.dropped++
	level := slog.LevelDebug
	if in.dropped == 1 {
		level = slog.LevelWarn
		what += " (further drops are logged at debug level)"
	}
	in.logger.Log(context.Background(), level, "dropping agent "+what, args...)
}
