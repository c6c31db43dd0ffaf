package sessions

import (
	"context"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/workspace"
)

// Commands (POST /session/{id}/commands): `sh -c` in the session's
// directory on its executor, without a terminal. The executor keeps the
// output by offset (internal/terminal), held until the daemon has
// recorded it; the daemon follows it, one long-poll read after another
// (commandfollow.go), and records it as durable command.output events,
// each with the command's offset in the same transaction, then
// command.exited with the exit code. After a daemon restart a hosted
// command is followed again from the offset recorded, so nothing is
// missed or repeated; a standalone one (a child of the dead daemon) ends
// lost. What is recorded is bounded, per command and per session
// (Config.CommandOutputLimit, SessionCommandOutputLimit): past a limit
// command.truncated says where the record stops, the rest of the output
// is dropped where it is produced, and the command runs on to its exit
// code.

// Default output limits of commands (Config).
const (
	DefaultCommandOutputLimit        = 16 << 20
	DefaultSessionCommandOutputLimit = 256 << 20
)

// commandReadWait is how long each read of a command's output waits.
const commandReadWait = 15 * time.Second

// commandRetry is how long a follower waits after its executor could not
// be reached before it asks again.
const commandRetry = time.Second

// RunCommand starts command in the session's directory on its executor and
// follows it.
func (m *Manager) RunCommand(ctx context.Context, sessionID, command string) (store.Command, error) {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return store.Command{}, err
	}
	if err := workspace.CheckCommand(command); err != nil {
		return store.Command{}, err
	}
	res, err := m.Workspace(ctx, sessionID, workspace.Request{Op: workspace.OpCommandRun, Command: command, Held: true})
	if err != nil {
		return store.Command{}, err
	}
	c := store.Command{SessionID: sessionID, ID: res.Terminal.ID, Command: command}
	if err := a.changeAndWait(ctx, func() events.Change {
		return events.Emitted(a.id, a.draft("", &session.CommandStartedData{CommandID: c.ID, Command: command}))
	}); err != nil {
		return store.Command{}, err
	}
	m.followCommand(a, c)
	return m.store.GetCommand(ctx, sessionID, c.ID)
}

// changeAndWait has the actor submit the change made (on the actor) and
// waits until it is durable: for the goroutines that are not the actor's.
func (a *actor) changeAndWait(ctx context.Context, made func() events.Change) error {
	_, err := callWrites(ctx, a, func() (struct{}, error) {
		a.change(made())
		return struct{}{}, nil
	})
	return err
}

// ListCommands returns the session's commands.
func (m *Manager) ListCommands(ctx context.Context, sessionID string) ([]store.Command, error) {
	if _, err := m.store.GetSession(ctx, sessionID); err != nil {
		return nil, err
	}
	return m.store.ListCommands(ctx, sessionID)
}

// resumeCommands follows again, after a restart, the commands still
// running: a hosted one from the offset recorded; a standalone one died
// with the previous daemon and ends lost.
func (m *Manager) resumeCommands(ctx context.Context, keep func(sessionID string) bool) error {
	running, err := m.store.ListRunningCommands(ctx)
	if err != nil {
		return err
	}
	for _, c := range running {
		if keep != nil && !keep(c.SessionID) {
			continue
		}
		a, err := m.actor(ctx, c.SessionID)
		if err != nil {
			return err
		}
		ex, err := m.store.GetExecutor(ctx, c.SessionID)
		if err != nil {
			return err
		}
		if ex.Runtime == session.RuntimeStandalone || ex.Runtime == "" {
			m.endCommand(a, c, store.CommandLost, nil)
			continue
		}
		m.followCommand(a, c)
	}
	return nil
}
