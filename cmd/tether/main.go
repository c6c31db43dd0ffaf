// Command tether is the terminal client of a Tether daemon (tetherd), as
// docker is dockerd's: it lists, starts, prompts and follows sessions over
// the daemon's HTTP API, through the Go client generated from the contract
// (package client), and `tether attach` puts a session live in the
// terminal. docs/cli.md is its manual.
//
// Exit codes: 0 done; 1 the daemon refused (its problem code is printed)
// or the operation failed; 2 a usage error; 3 the daemon cannot be reached
// or no token was found; 4 a turn waited for (--wait) ended other than
// completed.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tether/tether/client"
)

// Exit codes (documented in the root command's help and docs/cli.md).
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnreachable = 3
	exitTurn        = 4
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string) int {
	root := newRoot()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		fmt.Fprintf(os.Stderr, "tether: %v\n", err)
		if cmd != nil {
			fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return exitUsage
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return 128 + int(syscall.SIGTERM) // stopped by SIGTERM, as if it had not caught it
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(os.Stderr, "tether: %s\n", ee.msg)
		}
		return ee.code
	}
	if isUnreachable(err) {
		fmt.Fprintf(os.Stderr, "tether: cannot reach tetherd (is it running? --addr, $TETHER_ADDR): %v\n", err)
		return exitUnreachable
	}
	fmt.Fprintf(os.Stderr, "tether: %v\n", err)
	return exitFailed
}

// usageError is a mistake in the command line.
type usageError struct{ error }

// usagef is a usage error.
func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// exitError ends tether with code, saying msg (if any).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// newRoot is the whole command tree.
func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "tether",
		Short: "The terminal client of a Tether daemon (tetherd)",
		Long: `tether lists, starts, prompts and follows the coding-agent sessions of a
Tether daemon (tetherd), and attaches to one live in the terminal.

It finds the daemon at --addr, else $TETHER_ADDR, else 127.0.0.1:7777, and
its token in --token-file, else $TETHER_TOKEN, else $TETHER_TOKEN_FILE, else
the daemon's own token file, <data-dir>/token ($TETHER_DATA_DIR, else
$XDG_DATA_HOME/tether, else ~/.local/share/tether), as tetherd writes it.

Exit codes: 0 done; 1 the daemon refused (its stable problem code is
printed) or the operation failed; 2 a usage error; 3 the daemon cannot be
reached, or no token was found; 4 a turn waited for (--wait) ended other
than completed (failed, cancelled or interrupted).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&g.addr, "addr", "", "the daemon's address, host:port or a URL [TETHER_ADDR] (default 127.0.0.1:7777)")
	root.PersistentFlags().StringVar(&g.tokenFile, "token-file", "", "read the bearer token from this file [TETHER_TOKEN_FILE]")
	root.AddGroup(&cobra.Group{ID: "sessions", Title: "Sessions:"}, &cobra.Group{ID: "turns", Title: "Turns:"})
	for _, c := range []*cobra.Command{lsCmd(g), newCmd(g), statusCmd(g), attachCmd(g), logsCmd(g), exportCmd(g), renameCmd(g), archiveCmd(g), closeCmd(g),
		forkCmd(g), handoffCmd(g)} {
		c.GroupID = "sessions"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{promptCmd(g), continueCmd(g), cancelCmd(g), permissionsCmd(g), rewindCmd(g)} {
		c.GroupID = "turns"
		root.AddCommand(c)
	}
	root.AddCommand(versionCmd())
	strictHelpAndCompletion(root)
	for _, c := range root.Commands() {
		if strings.HasPrefix(c.Use, c.Name()+" SESSION") || strings.HasPrefix(c.Use, c.Name()+" [SESSION]") {
			c.ValidArgsFunction = completeSessions(g)
		}
	}
	return root
}

// isCobraUsage reports whether err is cobra's own complaint about the
// command line that no hook of ours sees: an unknown subcommand (flag
// errors go through SetFlagErrorFunc, argument counts through args).
func isCobraUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command ")
}

// args checks a command's positional arguments: at least lo, at most hi
// (hi < 0: any number), as a usage error.
func args(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		switch {
		case len(a) < lo:
			return usagef("%s needs %d argument(s), got %d", cmd.Name(), lo, len(a))
		case hi >= 0 && len(a) > hi:
			return usagef("%s takes at most %d argument(s), got %d", cmd.Name(), hi, len(a))
		}
		return nil
	}
}

// completeSessions completes a SESSION argument with the ids of the
// newest sessions, each described by its title and state.
func completeSessions(g *globals) cobra.CompletionFunc {
	return func(cmd *cobra.Command, a []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(a) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		d, err := g.dial()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		limit := 50
		r, err := call(d.api.ListSessionsWithResponse(cmd.Context(), &client.ListSessionsParams{Limit: &limit}))
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, s := range r.JSON200.Sessions {
			desc := stateWord(string(s.State))
			if s.Title != nil && *s.Title != "" {
				desc = shorten(*s.Title, 40) + " · " + desc
			}
			out = append(out, cobra.CompletionWithDesc(s.Id, desc))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// strictHelpAndCompletion makes cobra's help and completion commands
// refuse what they do not know (an unknown topic, an unknown shell) as a
// usage error, exit 2, where cobra's own print help and exit 0.
func strictHelpAndCompletion(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.RunE = func(cmd *cobra.Command, a []string) error {
				target, rest, err := root.Find(a)
				if err != nil || target == nil || len(rest) > 0 {
					return usagef("unknown help topic %q", strings.Join(a, " "))
				}
				return target.Help()
			}
			c.Run = nil
		case "completion":
			shells := c.Commands()
			c.Args = func(_ *cobra.Command, a []string) error { return nil }
			c.RunE = func(cmd *cobra.Command, a []string) error {
				names := make([]string, len(shells))
				for i, sh := range shells {
					names[i] = sh.Name()
				}
				if len(a) == 0 {
					return usagef("completion needs a shell: %s", strings.Join(names, ", "))
				}
				return usagef("unknown shell %q: %s", a[0], strings.Join(names, ", "))
			}
		}
	}
}
