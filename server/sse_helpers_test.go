package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// streamTimeout bounds every test stream: a hang becomes a failure, not a
// stuck test run. It is a safety net, not a performance assertion.
const streamTimeout = 2 * time.Minute

// sseFrame is one parsed SSE block (fields up to a blank line).
type sseFrame struct {
	ID       string
	HasID    bool
	Event    string
	Data     string
	Retry    string
	Comments []string
}

// durable reports whether the frame is a log event (it carries an id).
func (f sseFrame) durable() bool { return f.HasID }

// seq is the number after the colon of the frame's id.
func (f sseFrame) seq(t *testing.T) int64 {
	t.Helper()
	c, err := events.ParseCursor(f.ID)
	if err != nil {
		t.Fatalf("frame id %q: %v", f.ID, err)
	}
	return c.N
}

// JSON decodes the frame's data.
func (f sseFrame) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(f.Data), &m); err != nil {
		t.Fatalf("frame %s data %q: %v", f.Event, f.Data, err)
	}
	return m
}

// sseConn is an open event stream read frame by frame.
type sseConn struct {
	t      *testing.T
	Resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
	// contract validates every frame read (nil: not checked).
	contract *eventContract
}

// stream opens path with the daemon's token and extra headers and returns
// the response whatever its status; the body is closed at cleanup.
func (d *daemon) stream(path string, headers map[string]string) *sseConn {
	d.t.Helper()
	return d.streamWith(d.client, path, headers)
}

func (d *daemon) streamWith(client *http.Client, path string, headers map[string]string) *sseConn {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	req, err := http.NewRequestWithContext(ctx, "GET", d.URL+path, nil)
	if err != nil {
		cancel()
		d.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		d.t.Fatalf("GET %s: %v", path, err)
	}
	c := &sseConn{t: d.t, Resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel, contract: loadEventContract(d.t)}
	// Registered after startDaemon's cleanup, so it runs first: the test
	// server's Close waits for open streams.
	d.t.Cleanup(c.Close)
	return c
}

// openStream is stream that insists on a 200 event stream.
func (d *daemon) openStream(path string, headers map[string]string) *sseConn {
	d.t.Helper()
	c := d.stream(path, headers)
	if c.Resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(c.Resp.Body)
		d.t.Fatalf("GET %s: got %d, want 200: %s", path, c.Resp.StatusCode, b)
	}
	if ct := c.Resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		d.t.Fatalf("GET %s: got content type %q, want text/event-stream", path, ct)
	}
	return c
}

// Close ends the stream from the client side.
func (c *sseConn) Close() {
	c.cancel()
	_ = c.Resp.Body.Close()
}

// Next reads one frame and checks it against the contract (a mismatch
// fails the test but the frame is still returned). Per the SSE spec a block
// that has only comments is a frame too here, so tests can see heartbeats.
func (c *sseConn) Next() (sseFrame, error) {
	f, err := c.next()
	if err == nil && c.contract != nil {
		if cerr := c.contract.check(f); cerr != nil {
			c.t.Errorf("SSE frame %s: %v\ndata: %s", f.ID, cerr, f.Data)
		}
	}
	return f, err
}

func (c *sseConn) next() (sseFrame, error) {
	var f sseFrame
	var data []string
	seen := false
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && seen {
				return f, io.ErrUnexpectedEOF
			}
			return f, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if !seen {
				continue
			}
			f.Data = strings.Join(data, "\n")
			return f, nil
		}
		seen = true
		if strings.HasPrefix(line, ":") {
			f.Comments = append(f.Comments, strings.TrimPrefix(strings.TrimPrefix(line, ":"), " "))
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "id":
			f.ID, f.HasID = value, true
		case "event":
			f.Event = value
		case "data":
			data = append(data, value)
		case "retry":
			f.Retry = value
		}
	}
}

// MustNext reads one frame or fails the test.
func (c *sseConn) MustNext() sseFrame {
	c.t.Helper()
	f, err := c.Next()
	if err != nil {
		c.t.Fatalf("read stream: %v", err)
	}
	return f
}

// Until reads frames up to and including the first one satisfying stop.
func (c *sseConn) Until(stop func(sseFrame) bool) []sseFrame {
	c.t.Helper()
	var out []sseFrame
	for {
		f := c.MustNext()
		out = append(out, f)
		if stop(f) {
			return out
		}
	}
}

// All reads frames until the server ends the stream cleanly.
func (c *sseConn) All() []sseFrame {
	c.t.Helper()
	var out []sseFrame
	for {
		f, err := c.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			c.t.Fatalf("read stream after %d frames: %v", len(out), err)
		}
		out = append(out, f)
	}
}

func isEvent(name string) func(sseFrame) bool {
	return func(f sseFrame) bool { return f.Event == name }
}

// durableFrames keeps the frames that carry an id.
func durableFrames(fs []sseFrame) []sseFrame {
	var out []sseFrame
	for _, f := range fs {
		if f.durable() {
			out = append(out, f)
		}
	}
	return out
}

// storeSession creates a task and a session straight in the store: no
// agent starts, so the test alone writes the session's log.
func (d *daemon) storeSession(state session.SessionState) session.Session {
	d.t.Helper()
	ctx := context.Background()
	task, err := d.Store.CreateTask(ctx, session.Task{Title: "stream test"})
	if err != nil {
		d.t.Fatal(err)
	}
	s, err := d.Store.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: d.Dir, State: state},
		session.Executor{})
	if err != nil {
		d.t.Fatal(err)
	}
	return s
}

// emit appends n events of type typ to a session's log through the
// daemon's writer and returns them as committed (and published). Each
// payload is samplePayload(typ, i) with payload(i)'s members over it, so
// the frames the streams carry satisfy the contract.
func (d *daemon) emit(sid, typ string, n int, payload func(i int) map[string]any) []store.Event {
	d.t.Helper()
	evs, err := d.Writer.Do(context.Background(), func(_ *store.Store, emit events.Emit) error {
		for i := range n {
			p := samplePayload(d.t, typ, i)
			if payload != nil {
				maps.Copy(p, payload(i))
			}
			emit(events.Draft{SessionID: sid, Type: typ, Payload: p})
		}
		return nil
	})
	if err != nil {
		d.t.Fatalf("emit %d %s: %v", n, typ, err)
	}
	return evs
}

// sessionLog is the session's whole log as the store holds it.
func (d *daemon) sessionLog(sid string) []store.Event {
	d.t.Helper()
	var out []store.Event
	for {
		after := int64(0)
		if len(out) > 0 {
			after = out[len(out)-1].Seq
		}
		page, err := d.Store.ListSessionEvents(context.Background(), sid, after, 1000)
		if err != nil {
			d.t.Fatal(err)
		}
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
	}
}

// checkConsecutive asserts frames are durable events epoch:from, from+1, ...
func checkConsecutive(t *testing.T, frames []sseFrame, epoch string, from int64) {
	t.Helper()
	for i, f := range frames {
		want := epoch + ":" + strconv.FormatInt(from+int64(i), 10)
		if f.ID != want {
			t.Fatalf("frame %d (%s): got id %q, want %q", i, f.Event, f.ID, want)
		}
	}
}

func cursorOf(epoch string, n int64) string { return fmt.Sprintf("%s:%d", epoch, n) }

// samplePayload is a payload of type typ with the members its *Data schema
// requires; i tells the events of one batch apart.
func samplePayload(t *testing.T, typ string, i int) map[string]any {
	t.Helper()
	n := strconv.Itoa(i)
	switch typ {
	case events.SessionCreated:
		return map[string]any{"agentProfileId": "demo", "cwd": "/tmp", "state": string(session.SessionCreated)}
	case events.SessionStateChanged, events.SessionClosed:
		return map[string]any{"state": string(session.SessionRunning)}
	case events.TurnStarted:
		return map[string]any{"promptId": "p" + n, "kind": "prompt"}
	case events.TurnCompleted:
		return map[string]any{"promptId": "p" + n, "state": string(session.TurnCompleted)}
	case events.MessageAdded, events.MessageChunk:
		return map[string]any{"messageId": i + 1, "role": "agent", "text": "text " + n}
	case events.ToolCallStarted:
		return map[string]any{"toolCallId": "call" + n, "title": "tool " + n, "status": "pending", "interrupted": false}
	}
	t.Fatalf("samplePayload: no sample for %s", typ)
	return nil
}
