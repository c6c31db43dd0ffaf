package acp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/tether/tether/internal/sandbox"
)

// Spec says how to launch an agent process. It is built from a daemon-side
// agent profile, never from an API request.
type Spec struct {
	// Profile names the agent profile, for the process counts of /metrics.
	Profile string
	Command string
	Args    []string
	// Env is the profile's own KEY=VALUE entries. The agent does not inherit
	// the daemon's environment: it gets an allow-list of it (see
	// inheritedEnv), the Passthrough variables, then Env.
	Env []string
	// Passthrough names daemon variables the agent may also see (API keys
	// kept in the user's environment): exact names, or a prefix ending in
	// "*". TETHER_* variables never pass.
	Passthrough []string
	// Dir is the process working directory (the session's cwd).
	Dir string
	// AuthMethod, if set, is sent in ACP authenticate right after
	// initialize (some agents read their API key only then).
	AuthMethod string
	// Sandbox is the sandbox the agent and everything it starts run in
	// (internal/sandbox): its policy and the paths it must never see.
	Sandbox sandbox.Spec
}

// Exit describes how an agent process ended.
type Exit struct {
	// Code is the exit status, or -1 when the process was killed by a signal.
	Code int
	// Signal is the terminating signal's name ("killed", "terminated"), if any.
	Signal string
	// Stderr is the tail of what the agent wrote to stderr.
	Stderr string
	// Lost, when the daemon lost the agent with its executor host rather
	// than saw it exit, says what happened to the host ("executor host
	// \"far\" unreachable for more than 2m0s"); Code is then -1, unknown.
	Lost string
}

// String renders the exit for error messages and logs.
func (e Exit) String() string {
	if e.Lost != "" {
		return "was lost (" + e.Lost + ")"
	}
	if e.Signal != "" {
		return "was stopped by a signal (" + e.Signal + ")"
	}
	return fmt.Sprintf("exited with code %d", e.Code)
}

// process owns one agent child: its pipes, its process group and its exit.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tailBuffer

	// launch is how the agent was started: in its sandbox or not.
	launch *sandbox.Launch

	done     chan struct{}
	exit     Exit
	stopOnce sync.Once
	// onExit releases what the agent's requests used, once it is reaped.
	onExit func()
}

// startProcess launches the agent in its own process group so that stopping
// it also stops any children it spawned (tools, shells, MCP servers).
// onExit runs once the process has been reaped.
func startProcess(spec Spec, onExit func()) (*process, error) {
	if spec.Command == "" {
		return nil, errors.New("agent command is empty")
	}
	env := agentEnv(os.Environ(), spec)
	launch, err := sandbox.Prepare(spec.Sandbox, spec.Command, spec.Args, spec.Dir, env, sandbox.HasKey(spec.Env, "HOME"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(launch.Path, launch.Args...)
	if err := launch.Configure(cmd); err != nil {
		launch.Close()
		return nil, err
	}
	cmd.Dir = spec.Dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A descendant that escapes the group but keeps stderr open must not
	// keep Wait (and so Stop) blocked forever.
	cmd.WaitDelay = 2 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		launch.Close()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		launch.Close()
		return nil, err
	}
	p := &process{cmd: cmd, stdin: stdin, stdout: stdout, stderr: newTailBuffer(8 << 10), launch: launch,
		done: make(chan struct{}), onExit: onExit}
	cmd.Stderr = p.stderr
	err = cmd.Start()
	launch.Started()
	if err != nil {
		launch.Close()
		return nil, err
	}
	countStart(spec.Profile)
	go p.wait(spec.Profile)
	return p, nil
}

func (p *process) wait(profile string) {
	err := p.cmd.Wait()
	e := Exit{Code: 0, Stderr: p.stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		e.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Code = -1
			e.Signal = ws.Signal().String()
		}
	} else if err != nil {
		e.Code = -1
		e.Signal = err.Error()
	}
	if p.launch.Sandboxed && e.Signal == "" && e.Code > 128 && e.Code <= 128+64 {
		// bubblewrap (and the sandbox's init) end with 128+n for an agent
		// killed by signal n: said as the signal, as for an unsandboxed one.
		e.Code, e.Signal = -1, syscall.Signal(e.Code-128).String()
	}
	p.exit = e
	p.launch.Close()
	countExit(profile, e)
	p.onExit()
	close(p.done)
}

// pid returns the OS process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// stop closes stdin (a well-behaved agent exits on EOF), then sends SIGTERM
// to the whole group, then SIGKILL after grace. It returns once reaped.
func (p *process) stop(grace time.Duration) Exit {
	p.stopOnce.Do(func() {
		_ = p.stdin.Close()
		pgid := -p.cmd.Process.Pid
		select {
		case <-p.done:
			// A clean exit on EOF can still leave tools or MCP servers it
			// spawned; they belong to the session and go with it.
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			return
		case <-time.After(grace / 4):
		}
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-p.done:
			// The leader is gone; make sure its children are too.
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			return
		case <-time.After(grace):
		}
		_ = syscall.Kill(pgid, syscall.SIGKILL)
	})
	<-p.done
	return p.exit
}

// tailBuffer keeps the last max bytes written to it; agents can be chatty on
// stderr and only the end matters for error reports.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
