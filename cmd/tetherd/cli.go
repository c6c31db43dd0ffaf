package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tether/tether/internal/buildinfo"
	"github.com/tether/tether/internal/demoagent"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/nodump"
)

// Exit statuses of tetherd, as the root command's help documents them.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // the command line is wrong; nothing was started
)

// codeUsage is the stable code a usage error is printed with
// ("tetherd: usage_error: ..."), the one `tetherd backup` answers too.
const codeUsage errcode.Code = "usage_error"

const rootLong = `tetherd is the Tether daemon: it hosts coding-agent sessions that speak ACP,
records every turn in its database and serves the HTTP API and the Web Shell.

With no command, or with a flag first, tetherd runs serve:
"tetherd --addr 127.0.0.1:8080" is "tetherd serve --addr 127.0.0.1:8080".
A command's flags, and the environment variables they default from, are in
"tetherd COMMAND --help".

Exit status:
  0  success, or the help asked for
  1  the command ran and failed; the message says why, with a stable code
     where the cause is known ("tetherd: CODE: message")
  2  usage error ("tetherd: usage_error: ..."): an unknown command or flag,
     a bad flag value or argument; nothing was started or created`

// usageError is a mistake in the command line (an unknown flag, a bad
// value, a missing or extra argument): tetherd says so, points at the
// help of cmd (nil: the command that failed) and exits 2.
type usageError struct {
	err error
	cmd *cobra.Command
}

// Error is the mistake's message.
func (e usageError) Error() string { return e.err.Error() }

// Unwrap is the mistake, for errors.Is and errcode.Is.
func (e usageError) Unwrap() error { return e.err }

// runError is a failure of a command that started (exit 1).
type runError struct{ err error }

// Error is the failure's message.
func (e runError) Error() string { return e.err.Error() }

// Unwrap is the failure, for errors.Is and errcode.Is.
func (e runError) Unwrap() error { return e.err }

// asUsage marks err, a failure to read a command line, as a usage error;
// nil and flag.ErrHelp (the help was printed) stay as they are.
func asUsage(err error) error {
	var u usageError
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.As(err, &u) {
		return err
	}
	return usageError{err: err}
}

// parseFlags parses args into fs as tetherd's subcommands do: -h or --help
// prints fs's usage on stdout and returns flag.ErrHelp; a mistake returns
// a usageError naming it, without the flag package's dump of every flag
// (the help has them).
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(os.Stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		if fs.Usage != nil {
			fs.Usage()
		} else {
			fmt.Fprintf(fs.Output(), "usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
		return err
	case err != nil:
		return usageError{err: err}
	}
	return nil
}

// flagUsage returns a flag set's Usage: header, then each flag but the
// hidden ones as --name with its description and default. The defaults of
// secret flags are not shown: they may come from the environment (a token,
// a database URL with its password).
func flagUsage(fs *flag.FlagSet, header string, hidden, secret map[string]bool) func() {
	return func() {
		w := fs.Output()
		fmt.Fprint(w, header)
		fs.VisitAll(func(f *flag.Flag) {
			if hidden[f.Name] {
				return
			}
			name, usage := flag.UnquoteUsage(f)
			if name != "" {
				name = " " + name
			}
			fmt.Fprintf(w, "  --%s%s\n    \t%s", f.Name, name, strings.ReplaceAll(usage, "\n", "\n    \t"))
			if !secret[f.Name] && f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
				fmt.Fprintf(w, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(w)
		})
	}
}

// isFlagPackageError reports whether err is the flag package's complaint
// about a command line, for the subcommands whose parsers return it bare
// (backup, demo-agent): those are usage errors too.
func isFlagPackageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"flag provided but not defined: ", "invalid value ", "invalid boolean value ",
		"invalid boolean flag ", "flag needs an argument: ", "bad flag syntax: "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// withDefaultCommand keeps the older command lines working: no arguments,
// or a flag first (other than help and version), run serve.
func withDefaultCommand(args []string) []string {
	if len(args) == 0 {
		return []string{"serve"}
	}
	switch args[0] {
	case "-h", "--help", "--version":
		return args
	case "-help":
		return append([]string{"--help"}, args[1:]...)
	case "-version":
		return append([]string{"--version"}, args[1:]...)
	}
	if strings.HasPrefix(args[0], "-") {
		return append([]string{"serve"}, args...)
	}
	return args
}

// execute runs the command line args (os.Args[1:]) and returns the exit
// status, having said on stderr what went wrong.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(withDefaultCommand(args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var r runError
	if errors.As(err, &r) {
		fmt.Fprintln(stderr, "tetherd:", err)
		return exitFailure
	}
	// Anything else is cobra's (unknown command, extra argument) or a
	// flag set's: a usage error, said with its code and as cobra says it
	// (a message that ends in suggestions gets a blank line after them).
	if u := (usageError{}); errors.As(err, &u) && u.cmd != nil {
		cmd = u.cmd
	}
	if cmd == nil {
		cmd = root
	}
	msg := err.Error()
	if !errcode.Is(err, codeUsage) {
		msg = string(codeUsage) + ": " + msg
	}
	fmt.Fprintln(stderr, "tetherd:", msg)
	fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return exitUsage
}

// newRootCommand is tetherd's command tree, writing to stdout and stderr.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "tetherd",
		Short:         "The Tether daemon: coding-agent sessions behind an HTTP API",
		Long:          rootLong,
		Version:       buildinfo.Get().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, `print the version, as "tetherd version" does`)

	host := flagCommand("host [flags]", "Run an executor host (agents that outlive the daemon)",
		func(ctx context.Context, args []string, _ io.Writer) error { return runHost(ctx, args) })
	host.AddCommand(flagCommand("ls [flags]", "List the executor hosts a running daemon knows",
		func(ctx context.Context, args []string, _ io.Writer) error { return hostLs(ctx, args, os.Stdout) }))
	root.AddCommand(
		flagCommand("serve [flags]", "Run the daemon (the default command)",
			func(ctx context.Context, args []string, _ io.Writer) error { return serve(ctx, args) }),
		host,
		flagCommand("demo-agent [flags]", "Run the built-in ACP demo agent on stdio",
			func(ctx context.Context, args []string, errOut io.Writer) error {
				return demoagent.Run(ctx, args, os.Stdin, os.Stdout, errOut)
			}),
		flagCommand("backup [flags] OUTPUT", "Write a consistent copy of the database to OUTPUT",
			func(ctx context.Context, args []string, _ io.Writer) error { return backup(ctx, args, os.Stdout) }),
		&cobra.Command{
			Use:   "version",
			Short: "Print version, commit, build date and API version",
			Args:  cobra.NoArgs,
			Run: func(cmd *cobra.Command, _ []string) {
				fmt.Fprintln(cmd.OutOrStdout(), buildinfo.Get())
			},
		},
	)
	root.SetHelpCommand(helpCommand())
	root.SetOut(stdout)
	root.SetErr(stderr)
	// cobra's completion command, made now rather than in Execute so that
	// `tetherd completion nosuch` is an error: left without a Run, cobra
	// would answer it with the help (exit 0) before checking arguments.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
	return root
}

// flagCommand is a subcommand that reads its own flags with package flag
// (its flag set carries the environment defaults and the usage): cobra
// hands it its arguments untouched, and its help, -h, --help or `tetherd
// help NAME`, is that flag set's usage. run's errOut is where the command
// writes its diagnostics: stdout when it only prints its help.
func flagCommand(use, short string, run func(ctx context.Context, args []string, errOut io.Writer) error) *cobra.Command {
	help := func(cmd *cobra.Command, _ []string) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		_ = run(ctx, []string{"--help"}, cmd.OutOrStdout())
	}
	c := &cobra.Command{
		Use:                use,
		Short:              short,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
				help(cmd, args)
				return nil
			}
			if nodump.Err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "tetherd: warning: cannot make this process non-dumpable; processes of this user (agents) can read its memory and environment:", nodump.Err)
			}
			err := run(cmd.Context(), args, cmd.ErrOrStderr())
			var u usageError
			switch {
			case err == nil || errors.Is(err, flag.ErrHelp):
				return nil
			case errors.As(err, &u):
				return err
			case errcode.Is(err, codeUsage) || isFlagPackageError(err):
				return usageError{err: err}
			}
			return runError{err}
		},
	}
	c.SetHelpFunc(help)
	return c
}

// helpCommand is `tetherd help [COMMAND]`: cobra's, except that a topic
// it does not know is a usage error rather than the root's help.
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  `Help prints the help of any command: tetherd help [command [subcommand]].`,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil {
				return usageError{err: err, cmd: c.Root()}
			}
			if len(rest) > 0 {
				return usageError{err: fmt.Errorf("unknown command %q for %q", rest[0], cmd.CommandPath()), cmd: cmd}
			}
			if cmd.Context() == nil {
				cmd.SetContext(c.Context())
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
	}
}
