package main

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// warnLooseDataDir logs, at start-up, a data directory that group or
// others can enter or list: it holds the database (transcripts, agent
// environments) and the token, which grants full control of the daemon. It only
// warns: the operator may share the directory on purpose, and a daemon that
// changed modes it did not create would surprise them. The database files
// themselves are tetherd's own and are made 0600 by the store.
func warnLooseDataDir(logger *slog.Logger, dataDir string) {
	if fi, err := os.Stat(dataDir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("data directory is accessible by other users; it holds transcripts and the token",
			"path", dataDir, "mode", modeString(fi.Mode()), "fix", "chmod 700 "+dataDir)
	}
}

// warnLooseTokenFile logs a token file that is not 0600 or stricter, the
// data dir's own or one named by --token-file.
func warnLooseTokenFile(logger *slog.Logger, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		return // unreadable: the caller reports it
	}
	if fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("token file is readable or writable by other users; anyone who reads it controls the daemon",
			"path", path, "mode", modeString(fi.Mode()), "fix", "chmod 600 "+path)
	}
}

// modeString renders permission bits the way chmod takes them (0644).
func modeString(m fs.FileMode) string { return fmt.Sprintf("%04o", m.Perm()) }
