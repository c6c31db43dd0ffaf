package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// The SSE server is hand-written rather than r3labs/sse's: that server keeps
// its replay log in memory, renumbers ids, and writes to every subscriber
// from one goroutine, so one blocked client blocks the stream for all. Here
// the durable log is the replay source, ids are the log's own cursors, and
// each client has its own goroutine fed by a bounded hub queue.
const (
	// defaultHeartbeat keeps proxies and idle-timeouts from closing quiet streams.
	defaultHeartbeat = 15 * time.Second
	// retryMillis is the reconnect delay EventSource clients are told once.
	retryMillis = 2000
	// replayPage and replayBytes bound one read of the log during
	// catch-up: it stops at whichever comes first, then the frames read
	// are written (flushBytes at a time) with no read open.
	replayPage  = 4000
	replayBytes = 1 << 20
	// flushBytes is how much is buffered before a write: frames are
	// batched so a burst costs one syscall, not one per event.
	flushBytes = 64 << 10
	// idleBufferBytes is the most frame buffer an idle stream keeps.
	idleBufferBytes = 4 << 10
	// writeTimeout bounds one write+flush. A client that cannot take
	// flushBytes in this long is stalled; its connection is dropped.
	writeTimeout = 15 * time.Second
	// lagGrace is how long a subscriber cut off by the hub gets to take the
	// rest of its queue and the stream_lagged frame.
	lagGrace = 2 * time.Second
	// maxResubscribes bounds how often a replay that outran the hub queue
	// starts over from the log before the client is told to reconnect.
	maxResubscribes = 3
)

// StreamSessionEvents serves GET /session/{id}/events.
func (h *handlers) StreamSessionEvents(ctx context.Context, req StreamSessionEventsRequestObject) (StreamSessionEventsResponseObject, error) {
	p := req.Params
	s, err := h.openStream(ctx, &sessionSource{st: h.cfg.Store, hub: h.cfg.Hub, id: req.Id}, p.Cursor, p.LastEventID, p.Types, p.Follow)
	if err != nil {
		return nil, err
	}
	// A closed session whose log the client already has: 204 tells
	// EventSource to stop reconnecting.
	if s.pos.terminal && s.at.Epoch == s.pos.epoch && s.at.N == s.pos.head {
		s.sub.Close()
		return StreamSessionEvents204Response{}, nil
	}
	return s, nil
}

// StreamGlobalEvents serves GET /events.
func (h *handlers) StreamGlobalEvents(ctx context.Context, req StreamGlobalEventsRequestObject) (StreamGlobalEventsResponseObject, error) {
	p := req.Params
	src := &globalSource{st: h.cfg.Store, hub: h.cfg.Hub, horizon: h.cfg.EventHorizon}
	if p.TaskId != nil && *p.TaskId != "" {
		src.taskID = *p.TaskId
	}
	s, err := h.openStream(ctx, src, p.Cursor, p.LastEventID, p.Types, p.Follow)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openStream does everything that may still fail with a problem response:
// it parses the cursor, checks the stream exists, subscribes to the hub
// and only then reads the log's position, so that every event committed
// after that read is already queued for the subscriber (no gap).
func (h *handlers) openStream(ctx context.Context, src source, cursor, lastEventID, types *string, follow *bool) (*sseStream, error) {
	if h.cfg.Hub == nil {
		return nil, errcode.New(errcode.Internal, "event streaming is not configured")
	}
	s := &sseStream{ctx: ctx, src: src, follow: follow == nil || *follow, logger: h.cfg.Logger, heartbeat: h.cfg.HeartbeatInterval}
	s.req, _ = ctx.Value(httpRequestKey{}).(*http.Request)
	s.parkedCount = &h.parked
	if s.heartbeat <= 0 {
		s.heartbeat = defaultHeartbeat
	}
	// ?cursor= wins: a client that names a cursor means it, whatever its
	// EventSource remembers.
	raw := ""
	switch {
	case cursor != nil && *cursor != "":
		raw = *cursor
	case lastEventID != nil && *lastEventID != "":
		raw = *lastEventID
	}
	if raw != "" {
		c, err := events.ParseCursor(raw)
		if err != nil {
			return nil, err
		}
		s.at, s.hasCursor = c, true
	}
	if types != nil {
		for _, t := range strings.Split(*types, ",") {
			if t = strings.TrimSpace(t); t != "" {
				if s.types == nil {
					s.types = map[string]bool{}
				}
				s.types[t] = true
			}
		}
	}
	if err := src.check(ctx); err != nil {
		return nil, err
	}
	sub, err := src.subscribe()
	if err != nil {
		return nil, err
	}
	s.sub = sub
	if s.pos, err = src.position(ctx); err != nil {
		sub.Close()
		return nil, err
	}
	if !s.hasCursor {
		// No cursor: the beginning of what the log holds, in the current epoch.
		s.at = events.Cursor{Epoch: s.pos.epoch}
	}
	return s, nil
}

// position is where a stream's log stands when it is read.
type position struct {
	epoch string
	// first is the lowest retained number (0: nothing retained); head the
	// highest ever written, which retention never lowers.
	first, head int64
	// terminal: the session is closed, so nothing follows head.
	terminal bool
}

// source is what differs between the session and the global stream.
type source interface {
	// check fails with a domain error if the stream does not exist.
	check(ctx context.Context) error
	subscribe() (*events.Subscription, error)
	position(ctx context.Context) (position, error)
	list(ctx context.Context, after int64, limit int) ([]store.Event, error)
	// page is list for the replay: the events may carry only what a frame
	// needs (number, type, payload).
	page(ctx context.Context, after int64, limit int) ([]store.Event, error)
	// num is an event's number in this stream (seq or global id).
	num(e store.Event) int64
	// dense reports whether numbers have no holes, so a jump is a gap.
	dense() bool
	// keep filters events out of the stream; their numbers still count
	// as delivered.
	keep(e store.Event) bool
	// last reports whether e is the final event of the stream.
	last(e store.Event) bool
}

// sessionSource is one session's log, numbered by seq.
type sessionSource struct {
	st  *store.Store
	hub *events.Hub
	id  string
}

func (s *sessionSource) check(ctx context.Context) error {
	_, err := s.st.GetSession(ctx, s.id)
	return err
}

func (s *sessionSource) subscribe() (*events.Subscription, error) { return s.hub.Subscribe(s.id) }

// position reads the session and its log bounds in one snapshot, so a
// terminal state is never seen without the events that led to it.
func (s *sessionSource) position(ctx context.Context) (position, error) {
	var p position
	err := s.st.Snapshot(ctx, func(r *store.Store) error {
		sess, err := r.GetSession(ctx, s.id)
		if err != nil {
			return err
		}
		b, err := r.SessionEventBounds(ctx, s.id)
		if err != nil {
			return err
		}
		p = position{epoch: sess.EventEpoch, first: b.First, head: b.Head, terminal: sess.State.Terminal()}
		return nil
	})
	return p, err
}

func (s *sessionSource) list(ctx context.Context, after int64, limit int) ([]store.Event, error) {
	return s.st.ListSessionEvents(ctx, s.id, after, limit)
}

func (s *sessionSource) page(ctx context.Context, after int64, limit int) ([]store.Event, error) {
	return s.st.ReplaySessionEvents(ctx, s.id, after, limit)
}

func (s *sessionSource) num(e store.Event) int64 { return e.Seq }
func (s *sessionSource) dense() bool             { return true }
func (s *sessionSource) keep(store.Event) bool   { return true }
func (s *sessionSource) last(e store.Event) bool { return e.Type == events.SessionClosed }

// globalSource is the daemon-wide stream of global events, numbered by
// global id (sparse: session-only events take ids too).
type globalSource struct {
	st  *store.Store
	hub *events.Hub
	// horizon, in a cluster, is where the log is settled: the head, so
	// that the replay never sends an id a lower one commits after.
	horizon func(ctx context.Context) (int64, error)
	taskID  string
}

func (g *globalSource) check(context.Context) error { return nil }

func (g *globalSource) subscribe() (*events.Subscription, error) { return g.hub.Subscribe("") }

func (g *globalSource) position(ctx context.Context) (position, error) {
	// GlobalEpoch may create the epoch (a write), so it runs outside the
	// read-only snapshot.
	epoch, err := g.st.GlobalEpoch(ctx)
	if err != nil {
		return position{}, err
	}
	p := position{epoch: epoch}
	err = g.st.Snapshot(ctx, func(r *store.Store) error {
		b, err := globalBounds(ctx, r)
		p.first, p.head = b.First, b.Head
		return err
	})
	if err == nil && g.horizon != nil {
		p.head, err = g.horizon(ctx)
	}
	return p, err
}

func (g *globalSource) list(ctx context.Context, after int64, limit int) ([]store.Event, error) {
	return g.st.ListGlobalEvents(ctx, after, limit)
}

func (g *globalSource) page(ctx context.Context, after int64, limit int) ([]store.Event, error) {
	return g.list(ctx, after, limit)
}

func (g *globalSource) num(e store.Event) int64 { return e.ID }
func (g *globalSource) dense() bool             { return false }
func (g *globalSource) last(store.Event) bool   { return false }

func (g *globalSource) keep(e store.Event) bool {
	if g.taskID == "" {
		return true
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	return json.Unmarshal(e.Payload, &p) == nil && p.TaskID == g.taskID
}
