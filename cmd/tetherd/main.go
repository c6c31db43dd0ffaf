// Command tetherd is the Tether daemon: it hosts coding-agent sessions that
// speak ACP, records every turn in SQLite and serves the HTTP API.
//
//	tetherd [serve] [flags]     run the daemon (default)
//	tetherd host [flags]        run an executor host (agents that outlive the daemon)
//	tetherd host ls             list the executor hosts a running daemon knows
//	tetherd demo-agent [flags]  run the built-in ACP demo agent on stdio
//	tetherd backup [flags] OUT  write a consistent copy of the database to OUT
//	tetherd version             print version, commit, build date and API version
//	tetherd sandbox-init [flags] -- AGENT...  (internal) the first process of an agent's sandbox
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tether/tether/internal/buildinfo"
	"github.com/tether/tether/internal/demoagent"
	"github.com/tether/tether/internal/nodump"
	"github.com/tether/tether/internal/sandbox"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == sandbox.InitCommand {
		// Inside an agent's sandbox: it handles its own signals.
		os.Exit(sandbox.InitMain(args[1:]))
	}
	cmd := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "host" || args[0] == "demo-agent" || args[0] == "backup" || args[0] == "version") {
		cmd, args = args[0], args[1:]
	}
	if nodump.Err != nil {
		fmt.Fprintln(os.Stderr, "tetherd: warning: cannot make this process non-dumpable; processes of this user (agents) can read its memory and environment:", nodump.Err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd {
	case "serve":
		err = serve(ctx, args)
	case "host":
		err = runHost(ctx, args)
	case "demo-agent":
		err = demoagent.Run(ctx, args, os.Stdin, os.Stdout, os.Stderr)
	case "backup":
		err = backup(ctx, args, os.Stdout)
	case "version":
		fmt.Println(buildinfo.Get())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tetherd:", err)
		os.Exit(1)
	}
}
