package acp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// StopOrphan kills the process group pid leads, an agent a previous
// daemon started as command with args: nobody holds its stdio any more,
// so it can never be driven. The pid may have been reused since (pids
// wrap at 32,768 on many machines, within minutes on a busy one), so only
// a group leader still running that command line (or the sandbox that
// runs it) is touched: SIGTERM now, SIGKILL 3 s later. The arguments
// matter: the demo agent and a detached executor host are both tetherd,
// and only `tetherd demo-agent …` is the agent.
func StopOrphan(pid int, command string, args []string) {
	if !isAgentProcess(pid, command, args) {
		return
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		return // no such group (ESRCH): nothing left, and the pid may be reused
	}
	time.AfterFunc(3*time.Second, func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
}

// isAgentProcess reports whether pid leads its own process group and its
// command line, read from /proc, runs command with args (runsAgent).
func isAgentProcess(pid int, command string, args []string) bool {
	if command == "" {
		return false
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return runsAgent(strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), command, args)
}

// runsAgent reports whether argv is the agent launched as command with
// args (more arguments may follow them: a resume's): that command line
// itself, or behind the interpreter of a script (`node script …`: the
// kernel runs a #! line's interpreter with the script as its first
// argument), or at the end of the sandbox's (bubblewrap's) arguments. A
// command is known by its path or, as launched from PATH, its name.
func runsAgent(argv []string, command string, args []string) bool {
	same := func(a string) bool { return a == command || filepath.Base(a) == filepath.Base(command) }
	starts := func(i int) bool {
		return same(argv[i]) && len(argv)-i-1 >= len(args) && slices.Equal(argv[i+1:i+1+len(args)], args)
	}
	if len(argv) == 0 || argv[0] == "" {
		return false
	}
	if starts(0) || (len(argv) > 1 && starts(1)) {
		return true
	}
	if filepath.Base(argv[0]) != "bwrap" {
		return false
	}
	for i := 1; i < len(argv); i++ {
		if starts(i) {
			return true
		}
	}
	return false
}
