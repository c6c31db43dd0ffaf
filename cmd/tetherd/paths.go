package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// absPaths makes each non-empty path flag absolute against the working
// directory tetherd started in, before anything uses it: paths are handed
// on to children that run elsewhere (the detached host runs in its own
// directory, git runs in a session's directory with GIT_DIR set), where a
// relative one would name another file or none. A leading "~" or "~/" is
// the home directory, as a shell would have it: no shell expands it in an
// environment variable (a systemd unit's Environment=TETHER_DATA_DIR=~/…)
// or after "=" (--data-dir=~/…), and taken as relative it made a directory
// named "~" in the start-up directory.
func absPaths(paths ...*string) error {
	for _, p := range paths {
		if *p == "" {
			continue
		}
		if *p == "~" || strings.HasPrefix(*p, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return fmt.Errorf("resolve %s: %w", *p, err)
			}
			*p = filepath.Join(home, (*p)[1:])
		}
		a, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("resolve %s: %w", *p, err)
		}
		*p = a
	}
	return nil
}
