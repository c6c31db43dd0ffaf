package workspace

import (
	"context"
	"strings"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/terminal"
)

// Terminal operations: the session's interactive terminals, on its
// executor (internal/terminal), carried like the other workspace
// requests: in the daemon for standalone sessions, over the host protocol
// otherwise. Output is read by offset with a long poll (OpTerminalRead
// waits up to WaitMS for output), so the same request works over a
// reconnect and after a daemon restart in front of a host.
const (
	OpTerminalOpen   Op = "terminal_open"
	OpTerminalList   Op = "terminal_list"
	OpTerminalWrite  Op = "terminal_write"
	OpTerminalRead   Op = "terminal_read"
	OpTerminalResize Op = "terminal_resize"
	OpTerminalClose  Op = "terminal_close"
	// OpCommandRun runs Command (sh -c) without a PTY; its output and exit
	// are read and closed with the terminal operations.
	OpCommandRun Op = "command_run"
)

// MaxCommand bounds a command's length.
const MaxCommand = 8192

// CheckCommand refuses what cannot be a command: empty, longer than
// MaxCommand, or holding a NUL byte, which no program's argument can
// (errcode.ValidationFailed). The daemon checks before it asks an
// executor, and the executor again.
func CheckCommand(command string) error {
	switch {
	case command == "" || len(command) > MaxCommand:
		return errcode.New(errcode.ValidationFailed, "a command is 1 to %d bytes, got %d", MaxCommand, len(command))
	case strings.ContainsRune(command, 0):
		return errcode.New(errcode.ValidationFailed, "a command cannot hold a NUL byte (at byte %d)", strings.IndexByte(command, 0))
	}
	return nil
}

func isTerminalOp(op Op) bool {
	switch op {
	case OpTerminalOpen, OpTerminalList, OpTerminalWrite, OpTerminalRead, OpTerminalResize, OpTerminalClose, OpCommandRun:
		return true
	}
	return false
}

// serveTerminal performs a terminal operation for req.Session.
func serveTerminal(ctx context.Context, req Request, cfg Config) (Result, error) {
	set := cfg.Terminals
	if set == nil {
		return Result{}, errcode.New(errcode.TerminalDisabled, "this executor serves no terminals (switched off by its configuration)")
	}
	if req.Session == "" {
		return Result{}, errcode.New(errcode.InvalidRequest, "a terminal belongs to a session")
	}
	info := func(i terminal.Info, err error) (Result, error) {
		if err != nil {
			return Result{}, err
		}
		return Result{Terminal: &i}, nil
	}
	switch req.Op {
	case OpTerminalOpen, OpCommandRun:
		if req.Op == OpCommandRun {
			if err := CheckCommand(req.Command); err != nil {
				return Result{}, err
			}
		}
		// The shell or command starts in the session's directory as
		// checked, never wherever its path leads by then.
		d, err := openSessionDir(req.Root, cfg)
		if err != nil {
			return Result{}, err
		}
		defer d.Close()
		if req.Op == OpTerminalOpen {
			return info(set.Open(req.Session, d.path, d.execDir(), req.Cols, req.Rows))
		}
		return info(set.RunCommand(req.Session, d.path, d.execDir(), req.Command, req.Held))
	case OpTerminalList:
		return Result{Terminals: set.List(req.Session)}, nil
	case OpTerminalWrite:
		return Result{}, set.Write(req.Session, req.Terminal, req.Data)
	case OpTerminalRead:
		wait := time.Duration(req.WaitMS) * time.Millisecond
		var c terminal.Chunk
		var err error
		if req.Ack > 0 || req.Discard { // a held command's follower
			c, err = set.Follow(ctx, req.Session, req.Terminal, req.Offset, req.Ack, wait, req.Discard)
		} else {
			c, err = set.Read(ctx, req.Session, req.Terminal, req.Offset, wait)
		}
		if err != nil {
			return Result{}, err
		}
		return Result{Output: &c}, nil
	case OpTerminalResize:
		return Result{}, set.Resize(req.Session, req.Terminal, req.Cols, req.Rows)
	case OpTerminalClose:
		return info(set.Close(req.Session, req.Terminal))
	}
	return Result{}, errcode.New(errcode.InvalidRequest, "unknown terminal operation %q", req.Op)
}
