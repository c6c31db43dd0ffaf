package workspace

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirWatch learns whether the session's directory, or a directory above
// it, was moved or removed while a request ran, even if it was put back
// before the request ended: the kernel queues an inotify IN_MOVE_SELF or
// IN_DELETE_SELF on each of them as the rename or removal happens. The
// checks by path at the end of a request (sessionDir.after) see only
// where things stand then; git, which follows paths, may have been led
// elsewhere by a swap undone within one of its commands.
type dirWatch struct{ fd int }

// watchDir watches the directory open as execDir and each directory above
// path. It returns nil where inotify is not to be had (a per-user limit
// reached): the request then relies on the checks by path alone.
func watchDir(execDir, path string) *dirWatch {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &dirWatch{fd: fd}
	const mask = unix.IN_MOVE_SELF | unix.IN_DELETE_SELF | unix.IN_ONLYDIR
	if _, err := unix.InotifyAddWatch(fd, execDir, mask); err != nil {
		w.close()
		return nil
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		// A directory above that cannot be watched is left to the checks
		// by path.
		_, _ = unix.InotifyAddWatch(fd, dir, mask)
		if dir == filepath.Dir(dir) {
			break
		}
	}
	return w
}

// moved reports whether any watched directory was moved or removed since
// watchDir.
func (w *dirWatch) moved() bool {
	if w == nil {
		return false
	}
	var buf [4096]byte
	n, err := unix.Read(w.fd, buf[:])
	if errors.Is(err, unix.EAGAIN) {
		return false
	}
	return n > 0 || err != nil
}

func (w *dirWatch) close() {
	if w != nil {
		_ = unix.Close(w.fd)
	}
}
