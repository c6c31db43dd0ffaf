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
// daemon started with command: nobody holds its stdio any more, so it can
// never be driven. The pid may have been reused since (a reboot, a long
// downtime), so only a group leader still running the agent's command (or
// the sandbox that runs it) is touched: SIGTERM now, SIGKILL 3 s later.
func StopOrphan(pid int, command string) {
	if !isAgentProcess(pid, command) {
		return
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		return // no such group (ESRCH): nothing left, and the pid may be reused
	}
	time.AfterFunc(3*time.Second, func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
}

// isAgentProcess reports whether pid leads its own process group and runs
// command (argv[0] as launched), or the sandbox (bubblewrap) that runs it
// (command among its arguments), read from /proc.
func isAgentProcess(pid int, command string) bool {
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
	argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if argv[0] == command || filepath.Base(argv[0]) == filepath.Base(command) {
		return true
	}
	return filepath.Base(argv[0]) == "bwrap" && slices.Contains(argv, command)
}
