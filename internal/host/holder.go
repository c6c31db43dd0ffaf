package host

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile is the file in a host's data directory whose lock the running
// host holds (New); it also names that host (recordHolder).
const lockFile = "host.lock"

// recordHolder writes into the lock file, which this process holds, who
// holds it: "<pid> <start> <file>\n", start being the process's start
// time in clock ticks after boot (/proc/<pid>/stat) and file the lock
// file's device and inode, so that a reader tells the host from a
// process that got its pid after the host died, and the file from a copy
// of it (a copied data directory has no host).
//
// The file is how the host of a directory is found (Running): a host's
// command line does not name its directory, nor its token file or socket,
// which an agent reads there as its parent's (executor.EnvHostDataDir).
func recordHolder(f *os.File) error {
	line := strconv.Itoa(os.Getpid())
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if start, ok := procStart(os.Getpid()); ok {
		line += " " + start + " " + fileID(fi)
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt([]byte(line+"\n"), 0)
	return err
}

// Running returns the pid of the process that took dataDir's lock to
// run a host, while that process lives; 0 when none does: no lock file,
// a host that ended (its pid no longer runs, or runs another process,
// started later), a copy of a host's directory, or a system without
// /proc.
func Running(dataDir string) int {
	path := filepath.Join(dataDir, lockFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	if fi, err := os.Stat(path); err != nil || fileID(fi) != f[2] {
		return 0
	}
	if start, ok := procStart(pid); !ok || start != f[1] {
		return 0
	}
	return pid
}

// fileID is a file's device and inode ("" where the system has none).
func fileID(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// procStart reads a live process's start time from /proc/<pid>/stat
// (field 22); false if it cannot, or the process has ended (a zombie
// holds no lock).
func procStart(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// The command name, in parentheses, may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", false
	}
	return f[19], true
}
