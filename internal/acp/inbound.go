package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tether/tether/internal/rawio"
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
//     order, each holding one of window credits until the Handler calls
//     its done func. With every credit out, inbound stops reading: the
//     pipe fills and the agent's writes block, which slows it to the
//     daemon's pace. Nothing that frees a credit waits for the agent, so
//     this cannot deadlock (see Handler). A LineHandler gets the agent's
//     bytes instead, without credits, and flushes them at least once a
//     window: its Flush, on this goroutine, is the back-pressure.
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
	// gate, until closed, holds the first Read back (see Start).
	gate    <-chan struct{}
	src     *bufio.Reader
	handler Handler
	// credits holds one token per update handed over and not yet done.
	credits chan struct{}
	// stop ends a read waiting for a credit (the connection is stopping).
	stop <-chan struct{}
	// lines is handler as a LineHandler, if it is one; held counts the
	// lines handed to it since its last Flush.
	lines LineHandler
	held  int
	dec   UpdateDecoder
	// prompts names the session of each session/prompt in flight, whose
	// answer's usage is handed on as an update (promptusage.go).
	prompts *prompts

	line    []byte // the line being assembled
	pending []byte // the part of a pass-through line Read has yet to return
	err     error  // the read error to return once pending is drained
}

func newInbound(r io.Reader, h Handler, window int, stop <-chan struct{}, logger *slog.Logger) *inbound {
	if window <= 0 {
		window = DefaultUpdateWindow
	}
	in := &inbound{src: bufio.NewReaderSize(rawio.NewReader(r), 64<<10), handler: h, credits: make(chan struct{}, window),
		stop: stop, dec: UpdateDecoder{Logger: logger}}
	in.lines, _ = h.(LineHandler)
	return in
}

// Read returns the lines meant for the SDK, consuming the others.
func (in *inbound) Read(p []byte) (int, error) {
	if in.gate != nil {
		<-in.gate
		in.gate = nil
	}
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
// in a buffer reused by the next call (or the reader's own, which the next
// call reads into).
func (in *inbound) readLine() ([]byte, error) {
	in.line = in.line[:0]
	if in.lines != nil {
		// A line buffered whole is taken where it lies, with one scan; if
		// there is none the next read waits for the agent, so what the
		// LineHandler holds is dealt with first.
		b, _ := in.src.Peek(in.src.Buffered())
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			_, _ = in.src.Discard(i + 1)
			return b[:i+1], nil
		}
		in.flushLines()
	}
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
	Result json.RawMessage  `json:"result,omitempty"`
}

// route handles line and reports whether it goes on to the SDK.
func (in *inbound) route(line []byte) (pass bool, err error) {
	if in.lines != nil && IsUpdateNotification(line) {
		return false, in.handOverLine(line)
	}
	if u, ok := fastTextChunk(line); ok {
		return false, in.handOver(u)
	}
	var m envelope
	if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &m) != nil {
		return true, nil // the SDK skips (and logs) what is not JSON-RPC
	}
	if m.ID != nil && m.Method == "" && in.prompts != nil {
		// An answer: to a session/prompt with the turn's usage, that
		// usage goes on first, as an update.
		if sid := in.prompts.answered(*m.ID); sid != "" {
			if u := usageLine(sid, m.Result); u != nil {
				if err := in.handOverSynth(u); err != nil {
					return false, err
				}
			}
		}
	}
	if m.ID != nil || m.Method == "" || m.Method == "$/cancel_request" {
		return true, nil
	}
	if m.Method != sdk.ClientMethodSessionUpdate {
		in.dec.drop("notification the daemon does not implement", "method", m.Method)
		return false, nil
	}
	u, ok := in.dec.params(m.Params)
	if !ok {
		return false, nil
	}
	return false, in.handOver(u)
}

// UpdateDecoder decodes session/update notifications as the daemon reads
// them from its own agents, for lines an executor host forwarded
// undecoded (LineHandler). What it cannot use it drops, logging the first
// drop at warn level and the rest at debug, so an agent cannot flood the
// log either. One decoder serves one agent, from one goroutine.
type UpdateDecoder struct {
	Logger  *slog.Logger
	dropped int
}

// Decode returns the Update of a session/update line; ok=false when the
// line is not one the daemon records (dropped, as the daemon's route
// would drop it).
func (d *UpdateDecoder) Decode(line []byte) (Update, bool) {
	if u, ok := fastTextChunk(line); ok {
		return u, true
	}
	var m envelope
	if err := json.Unmarshal(line, &m); err != nil {
		d.drop("session/update line that is not JSON", "err", err)
		return Update{}, false
	}
	if m.ID != nil || m.Method != sdk.ClientMethodSessionUpdate {
		d.drop("line forwarded as a session/update that is not one", "method", m.Method)
		return Update{}, false
	}
	return d.params(m.Params)
}

// params decodes a session/update's params into an Update.
func (d *UpdateDecoder) params(raw json.RawMessage) (Update, bool) {
	var n sdk.SessionNotification
	if err := json.Unmarshal(raw, &n); err != nil {
		d.drop("session/update that does not decode", "err", err)
		return Update{}, false
	}
	if err := n.Validate(); err != nil {
		d.drop("invalid session/update", "err", err)
		return Update{}, false
	}
	u, ok := translate(n)
	if !ok {
		d.logger().Debug("ignoring unknown session/update kind", "session", n.SessionId)
		return Update{}, false
	}
	return u, true
}

func (d *UpdateDecoder) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.Default()
	}
	return d.Logger
}

// drop logs a dropped notification: the first one at warn level, the rest
// at debug.
func (d *UpdateDecoder) drop(what string, args ...any) {
	d.dropped++
	level := slog.LevelDebug
	if d.dropped == 1 {
		level = slog.LevelWarn
		what += " (further drops are logged at debug level)"
	}
	d.logger().Log(context.Background(), level, "dropping agent "+what, args...)
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

// handOverSynth hands over a session/update line the daemon made, as
// route hands over an agent's.
func (in *inbound) handOverSynth(line []byte) error {
	if in.lines != nil {
		return in.handOverLine(line)
	}
	u, ok := in.dec.params(paramsOf(line))
	if !ok {
		return nil
	}
	return in.handOver(u)
}

// paramsOf is a JSON-RPC line's params.
func paramsOf(line []byte) json.RawMessage {
	var m envelope
	_ = json.Unmarshal(line, &m)
	return m.Params
}

// handOverLine gives line, without its line end, to the LineHandler, and
// has it flush once it holds a window of lines. Lines take no credit: the
// LineHandler deals with them in Flush, on this goroutine, so a Flush
// that blocks holds the agent back as a full window would.
func (in *inbound) handOverLine(line []byte) error {
	in.lines.UpdateLine(bytes.TrimRight(line, "\r\n"))
	if in.held++; in.held >= cap(in.credits) {
		in.flushLines()
	}
	select {
	case <-in.stop:
		return errStopped
	default:
		return nil
	}
}

// flushLines has the LineHandler deal with the lines it holds.
func (in *inbound) flushLines() {
	in.held = 0
	in.lines.Flush()
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
