package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/tasks"
	"github.com/tether/tether/internal/workspace"
	"github.com/tether/tether/server"
)

// token is the bearer token of the bench daemon.
const token = "bench-token"

// daemon is tetherd wired as cmd/tetherd/serve.go does (real store, hub,
// writer, session manager and server.New on a loopback listener), minus
// the demo agent and detected agents: nothing here ever starts a process.
// Events are driven straight through the Writer.
type daemon struct {
	URL      string
	st       *store.Store
	hub      *events.Hub
	w        *events.Writer
	mgr      *sessions.Manager
	srv      *http.Server
	taskID   string
	Sessions []string
}

// startDaemon opens a fresh database in dir and creates nSessions sessions
// inside one Writer op, as the session manager does.
func startDaemon(ctx context.Context, dir string, nSessions int, hubCfg events.HubConfig) (*daemon, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(ctx, filepath.Join(dir, "tether.db"))
	if err != nil {
		return nil, err
	}
	reg, err := agents.Load(ctx, agents.Config{DataDir: dir, Self: "/nonexistent/tetherd", Store: st, Logger: quiet,
		LookPath: func(string) (string, error) { return "", exec.ErrNotFound }})
	if err != nil {
		return nil, err
	}
	hub := events.NewHub(hubCfg)
	w, err := events.NewWriter(ctx, st, hub, events.WriterConfig{Logger: quiet})
	if err != nil {
		return nil, err
	}
	d := &daemon{st: st, hub: hub, w: w}
	d.mgr = sessions.New(st, w, reg, sessions.Config{Logger: quiet})
	_, err = w.Do(ctx, func(tx *store.Store, emit events.Emit) error {
		task, err := tx.CreateTask(ctx, session.Task{Title: "bench", Workspace: dir})
		if err != nil {
			return err
		}
		d.taskID = task.ID
		for range nSessions {
			s, err := tx.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "bench", Cwd: dir}, session.Executor{})
			if err != nil {
				return err
			}
			d.Sessions = append(d.Sessions, s.ID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	e, err := server.New(server.Config{Store: st, Sessions: d.mgr, Tasks: tasks.New(st, w, workspace.CwdPolicy{}), Agents: reg, Hub: hub, Token: token, Logger: quiet})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d.srv = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	d.URL = "http://" + ln.Addr().String()
	go func() { _ = d.srv.Serve(ln) }()
	return d, nil
}

// Close stops the server and the writer and closes the database.
func (d *daemon) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = d.srv.Close() // streams never end on their own; Shutdown would wait
	d.mgr.Shutdown(ctx)
	d.w.Close()
	_ = d.st.Close()
}

// streamURL is a session's SSE endpoint.
func (d *daemon) streamURL(sid string) string { return d.URL + "/session/" + sid + "/events" }

// chunkText makes a message.chunk payload of about 200 bytes with the
// ids the writer adds, like a streamed run of agent tokens.
var chunkText = strings.Repeat("streamed agent text ", 4)[:72]

// chunkOp is what an agent message chunk becomes, minus its transcript
// row: one message.chunk event. sentAt (unix ns) is stamped at submit
// time, so subscribers measure submit→receive latency.
func (d *daemon) chunkOp(sid, promptID string, sentAt int64) events.Apply {
	return func(tx *store.Store, emit events.Emit) error {
		p := map[string]any{"taskId": d.taskID, "messageId": 42, "role": "agent", "text": chunkText}
		if sentAt != 0 {
			p["sentAt"] = sentAt
		}
		emit(events.Draft{SessionID: sid, Type: events.MessageChunk, PromptID: promptID, Payload: p})
		return nil
	}
}

// promptID is a UUID-sized prompt id.
func promptID(i int) string { return "0b6d8e0c-1f8c-4bb0-9a57-" + strconv.FormatInt(1e11+int64(i), 10) }

// fill appends n chunk events to a session as fast as the writer takes them.
func (d *daemon) fill(ctx context.Context, sid string, n int) error {
	ring := make([]*events.Pending, 4096)
	for i := range n {
		if p := ring[i%len(ring)]; p != nil {
			if _, err := p.Wait(ctx); err != nil {
				return err
			}
		}
		ring[i%len(ring)] = d.w.Submit(d.chunkOp(sid, promptID(i/100), 0))
	}
	for _, p := range ring {
		if _, err := p.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}
