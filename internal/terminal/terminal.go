// Package terminal owns an executor's interactive terminals: a shell on a
// PTY in a session's directory, its output kept in a bounded buffer
// addressed by byte offset, so that a client that went away (a browser
// reload, a daemon restart in front of an executor host) reads on from
// where it was. Terminals live in the executor process: on a host they
// outlive the daemon, in a standalone daemon they end with it.
package terminal

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/google/uuid"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/sandbox"
)

// Defaults of a Set.
const (
	DefaultScrollback = 1 << 20 // bytes of output kept per terminal
	DefaultMax        = 16      // terminals per session
	MaxWait           = 20 * time.Second
	maxChunk          = 256 << 10 // bytes one read returns at most
)

// Info describes one terminal.
type Info struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Cwd     string `json:"cwd"`
	Cols    int    `json:"cols"`
	Rows    int    `json:"rows"`
	// Offset is how many bytes of output it has produced so far.
	Offset    int64     `json:"offset"`
	Exited    bool      `json:"exited"`
	ExitCode  *int      `json:"exitCode,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	// Command is set for a command (RunCommand): not interactive, its
	// output its stdout and stderr together.
	Command string `json:"command,omitempty"`
}

// Chunk is output read from a terminal: Data starts at Offset (later than
// asked for when the buffer no longer holds what was asked for) and ends
// at End, where the next read starts.
type Chunk struct {
	Offset   int64  `json:"offset"`
	End      int64  `json:"end"`
	Data     []byte `json:"data"`
	Exited   bool   `json:"exited"`
	ExitCode *int   `json:"exitCode,omitempty"`
}

// Set is an executor's terminals, by session. The zero value is not
// usable: New.
type Set struct {
	scrollback int
	max        int
	shell      string
	sandbox    *sandbox.Spec

	mu    sync.Mutex
	terms map[string]*term // id -> terminal
}

// Options configure a Set; zero values take the defaults.
type Options struct {
	Scrollback int
	Max        int
	// Shell is the program run on the PTY (default $SHELL, else /bin/sh).
	Shell string
	// Sandbox, if set, runs every terminal and command in a sandbox of
	// this spec, the session's directory writable (internal/sandbox);
	// nil (the default) runs them as the executor's user: they are the
	// user's own tools, behind the token.
	Sandbox *sandbox.Spec
}

// New returns an empty set.
func New(o Options) *Set {
	if o.Scrollback <= 0 {
		o.Scrollback = DefaultScrollback
	}
	if o.Max <= 0 {
		o.Max = DefaultMax
	}
	if o.Shell == "" {
		o.Shell = os.Getenv("SHELL")
	}
	if o.Shell == "" {
		o.Shell = "/bin/sh"
	}
	return &Set{scrollback: o.Scrollback, max: o.Max, shell: o.Shell, sandbox: o.Sandbox, terms: map[string]*term{}}
}

type term struct {
	info Info
	cmd  *exec.Cmd
	// launch is how cmd started (in a sandbox or not); closed once reaped.
	launch *sandbox.Launch
	// pty is the shell's PTY; out is what pump reads (the PTY, or a
	// command's output pipe).
	pty *os.File
	out *os.File

	mu sync.Mutex
	// buf holds output [start, start+len(buf)); changed is closed and
	// replaced whenever output arrives or the shell exits.
	buf     []byte
	start   int64
	changed chan struct{}
	done    chan struct{}
	// held is a command whose follower acknowledges its output (hold.go):
	// output not yet acknowledged (before acked) is kept, the command
	// waiting while the buffer is full of it, until discard, once set,
	// has every later byte counted and dropped. room is closed and
	// replaced whenever acked moves or discard is set.
	held    bool
	acked   int64
	discard bool
	room    chan struct{}
}

func notFound(id string) error {
	return errcode.New(errcode.TerminalNotFound, "no terminal %q in this session", id).With("terminal", id)
}

// command is how a terminal or command starts argv in dir: in the Set's
// sandbox if it has one, else as is. Once cmd has started (or failed to),
// the launch's Started must be called.
func (s *Set) command(dir string, argv ...string) (*exec.Cmd, *sandbox.Launch, error) {
	e := env()
	launch := &sandbox.Launch{Path: argv[0], Args: argv[1:]}
	if s.sandbox != nil {
		var err error
		if launch, err = sandbox.Prepare(*s.sandbox, argv[0], argv[1:], dir, e, false); err != nil {
			return nil, nil, err
		}
	}
	cmd := exec.Command(launch.Path, launch.Args...)
	cmd.Dir, cmd.Env = dir, e
	if err := launch.Configure(cmd); err != nil {
		launch.Close()
		return nil, nil, err
	}
	return cmd, launch, nil
}

// env is the executor's environment for a shell, without tetherd's own
// secrets (its token): the terminal's user is the session's, not the
// daemon's.
func env() []string {
	var out []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TETHER_") || k == "TERM" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "TERM=xterm-256color")
}

// Open starts a shell in cwd for session. dir is where it starts: cwd,
// or a name of that very directory its caller holds open (the workspace's
// checked session directory); Info.Cwd says cwd.
func (s *Set) Open(session, cwd, dir string, cols, rows int) (Info, error) {
	if cols <= 0 {
		cols = 80
	}
	if rows <= 0 {
		rows = 24
	}
	if cols > 1000 || rows > 1000 {
		return Info{}, errcode.New(errcode.InvalidRequest, "a terminal of %dx%d is too large", cols, rows)
	}
	if n := s.count(session); n >= s.max {
		return Info{}, errcode.New(errcode.TerminalLimitReached, "this session has %d terminals and commands, the most it may have; close one", n)
	}
	cmd, launch, err := s.command(dir, s.shell)
	if err != nil {
		return Info{}, err
	}
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	launch.Started()
	if err != nil {
		launch.Close()
		if errors.Is(err, os.ErrNotExist) {
			return Info{}, errcode.Wrap(errcode.WorkingDirMissing, err, "cannot start a shell in %s: %v", cwd, err)
		}
		return Info{}, errcode.Wrap(errcode.Internal, err, "starting a shell: %v", err)
	}
	t := &term{info: Info{ID: uuid.NewString(), Session: session, Cwd: cwd, Cols: cols, Rows: rows, StartedAt: time.Now().UTC()},
		cmd: cmd, launch: launch, pty: f, out: f, changed: make(chan struct{}), done: make(chan struct{})}
	s.add(t)
	return t.snapshot(), nil
}

// count is how many terminals and commands session has.
func (s *Set) count(session string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.terms {
		if t.info.Session == session {
			n++
		}
	}
	return n
}

func (s *Set) add(t *term) {
	s.mu.Lock()
	s.terms[t.info.ID] = t
	s.mu.Unlock()
	go t.pump(s.scrollback)
}

// pump copies the shell's output into the buffer until the PTY closes,
// then records the exit.
func (t *term) pump(scrollback int) {
	b := make([]byte, 32<<10)
	for {
		n, err := t.out.Read(b)
		if n > 0 {
			t.mu.Lock()
			t.waitRoomLocked(scrollback)
			if t.discard {
				t.start += int64(len(t.buf) + n)
				t.buf = nil
			} else {
				t.buf = append(t.buf, b[:n]...)
			}
			if over := t.dropLocked(len(t.buf) - scrollback); over > 0 {
				t.buf = append(t.buf[:0:0], t.buf[over:]...)
				t.start += int64(over)
			}
			t.info.Offset = t.start + int64(len(t.buf))
			t.wakeLocked()
			t.mu.Unlock()
		}
		if err != nil {
			break // EIO once the shell and its children closed the PTY
		}
	}
	err := t.cmd.Wait()
	t.launch.Close()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	t.out.Close()
	t.mu.Lock()
	t.info.Exited, t.info.ExitCode = true, &code
	t.wakeLocked()
	t.mu.Unlock()
	close(t.done)
}

func (t *term) wakeLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *term) snapshot() Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.info
}

func (s *Set) get(session, id string) (*term, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.terms[id]
	if t == nil || t.info.Session != session {
		return nil, notFound(id)
	}
	return t, nil
}

// Write types data into the terminal.
func (s *Set) Write(session, id string, data []byte) error {
	t, err := s.get(session, id)
	if err != nil {
		return err
	}
	if t.pty == nil {
		return errcode.New(errcode.InvalidRequest, "%s is a command: it takes no input", id)
	}
	if t.snapshot().Exited {
		return errcode.New(errcode.TerminalExited, "terminal %s has exited", id)
	}
	if _, err := t.pty.Write(data); err != nil {
		return errcode.Wrap(errcode.TerminalExited, err, "terminal %s has exited", id)
	}
	return nil
}

// Read returns the output from offset on, waiting up to wait for some
// when there is none yet (and the shell runs).
func (s *Set) Read(ctx context.Context, session, id string, offset int64, wait time.Duration) (Chunk, error) {
	t, err := s.get(session, id)
	if err != nil {
		return Chunk{}, err
	}
	if offset < 0 {
		return Chunk{}, errcode.New(errcode.InvalidRequest, "offset must not be negative")
	}
	past := false
	if err := t.awaitLocked(ctx, wait, func() bool {
		end := t.start + int64(len(t.buf))
		past = offset > end
		return past || offset < end || t.info.Exited
	}); err != nil {
		return Chunk{}, err
	}
	defer t.mu.Unlock()
	end := t.start + int64(len(t.buf))
	if past {
		return Chunk{}, errcode.New(errcode.InvalidRequest, "offset %d is past the terminal's output (%d bytes)", offset, end)
	}
	from := max(offset, t.start)
	to := min(end, from+maxChunk)
	return Chunk{Offset: from, End: to, Data: append([]byte(nil), t.buf[from-t.start:to-t.start]...),
		Exited: t.info.Exited && to == end, ExitCode: t.info.ExitCode}, nil
}

// awaitLocked waits up to wait (at most MaxWait) until ready, called with
// t.mu held, says so, and returns with t.mu held; or it returns an error,
// without it, when ctx ends first.
func (t *term) awaitLocked(ctx context.Context, wait time.Duration, ready func() bool) error {
	timer := time.NewTimer(min(wait, MaxWait))
	defer timer.Stop()
	for {
		t.mu.Lock()
		if ready() || wait <= 0 {
			return nil
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			wait = 0
		case <-ctx.Done():
			return errcode.Wrap(errcode.Timeout, ctx.Err(), "terminal read ended")
		}
	}
}

// Resize sets the terminal's size.
func (s *Set) Resize(session, id string, cols, rows int) error {
	t, err := s.get(session, id)
	if err != nil {
		return err
	}
	if cols <= 0 || rows <= 0 || cols > 1000 || rows > 1000 {
		return errcode.New(errcode.InvalidRequest, "a terminal of %dx%d cannot be", cols, rows)
	}
	if t.pty == nil {
		return errcode.New(errcode.InvalidRequest, "%s is a command: it has no size", id)
	}
	if err := pty.Setsize(t.pty, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil && !t.snapshot().Exited {
		return errcode.Wrap(errcode.Internal, err, "resizing: %v", err)
	}
	t.mu.Lock()
	t.info.Cols, t.info.Rows = cols, rows
	t.mu.Unlock()
	return nil
}

// List describes the session's terminals, oldest first.
func (s *Set) List(session string) []Info {
	s.mu.Lock()
	var ts []*term
	for _, t := range s.terms {
		if t.info.Session == session {
			ts = append(ts, t)
		}
	}
	s.mu.Unlock()
	out := make([]Info, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.snapshot())
	}
	slices.SortFunc(out, func(a, b Info) int { return a.StartedAt.Compare(b.StartedAt) })
	return out
}

// Close ends the terminal's shell (SIGHUP to its process group, as a
// closed terminal window does, then SIGKILL) and forgets it.
func (s *Set) Close(session, id string) (Info, error) {
	t, err := s.get(session, id)
	if err != nil {
		return Info{}, err
	}
	t.stop()
	s.mu.Lock()
	delete(s.terms, id)
	s.mu.Unlock()
	return t.snapshot(), nil
}

func (t *term) stop() {
	t.release()
	if p := t.cmd.Process; p != nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGHUP)
		select {
		case <-t.done:
			return
		case <-time.After(2 * time.Second):
		}
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
	select {
	case <-t.done:
	case <-time.After(2 * time.Second):
	}
}

// CloseAll ends every terminal (the executor is stopping).
func (s *Set) CloseAll() {
	s.mu.Lock()
	ts := make([]*term, 0, len(s.terms))
	for id, t := range s.terms {
		ts = append(ts, t)
		delete(s.terms, id)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, t := range ts {
		wg.Add(1)
		go func() { defer wg.Done(); t.stop() }()
	}
	wg.Wait()
}

// Live counts the terminals whose shell still runs (an executor host
// with one is not idle).
func (s *Set) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.terms {
		t.mu.Lock()
		if !t.info.Exited {
			n++
		}
		t.mu.Unlock()
	}
	return n
}
