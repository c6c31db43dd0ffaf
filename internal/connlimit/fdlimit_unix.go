//go:build unix

package connlimit

import "syscall"

// fileLimit is the process's open-file limit (RLIMIT_NOFILE, soft), or 0
// if unknown.
func fileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}
