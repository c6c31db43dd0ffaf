// Package commands runs a session's commands (POST /session/{id}/commands):
// `sh -c` in the session's directory on its executor, without a terminal.
// The executor keeps the output by offset (internal/terminal), held until
// the daemon has recorded it; a follower (follow.go) reads it, one
// long-poll read after another, and records it as durable command.output
// events, each with the command's offset in the same transaction, then
// command.exited with the exit code. After a daemon restart a hosted
// command is followed again from the offset recorded, so nothing is
// missed or repeated; a standalone one (a child of the dead daemon) ends
// lost. What is recorded is bounded, per command and per session
// (Config.OutputLimit, SessionOutputLimit): past a limit command.truncated
// says where the record stops, the rest of the output is dropped where it
// is produced, and the command runs on to its exit code.
//
// A command is no part of the session's aggregate: its events go into the
// session's log through the session's actor (Sessions.Record), in the
// session's order and under its lease, and nothing the session decides
// depends on them.
package commands

import (
	"context"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/workspace"
)

// Default output limits (Config).
const (
	DefaultOutputLimit        = 16 << 20
	DefaultSessionOutputLimit = 256 << 20
)

// readWait is how long each read of a command's output waits.
const readWait = 15 * time.Second

// retry is how long a follower waits after its executor could not be
// reached before it asks again.
const retry = time.Second

// Sessions is what commands need of the session core (sessions.Manager).
type Sessions interface {
	// Load brings the session to life on this node (its lease taken):
	// session_not_found for an unknown one, service_shutting_down once
	// the daemon stops.
	Load(ctx context.Context, sessionID string) error
	// Workspace performs a workspace operation on the session's executor.
	Workspace(ctx context.Context, sessionID string, req workspace.Request) (workspace.Result, error)
	// Record has the session's actor submit the change made (given the
	// session's task id), in the session's order and under its lease,
	// and waits until it is durable. An unknown session is
	// session_not_found.
	Record(ctx context.Context, sessionID string, made func(taskID string) events.Change) error
}

// Config is where commands run and what bounds them.
type Config struct {
	Store    *store.Store
	Sessions Sessions
	// OutputLimit bounds the output of one command recorded in the event
	// log, SessionOutputLimit that of all the session's commands together
	// (defaults DefaultOutputLimit, DefaultSessionOutputLimit).
	OutputLimit, SessionOutputLimit int64
	// Life ends the followers (the daemon stops); Spawn runs one in a
	// goroutine its owner waits for.
	Life  context.Context
	Spawn func(func())
}

// Runner starts and follows commands.
type Runner struct{ cfg Config }

// New returns a Runner.
func New(cfg Config) *Runner {
	if cfg.OutputLimit <= 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	if cfg.SessionOutputLimit <= 0 {
		cfg.SessionOutputLimit = DefaultSessionOutputLimit
	}
	return &Runner{cfg: cfg}
}

// Run starts command in the session's directory on its executor and
// follows it.
func (r *Runner) Run(ctx context.Context, sessionID, command string) (store.Command, error) {
	if err := r.cfg.Sessions.Load(ctx, sessionID); err != nil {
		return store.Command{}, err
	}
	if err := workspace.CheckCommand(command); err != nil {
		return store.Command{}, err
	}
	res, err := r.cfg.Sessions.Workspace(ctx, sessionID, workspace.Request{Op: workspace.OpCommandRun, Command: command, Held: true})
	if err != nil {
		return store.Command{}, err
	}
	c := store.Command{SessionID: sessionID, ID: res.Terminal.ID, Command: command}
	if err := r.record(ctx, sessionID, &session.CommandStartedData{CommandID: c.ID, Command: command}); err != nil {
		return store.Command{}, err
	}
	r.follow(c)
	return r.cfg.Store.GetCommand(ctx, sessionID, c.ID)
}

// List returns the session's commands.
func (r *Runner) List(ctx context.Context, sessionID string) ([]store.Command, error) {
	if _, err := r.cfg.Store.GetSession(ctx, sessionID); err != nil {
		return nil, err
	}
	return r.cfg.Store.ListCommands(ctx, sessionID)
}

// Resume follows again, after a restart, the commands still running of
// the sessions keep accepts (every one when keep is nil): a hosted one
// from the offset recorded; a standalone one died with the previous
// daemon and ends lost.
func (r *Runner) Resume(ctx context.Context, keep func(sessionID string) bool) error {
	running, err := r.cfg.Store.ListRunningCommands(ctx)
	if err != nil {
		return err
	}
	for _, c := range running {
		if keep != nil && !keep(c.SessionID) {
			continue
		}
		if err := r.cfg.Sessions.Load(ctx, c.SessionID); err != nil {
			return err
		}
		ex, err := r.cfg.Store.GetExecutor(ctx, c.SessionID)
		if err != nil {
			return err
		}
		if ex.Runtime == session.RuntimeStandalone || ex.Runtime == "" {
			r.end(c, store.CommandLost, nil)
			continue
		}
		r.follow(c)
	}
	return nil
}

// record records event p of the session, outside any turn.
func (r *Runner) record(ctx context.Context, sessionID string, p session.EventPayload) error {
	return r.cfg.Sessions.Record(ctx, sessionID, func(taskID string) events.Change {
		return events.Emitted(sessionID, sessionEvent(sessionID, taskID, p))
	})
}

// sessionEvent is event p of session sessionID of task taskID.
func sessionEvent(sessionID, taskID string, p session.EventPayload) events.Draft {
	return events.Draft{SessionID: sessionID, TaskID: taskID, Type: p.EventType(), Payload: p}
}
