package sessions

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/workspace"
)

// The follower of a command: it reads the command's output from its
// executor and records it, and how far, in the same transaction, so a
// restarted daemon follows on from exactly there. Each read acknowledges
// what is recorded, which is what a held command's executor may let go
// (terminal.Set.Follow); so the output is recorded whole, in order,
// however fast the command writes. What is recorded is bounded: once the
// command's own limit or its session's is reached, command.truncated says
// where the record stops and why, the follower has the executor drop the
// rest (the command runs on freely), and command.exited says how much
// was left out. An executor that predates held commands may still drop
// output the follower had not read yet: that is recorded as a
// command.truncated with reason overrun and the bytes lost, never as a
// silent jump in the offsets.

// followCommand records c's output from c.OutputOffset on, and its end.
func (m *Manager) followCommand(a *actor, c store.Command) {
	m.spawn(func() {
		// pending is the start of a character the last read cut in two,
		// read after c.OutputOffset: it waits for its other bytes, so
		// that no text is mangled. next is where the next read starts.
		var pending []byte
		next := c.OutputOffset
		for m.life.Err() == nil {
			req := workspace.Request{Op: workspace.OpTerminalRead, Terminal: c.ID, Offset: next,
				Ack: c.OutputOffset, Discard: c.Truncated != "", WaitMS: int(commandReadWait / time.Millisecond)}
			res, err := m.Workspace(m.life, c.SessionID, req)
			switch {
			case errcode.Is(err, errcode.TerminalNotFound), errcode.Is(err, errcode.SessionNotFound):
				m.endCommand(a, c, store.CommandLost, nil)
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
			if c.Truncated == "" {
				start := c.OutputOffset
				var gap *session.CommandTruncatedData
				if out.Offset > next {
					// Dropped by the executor before it was read: the
					// partial character before it is lost with it.
					gap = &session.CommandTruncatedData{CommandID: c.ID, Offset: start, Reason: session.TruncatedOverrun, Bytes: out.Offset - start}
					pending, start = nil, out.Offset
				}
				buf := append(pending, out.Data...)
				cut := len(buf)
				if !out.Exited {
					cut = completeUTF8(buf)
				}
				if gap != nil || cut > 0 {
					rec, err := m.recordOutput(a, c, gap, start, buf[:cut])
					if err != nil {
						return // shutting down: the next start follows from the offset recorded
					}
					c = rec
				}
				pending = append([]byte(nil), buf[cut:]...)
				if c.Truncated != "" {
					pending = nil
				}
			}
			// Recorded up to c.OutputOffset, the rest pending or, past a
			// limit, dropped: an executor that predates discarding sends
			// it anyway, and is asked on from where its output is now.
			next = out.End
			if out.Exited {
				m.endCommand(a, c, store.CommandExited, &commandEnd{exitCode: out.ExitCode, total: out.End})
				_, _ = m.Workspace(m.life, c.SessionID, workspace.Request{Op: workspace.OpTerminalClose, Terminal: c.ID})
				return
			}
		}
	})
}

// recordOutput records data, the command's output from offset start (and
// before it the executor's gap, if any), as far as the limits allow, and
// returns the command as recorded. Past a limit it records where and why
// the record stops.
func (m *Manager) recordOutput(a *actor, c store.Command, gap *session.CommandTruncatedData, start int64, data []byte) (store.Command, error) {
	var rec store.Command
	err := a.writeAndWait(m.life, func(tx *store.Store, emit events.Emit) error {
		rec = c
		if gap != nil {
			emit(a.draft("", gap))
			rec.DroppedBytes += gap.Bytes
			rec.OutputOffset = start
		}
		// The session's total counts this command's recorded bytes too.
		sessionBytes, err := tx.SessionCommandOutput(a.ctx(), c.SessionID)
		if err != nil {
			return err
		}
		allow, reason, limit := int64(len(data)), "", int64(0)
		if room := m.cfg.CommandOutputLimit - rec.OutputBytes; allow > room {
			allow, reason, limit = max(room, 0), session.TruncatedCommandLimit, m.cfg.CommandOutputLimit
		}
		if room := m.cfg.SessionCommandOutputLimit - sessionBytes; allow > room {
			allow, reason, limit = max(room, 0), session.TruncatedSessionLimit, m.cfg.SessionCommandOutputLimit
		}
		n := int(allow)
		if reason != "" {
			n = completeUTF8(data[:n]) // the record stops between characters
		}
		if n > 0 {
			emit(a.draft("", &session.CommandOutputData{CommandID: c.ID, Offset: start,
				Text: strings.ToValidUTF8(string(data[:n]), "\uFFFD")}))
			rec.OutputBytes += int64(n)
		}
		rec.OutputOffset = start + int64(n)
		if reason != "" {
			rec.Truncated = reason
			emit(a.draft("", &session.CommandTruncatedData{CommandID: c.ID, Offset: rec.OutputOffset,
				Reason: reason, Limit: limit}))
		}
		return tx.SetCommandOutput(a.ctx(), c.SessionID, c.ID, rec.CommandOutput)
	})
	return rec, err
}

// commandEnd is how an exited command ended: its exit code, and how many
// bytes of output it wrote in all.
type commandEnd struct {
	exitCode *int
	total    int64
}

// endCommand records how command c ended (end is nil when it was lost):
// its state and exit code, and, for one that exited, how much of its
// output was left out in all.
func (m *Manager) endCommand(a *actor, c store.Command, state store.CommandState, end *commandEnd) {
	var exitCode *int
	if end != nil {
		exitCode = end.exitCode
		c.DroppedBytes = max(end.total-c.OutputBytes, c.DroppedBytes)
	}
	_ = a.writeAndWait(m.life, func(tx *store.Store, emit events.Emit) error {
		if err := tx.SetCommandOutput(a.ctx(), c.SessionID, c.ID, c.CommandOutput); err != nil {
			return err
		}
		if _, err := tx.EndCommand(a.ctx(), a.id, c.ID, state, exitCode); err != nil {
			return err
		}
		emit(a.draft("", &session.CommandExitedData{CommandID: c.ID, State: string(state), ExitCode: exitCode,
			OutputBytes: c.OutputBytes, DroppedBytes: c.DroppedBytes}))
		return nil
	})
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
