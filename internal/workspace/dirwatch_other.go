//go:build !linux

package workspace

// dirWatch is Linux's inotify watch of the session's directory
// (dirwatch_linux.go); elsewhere the checks by path stand alone.
type dirWatch struct{}

func watchDir(execDir, path string) *dirWatch { return nil }

func (w *dirWatch) moved() bool { return false }

func (w *dirWatch) close() {}
