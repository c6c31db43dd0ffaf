// Command tetherd is the Tether daemon: it hosts coding-agent sessions that
// speak ACP, records every turn in SQLite and serves the HTTP API.
//
//	tetherd [serve] [flags]     run the daemon (the default: no command, or a flag first)
//	tetherd host [flags]        run an executor host (agents that outlive the daemon)
//	tetherd host ls [flags]     list the executor hosts a running daemon knows
//	tetherd demo-agent [flags]  run the built-in ACP demo agent on stdio
//	tetherd backup [flags] OUT  write a consistent copy of the database to OUT
//	tetherd version             print version, commit, build date and API version (also --version)
//	tetherd help [COMMAND]      the commands, or one command's flags (also -h, --help)
//	tetherd completion SHELL    a completion script for bash, zsh, fish or powershell
//	tetherd sandbox-init [flags] -- AGENT...  (internal, not in the help) the first process of an agent's sandbox
//
// The commands are cobra's (cli.go); each but version, help and completion
// reads its own flags with package flag, whose flag set carries the
// environment defaults and the usage. An unknown command or flag, or a bad
// flag value, exits 2 before anything is created; a command that fails
// while running exits 1.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tether/tether/internal/sandbox"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == sandbox.InitCommand {
		// Inside an agent's sandbox: it handles its own signals.
		os.Exit(sandbox.InitMain(args[1:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
