package main

import (
	"log/slog"

	"github.com/tether/tether/internal/sandbox"
)

// terminalSandbox is the sandbox of terminals and commands when on
// (--terminal-sandbox): required (a terminal the operator asked to
// confine never runs unconfined), the session's directory its only
// writable place.
func terminalSandbox(on bool, hidden []string, self string) *sandbox.Spec {
	if !on {
		return nil
	}
	return &sandbox.Spec{Policy: sandbox.Policy{Mode: sandbox.ModeRequired, Writable: []string{}}, Hidden: hidden, Self: self}
}

// warnSandbox says loudly, once at start-up, that agents will run without
// their sandbox when bubblewrap does not work here: profiles in mode auto
// then start them unsandboxed, and those in mode required refuse.
func warnSandbox(logger *slog.Logger) {
	if err := sandbox.Available(); err != nil {
		logger.Warn("AGENTS ARE NOT SANDBOXED: bubblewrap does not work on this machine; agents whose sandbox mode is auto (the default) run with this user's full access, those with mode required will not start (docs/security.md)",
			"reason", err.Error())
		return
	}
	logger.Info("agents run sandboxed (bubblewrap)")
}

// remoteTokenFiles are the token files of the remote executor hosts the
// hosts config names (hostsFile, else <dataDir>/hosts.yaml): secrets no
// sandboxed agent may see, wherever they are (a token outside the data
// dir, in a directory an agent's sandbox shows, was readable). A config
// that does not load names none; the daemon refuses to start with it.
func remoteTokenFiles(dataDir, hostsFile string) []string {
	remotes, _, err := loadRemoteHosts(dataDir, hostsFile)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(remotes))
	for _, r := range remotes {
		out = append(out, r.TokenFile)
	}
	return out
}
