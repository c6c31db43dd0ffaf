package sessions

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/workspace"
)

// Commands (POST /session/{id}/commands): `sh -c` in the session's
// directory on its executor, without a terminal. The executor keeps the
// output by offset (internal/terminal); the daemon follows it, one
// long-poll read after another, and records it as durable command.output
// events, each with the command's offset in the same transaction, then
// command.exited with the exit code. After a daemon restart a hosted
// command is followed again from the offset recorded, so nothing is
// missed or repeated; a standalone one (a child of the dead daemon) ends
// lost.

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
	res, err := m.Workspace(ctx, sessionID, workspace.Request{Op: workspace.OpCommandRun, Command: command})
	if err != nil {
		return store.Command{}, err
	}
	c := store.Command{SessionID: sessionID, ID: res.Terminal.ID, Command: command}
	if err := a.writeAndWait(ctx, func(tx *store.Store, emit events.Emit) error {
		if _, err := tx.CreateCommand(a.ctx(), c); err != nil {
			return err
		}
		emit(a.draft(events.CommandStarted, "", &events.CommandStartedData{CommandID: c.ID, Command: command}))
		return nil
	}); err != nil {
		return store.Command{}, err
	}
	m.followCommand(a, c)
	return m.store.GetCommand(ctx, sessionID, c.ID)
}

// writeAndWait has the actor submit apply and waits until it is durable:
// for the goroutines that are not the actor's.
func (a *actor) writeAndWait(ctx context.Context, apply events.Apply) error {
	_, err := callWrites(ctx, a, func() (struct{}, error) {
		a.write(apply)
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

// followCommand records c's output from c.OutputOffset on, and its end.
func (m *Manager) followCommand(a *actor, c store.Command) {
	m.spawn(func() {
		off := c.OutputOffset
		// pending is the start of a character the last read cut in two:
		// it waits for its other bytes, so that no text is mangled.
		var pending []byte
		for m.life.Err() == nil {
			res, err := m.Workspace(m.life, c.SessionID, workspace.Request{Op: workspace.OpTerminalRead, Terminal: c.ID, Offset: off,
				WaitMS: int(commandReadWait / time.Millisecond)})
			switch {
			case errcode.Is(err, errcode.TerminalNotFound), errcode.Is(err, errcode.SessionNotFound):
				m.endCommand(a, c.ID, store.CommandLost, nil)
				return
			case err != nil:
				select { // the executor is away: ask again
				case <-m.life.Done():
					return
				case <-time.After(commandRetry):
				}
				continue
			}
			out := res.Output
			if out.Offset != off {
				pending = nil // output was dropped from the executor's buffer meanwhile
			}
			buf := append(pending, out.Data...)
			start := out.Offset - int64(len(pending))
			cut := len(buf)
			if !out.Exited {
				cut = completeUTF8(buf)
			}
			pending = append([]byte(nil), buf[cut:]...)
			if cut > 0 {
				data := events.CommandOutputData{CommandID: c.ID, Offset: start, Text: strings.ToValidUTF8(string(buf[:cut]), "\uFFFD")}
				end := start + int64(cut)
				if err := a.writeAndWait(m.life, func(tx *store.Store, emit events.Emit) error {
					if err := tx.SetCommandOutput(a.ctx(), c.SessionID, c.ID, end); err != nil {
						return err
					}
					emit(a.draft(events.CommandOutput, "", &data))
					return nil
				}); err != nil {
					return // shutting down: the next start follows from the offset recorded
				}
			}
			off = out.End
			if out.Exited {
				m.endCommand(a, c.ID, store.CommandExited, out.ExitCode)
				_, _ = m.Workspace(m.life, c.SessionID, workspace.Request{Op: workspace.OpTerminalClose, Terminal: c.ID})
				return
			}
		}
	})
}

// endCommand records how command id ended.
func (m *Manager) endCommand(a *actor, id string, state store.CommandState, exitCode *int) {
	_ = a.writeAndWait(m.life, func(tx *store.Store, emit events.Emit) error {
		if _, err := tx.EndCommand(a.ctx(), a.id, id, state, exitCode); err != nil {
			return err
		}
		emit(a.draft(events.CommandExited, "", &events.CommandExitedData{CommandID: id, State: string(state), ExitCode: exitCode}))
		return nil
	})
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
		if ex.Runtime == store.RuntimeStandalone || ex.Runtime == "" {
			m.endCommand(a, c.ID, store.CommandLost, nil)
			continue
		}
		m.followCommand(a, c)
	}
	return nil
}

// completeUTF8 is the length of b without a character its end cuts short
// (at most 3 bytes of one).
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}
