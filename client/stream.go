package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Event is one frame of an event stream. A durable event carries its
// cursor in ID (<epoch>:<seq>) and its payload in Data (the contract's
// <Type>Data schema); control frames (replay_complete, resync_required,
// stream_lagged) carry no ID.
type Event struct {
	ID   string
	Type string
	Data json.RawMessage
}

// Control frame types (docs/events.md).
const (
	ReplayComplete = "replay_complete"
	ResyncRequired = "resync_required"
	StreamLagged   = "stream_lagged"
)

// Stream reads an event stream of the daemon and survives its restarts:
// each durable event moves Cursor, and a stream that breaks (the daemon
// restarts, the network drops, it answers 429 or 5xx) is opened again
// after Cursor, so nothing is lost or repeated. The zero Backoff and
// MaxBackoff are 200 ms and 5 s.
type Stream struct {
	// Addr and Token reach the daemon (see Dial); HTTP is the client
	// (nil: http.DefaultClient, which has no timeout).
	Addr, Token string
	HTTP        *http.Client
	// Path is the stream's path: /session/{id}/events or /events.
	Path string
	// Cursor is where the stream resumes: the last durable event read
	// ("": the start of the log).
	Cursor string
	// Types, when set, keeps only these event types (the daemon filters).
	Types []string
	// NoFollow ends the stream after the replay of what is stored.
	NoFollow bool
	// Backoff is the first wait before a reconnect, doubled after each
	// failed one up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// OnBreak, when set, hears of each break before the wait that follows
	// it (to show "reconnecting").
	OnBreak func(err error, wait time.Duration)

	// opened is set once the daemon has answered the stream's request.
	opened bool
}

// SessionStream is the stream of session id's events after cursor.
func SessionStream(addr, token, id, cursor string) *Stream {
	return &Stream{Addr: addr, Token: token, Path: "/session/" + url.PathEscape(id) + "/events", Cursor: cursor}
}

// errEnded is a stream the daemon ended cleanly.
var errEnded = errors.New("the daemon ended the stream")

// Run reads the stream until ctx ends, fn returns an error (returned), the
// daemon answers a problem no retry mends (a *Error: unknown session, bad
// token), or the stream is over: a closed session whose log is delivered
// (204), or with NoFollow the end of the replay. Those return nil. A
// daemon that cannot be reached at all before it ever answered is an
// error at once: retries are for a stream that broke, not for a wrong
// address.
func (s *Stream) Run(ctx context.Context, fn func(Event) error) error {
	wait := s.Backoff
	if wait <= 0 {
		wait = 200 * time.Millisecond
	}
	maxWait := s.MaxBackoff
	if maxWait <= 0 {
		maxWait = 5 * time.Second
	}
	for {
		got, retryAfter, err := s.once(ctx, fn)
		var pe *Error
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			return nil
		case errors.As(err, &pe) && pe.Status != http.StatusTooManyRequests && pe.Status < 500:
			return err
		case errors.Is(err, errFn):
			return errors.Unwrap(err)
		case !s.opened && pe == nil:
			return err
		}
		if got {
			wait = s.Backoff
			if wait <= 0 {
				wait = 200 * time.Millisecond
			}
		}
		d := max(wait, retryAfter)
		if s.OnBreak != nil {
			s.OnBreak(err, d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
		wait = min(wait*2, maxWait)
	}
}

// errFn wraps an error fn returned, which ends Run.
var errFn = errors.New("handler")

type fnError struct{ err error }

func (e fnError) Error() string   { return e.err.Error() }
func (e fnError) Unwrap() error   { return e.err }
func (e fnError) Is(t error) bool { return t == errFn }

// once opens the stream after s.Cursor and reads it until it ends. got
// says whether any frame came (the backoff starts again); retryAfter is
// the daemon's Retry-After.
func (s *Stream) once(ctx context.Context, fn func(Event) error) (got bool, retryAfter time.Duration, err error) {
	q := url.Values{}
	if s.Cursor != "" {
		q.Set("cursor", s.Cursor)
	}
	if len(s.Types) > 0 {
		q.Set("types", strings.Join(s.Types, ","))
	}
	if s.NoFollow {
		q.Set("follow", "false")
	}
	u := BaseURL(s.Addr) + s.Path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	_ = Bearer(s.Token)(ctx, req)
	hc := s.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, 0, err
	}
	defer resp.Body.Close()
	s.opened = true
	if resp.StatusCode == http.StatusNoContent {
		return false, 0, nil
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return false, time.Duration(secs) * time.Second, Check(statusOnly(resp.StatusCode), body, nil)
	}
	err = readFrames(resp.Body, func(e Event) error {
		got = true
		if err := fn(e); err != nil {
			return fnError{err}
		}
		if e.ID != "" {
			s.Cursor = e.ID
		}
		return nil
	})
	if err == nil {
		if s.NoFollow {
			return got, 0, nil
		}
		err = errEnded
	}
	return got, 0, err
}

type statusOnly int

func (s statusOnly) StatusCode() int { return int(s) }

// readFrames parses server-sent events from r (the WHATWG event-stream
// format: id, event and data fields, a blank line ending each frame,
// comments ignored) and hands each frame to fn. It returns nil at a clean
// end of r.
func readFrames(r io.Reader, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // a frame holds one event's payload
	var e Event
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if e.Type != "" || data != nil {
				if e.Type == "" {
					e.Type = "message"
				}
				e.Data = json.RawMessage(data)
				if err := fn(e); err != nil {
					return err
				}
			}
			e, data = Event{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			e.ID = value
		case "event":
			e.Type = value
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if e.Type != "" || data != nil {
		return io.ErrUnexpectedEOF // a frame cut off: the next stream resumes before it
	}
	return nil
}
