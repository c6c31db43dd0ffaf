package commands

import (
	"context"
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

// follow records c's output from c.OutputOffset on, and its end.
func (r *Runner) follow(c store.Command) {
	life := r.cfg.Life
	r.cfg.Spawn(func() {
		// pending is the start of a character the last read cut in two,
		// read after c.OutputOffset: it waits for its other bytes, so
		// that no text is mangled. next is where the next read starts.
		var pending []byte
		next := c.OutputOffset
		for life.Err() == nil {
			req := workspace.Request{Op: workspace.OpTerminalRead, Terminal: c.ID, Offset: next,
				Ack: c.OutputOffset, Discard: c.Truncated != "", WaitMS: int(readWait / time.Millisecond)}
			res, err := r.cfg.Sessions.Workspace(life, c.SessionID, req)
			switch {
			case errcode.Is(err, errcode.TerminalNotFound), errcode.Is(err, errcode.SessionNotFound):
				r.end(c, store.CommandLost, nil)
				return
			case err != nil:
				select { // the executor is away: ask again
				case <-life.Done():
					return
				case <-time.After(retry):
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
					rec, err := r.recordOutput(c, gap, start, buf[:cut])
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
				r.end(c, store.CommandExited, &commandEnd{exitCode: out.ExitCode, total: out.End})
				_, _ = r.cfg.Sessions.Workspace(life, c.SessionID, workspace.Request{Op: workspace.OpTerminalClose, Terminal: c.ID})
				return
			}
		}
	})
}

// recordOutput records data, the command's output from offset start (and
// before it the executor's gap, if any), as far as the limits allow, and
// returns the command as recorded (commandOutput).
func (r *Runner) recordOutput(c store.Command, gap *session.CommandTruncatedData, start int64, data []byte) (store.Command, error) {
	ch := &commandOutput{Session: c.SessionID, Command: c, Gap: gap, Start: start, Data: data,
		CommandLimit: r.cfg.OutputLimit, SessionLimit: r.cfg.SessionOutputLimit}
	err := r.cfg.Sessions.Record(r.cfg.Life, c.SessionID, func(taskID string) events.Change {
		ch.TaskID = taskID
		return ch
	})
	return ch.recorded, err
}

// commandOutput records a piece of a command's output (command.output),
// the executor's gap before it (command.truncated, overrun), and where a
// limit stops the record (command.truncated), with how much of the output
// the log holds (store.SetCommandOutput). It reads what the session's
// commands have recorded so far to apply the session's limit: a typed
// change that decides in the writer's transaction.
type commandOutput struct {
	Session, TaskID            string
	Command                    store.Command
	Gap                        *session.CommandTruncatedData
	Start                      int64
	Data                       []byte
	CommandLimit, SessionLimit int64
	// recorded is the command as recorded, set by Apply (the last run
	// of a redone batch); read once the change is durable.
	recorded store.Command
}

func (c *commandOutput) SessionID() string { return c.Session }

func (c *commandOutput) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	rec := c.Command
	draft := func(p session.EventPayload) events.Draft { return sessionEvent(c.Session, c.TaskID, p) }
	if c.Gap != nil {
		emit(draft(c.Gap))
		rec.DroppedBytes += c.Gap.Bytes
		rec.OutputOffset = c.Start
	}
	// The session's total counts this command's recorded bytes too.
	sessionBytes, err := tx.SessionCommandOutput(ctx, c.Session)
	if err != nil {
		return err
	}
	data := c.Data
	allow, reason, limit := int64(len(data)), "", int64(0)
	if room := c.CommandLimit - rec.OutputBytes; allow > room {
		allow, reason, limit = max(room, 0), session.TruncatedCommandLimit, c.CommandLimit
	}
	if room := c.SessionLimit - sessionBytes; allow > room {
		allow, reason, limit = max(room, 0), session.TruncatedSessionLimit, c.SessionLimit
	}
	n := int(allow)
	if reason != "" {
		n = completeUTF8(data[:n]) // the record stops between characters
	}
	if n > 0 {
		emit(draft(&session.CommandOutputData{CommandID: rec.ID, Offset: c.Start,
			Text: strings.ToValidUTF8(string(data[:n]), "\uFFFD")}))
		rec.OutputBytes += int64(n)
	}
	rec.OutputOffset = c.Start + int64(n)
	if reason != "" {
		rec.Truncated = reason
		emit(draft(&session.CommandTruncatedData{CommandID: rec.ID, Offset: rec.OutputOffset, Reason: reason, Limit: limit}))
	}
	if err := tx.SetCommandOutput(ctx, c.Session, rec.ID, rec.CommandOutput); err != nil {
		return err
	}
	c.recorded = rec
	return nil
}

// commandEnd is how an exited command ended: its exit code, and how many
// bytes of output it wrote in all.
type commandEnd struct {
	exitCode *int
	total    int64
}

// end records how command c ended (end is nil when it was lost):
// its state and exit code, and, for one that exited, how much of its
// output was left out in all (command.exited, whose projection ends the
// command's row).
func (r *Runner) end(c store.Command, state store.CommandState, end *commandEnd) {
	var exitCode *int
	if end != nil {
		exitCode = end.exitCode
		c.DroppedBytes = max(end.total-c.OutputBytes, c.DroppedBytes)
	}
	_ = r.record(r.cfg.Life, c.SessionID, &session.CommandExitedData{CommandID: c.ID, State: string(state), ExitCode: exitCode,
		OutputBytes: c.OutputBytes, DroppedBytes: c.DroppedBytes})
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
