package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// InitCommand is the tetherd subcommand that is a sandbox's first
// process (pid 1 of its PID namespace, bwrap --as-pid-1): it forwards the
// loopback ports of NetworkLoopback, runs the agent, hands it the signals
// it gets, reaps whatever is reparented to it, and ends as the agent
// ended. Why not bubblewrap's own init: it waits for every process of
// the namespace, so a tool left in the background outlived the agent
// unless bwrap died with its parent, and then an agent died with a
// daemon killed with -9 (before it could save its session for a native
// resume). Once this init ends, the kernel ends everything else in the
// namespace: the whole tree ends with the agent, and only with it.
const InitCommand = "sandbox-init"

// InitMain is `tetherd sandbox-init [--socket S --ports P,Q] -- agent
// args...`; it returns the exit code.
func InitMain(args []string) int {
	fs := flag.NewFlagSet(InitCommand, flag.ContinueOnError)
	socket := fs.String("socket", "", "the loopback forwarder's unix socket (network loopback)")
	ports := fs.String("ports", "", "loopback TCP ports to forward, comma-separated")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "tetherd sandbox-init: want an agent command after --")
		return 2
	}
	for _, s := range strings.Split(*ports, ",") {
		if s == "" {
			continue
		}
		port, err := strconv.Atoi(s)
		if err != nil || port < 1 || port > 65535 || *socket == "" {
			fmt.Fprintf(os.Stderr, "tetherd sandbox-init: bad port %q or no --socket\n", s)
			return 2
		}
		if err := forwardPort(*socket, port); err != nil {
			fmt.Fprintf(os.Stderr, "tetherd sandbox-init: %v\n", err)
			return 1
		}
	}
	dropTerminal()
	// Notified before the agent starts: a signal meant for it is never
	// lost, and pid 1 gets only the signals it handles.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "tetherd sandbox-init: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	agent := cmd.Process.Pid
	go func() {
		for s := range sigs {
			_ = syscall.Kill(agent, s.(syscall.Signal))
		}
	}()
	// Reap every child, the agent's orphans too, until the agent ends.
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 1
		}
		if pid != agent {
			continue
		}
		if ws.Signaled() {
			// pid 1 cannot end by its own signal: the code says which
			// (acp reads 128+n of a sandboxed agent as signal n).
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// dropTerminal gives up the controlling terminal this process got from
// tetherd's session (tetherd run in a terminal), so that the agent,
// started after, has none either: through /dev/tty it could push input
// into the user's shell (TIOCSTI) after tetherd exits. It stays in
// tetherd's process group, which a stop signals; it is no session
// leader, so the others keep their terminal. Without one, nothing to do.
func dropTerminal() {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	_ = unix.IoctlSetInt(int(f.Fd()), unix.TIOCNOTTY, 0)
}
