package nodump

import "syscall"

// Err is why this process could not be made non-dumpable; nil when it
// is, or is the demo agent.
var Err error

// init uses syscall alone (the arguments from /proc/self/cmdline, not
// package os): the fewer packages it waits for, the earlier it runs.
func init() {
	if subcommand() == "demo-agent" {
		return
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		Err = errno
	}
}

// subcommand is this process's first argument ("" if it cannot tell:
// then the process is made non-dumpable).
func subcommand() string {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer syscall.Close(fd)
	buf := make([]byte, 512)
	n, err := syscall.Read(fd, buf)
	if err != nil || n <= 0 {
		return ""
	}
	// argv[0] NUL argv[1] NUL ...
	buf = buf[:n]
	for i, b := range buf {
		if b == 0 {
			rest := buf[i+1:]
			for j, c := range rest {
				if c == 0 {
					return string(rest[:j])
				}
			}
			return string(rest)
		}
	}
	return ""
}
