package main

import (
	"fmt"
	"path/filepath"
)

// absPaths makes each non-empty path flag absolute against the working
// directory tetherd started in, before anything uses it: paths are handed
// on to children that run elsewhere (the detached host runs in its own
// directory, git runs in a session's directory with GIT_DIR set), where a
// relative one would name another file or none.
func absPaths(paths ...*string) error {
	for _, p := range paths {
		if *p == "" {
			continue
		}
		a, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("resolve %s: %w", *p, err)
		}
		*p = a
	}
	return nil
}
