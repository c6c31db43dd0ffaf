// Package workspace validates the directories sessions work in.
package workspace

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/tether/tether/internal/errcode"
)

// ResolveDir turns a client-supplied working directory into the canonical
// path the agent will run in: it must be absolute, exist and be a directory.
// Symlinks are resolved so that the stored path (and the fs confinement
// derived from it) is the real location, not a link that could later be
// re-pointed elsewhere.
func ResolveDir(path string) (string, error) {
	if path == "" {
		return "", errcode.New(errcode.InvalidCwd, "cwd is required")
	}
	if !filepath.IsAbs(path) {
		return "", errcode.New(errcode.InvalidCwd, "cwd must be an absolute path, got %q", path)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(path))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", errcode.New(errcode.InvalidCwd, "cwd %q does not exist", path)
		}
		return "", errcode.Wrap(errcode.InvalidCwd, err, "cwd %q cannot be resolved", path)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", errcode.Wrap(errcode.InvalidCwd, err, "cwd %q cannot be read", path)
	}
	if !fi.IsDir() {
		return "", errcode.New(errcode.InvalidCwd, "cwd %q is not a directory", path)
	}
	return real, nil
}
