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
