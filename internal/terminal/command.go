package terminal

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/errcode"
)

// Commands: `sh -c` without a PTY or input, its output read like a
// terminal's. A terminal keeps only its newest output (Scrollback), which
// suits a screen; a command's output is a record, which the daemon
// follows into its event log. So a command run held keeps every byte its
// follower has not acknowledged (Follow's ack: "recorded up to here"),
// and while its buffer is full of such output the command waits on its
// pipe, as a command does whose reader is slow, instead of having output
// dropped unseen. Once the follower records no more (its limits are
// reached), a read with discard lets the command run freely: its output
// is then only counted, so the offsets still say how much it wrote.

// RunCommand runs `sh -c command` for session in cwd (dir is where it
// starts: cwd, or a name of that very directory the caller holds open):
// no input, its stdout and stderr together as its output, read like a
// terminal's; its exit code recorded. held keeps its output for a
// follower (Follow) instead of dropping the oldest.
func (s *Set) RunCommand(session, cwd, dir, command string, held bool) (Info, error) {
	if n := s.count(session); n >= s.max {
		return Info{}, errcode.New(errcode.TerminalLimitReached, "this session has %d terminals and commands, the most it may have; close one", n)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return Info{}, errcode.Wrap(errcode.Internal, err, "a pipe for the command: %v", err)
	}
	cmd, launch, err := s.command(dir, "/bin/sh", "-c", command)
	if err != nil {
		r.Close()
		w.Close()
		return Info{}, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	launch.Started()
	if err != nil {
		launch.Close()
		r.Close()
		w.Close()
		if errors.Is(err, os.ErrNotExist) {
			return Info{}, errcode.Wrap(errcode.WorkingDirMissing, err, "cannot run a command in %s: %v", cwd, err)
		}
		return Info{}, errcode.Wrap(errcode.Internal, err, "starting the command: %v", err)
	}
	w.Close() // the command holds its own copy
	t := &term{info: Info{ID: uuid.NewString(), Session: session, Cwd: cwd, StartedAt: time.Now().UTC(), Command: command},
		cmd: cmd, launch: launch, out: r, changed: make(chan struct{}), done: make(chan struct{}), held: held, room: make(chan struct{})}
	s.add(t)
	return t.snapshot(), nil
}

// Follow is the follower's read of a held command: like Read from
// offset, after taking note that everything before ack is recorded (the
// executor may let it go). With discard the follower records no more:
// the command's output is dropped from now on, and the read returns no
// data, only how far the output has come (End) once the command has
// exited or wait has passed.
func (s *Set) Follow(ctx context.Context, session, id string, offset, ack int64, wait time.Duration, discard bool) (Chunk, error) {
	t, err := s.get(session, id)
	if err != nil {
		return Chunk{}, err
	}
	t.mu.Lock()
	end := t.start + int64(len(t.buf))
	if ack > t.acked {
		t.acked = min(ack, end)
		t.roomLocked()
	}
	if discard && !t.discard {
		t.discard = true
		t.start, t.buf = end, nil
		t.roomLocked()
	}
	t.mu.Unlock()
	if !discard {
		return s.Read(ctx, session, id, offset, wait)
	}
	if err := t.awaitLocked(ctx, wait, func() bool { return t.info.Exited }); err != nil {
		return Chunk{}, err
	}
	defer t.mu.Unlock()
	end = t.start + int64(len(t.buf))
	return Chunk{Offset: end, End: end, Exited: t.info.Exited, ExitCode: t.info.ExitCode}, nil
}

// waitRoomLocked waits, for a held command, while its buffer holds
// scrollback bytes or more that its follower has not acknowledged.
func (t *term) waitRoomLocked(scrollback int) {
	for t.held && !t.discard && t.start+int64(len(t.buf))-t.acked >= int64(scrollback) {
		room := t.room
		t.mu.Unlock()
		<-room
		t.mu.Lock()
	}
}

// dropLocked is how many of over bytes, the oldest past the buffer's
// size, may go: all of them for a terminal, only those acknowledged for
// a held command.
func (t *term) dropLocked(over int) int {
	if over <= 0 {
		return 0
	}
	if t.held && !t.discard {
		return int(max(0, min(int64(over), t.acked-t.start)))
	}
	return over
}

func (t *term) roomLocked() {
	if t.room != nil {
		close(t.room)
		t.room = make(chan struct{})
	}
}

// release lets a held command's output go (the command is being
// stopped): nothing waits on its follower any more.
func (t *term) release() {
	t.mu.Lock()
	t.discard = true
	t.roomLocked()
	t.mu.Unlock()
}
