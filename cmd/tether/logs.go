package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tether/tether/client"
)

// logsCmd prints a session's events as JSON lines.
func logsCmd(g *globals) *cobra.Command {
	var follow bool
	var from string
	var types []string
	c := &cobra.Command{
		Use:   "logs SESSION",
		Short: "Print a session's events as JSON lines ({id, type, data}); -f follows",
		Long: `Print SESSION's event log as JSON lines, one {"id","type","data"} object
per event, from the start of the log or after --from CURSOR. With -f it goes
on with live events, through daemon restarts and dropped connections,
resuming after the last event printed, until the session is closed and its
log delivered (or Ctrl-C).`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			s := client.SessionStream(d.addr, d.token, a[0], from)
			s.NoFollow, s.Types = !follow, types
			w := cmd.OutOrStdout()
			return authErr(s.Run(cmd.Context(), func(e client.Event) error {
				if !inLog(e) {
					return nil
				}
				return writeEventLine(w, e)
			}))
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "go on with live events")
	c.Flags().StringVar(&from, "from", "", "start after this cursor (an event's id)")
	c.Flags().StringSliceVar(&types, "types", nil, "only these event types (e.g. turn.completed,message.added)")
	return c
}

// inLog reports whether e is an event of the log (or resync_required,
// which says the log moved on without the client), not one of the
// stream's own control frames (replay_complete, stream_lagged).
func inLog(e client.Event) bool {
	return e.ID != "" || e.Type == client.ResyncRequired
}

// exportCmd writes a session's conversation as Markdown or JSON.
func exportCmd(g *globals) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "export SESSION",
		Short: "Write a session's conversation as Markdown (--format md) or JSON (--format json)",
		Args:  args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if format != "md" && format != "json" {
				return usagef("--format is md or json, not %q", format)
			}
			d, err := g.dial()
			if err != nil {
				return err
			}
			r, err := call(d.api.GetTranscriptWithResponse(cmd.Context(), a[0], nil))
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), r.JSON200)
			}
			return writeMarkdown(cmd.OutOrStdout(), r.JSON200)
		},
	}
	c.Flags().StringVar(&format, "format", "md", "md or json")
	return c
}

// writeMarkdown writes transcript t as a Markdown document: each turn's
// prompt, then its messages and tool calls in the order they came.
func writeMarkdown(w io.Writer, t *client.Transcript) error {
	fmt.Fprintf(w, "# Session %s\n", t.SessionId)
	calls := map[string][]client.ToolCall{}
	for _, c := range t.ToolCalls {
		if c.PromptId != nil {
			calls[*c.PromptId] = append(calls[*c.PromptId], c)
		}
	}
	for _, turn := range t.Turns {
		fmt.Fprintf(w, "\n## Turn %s (%s)\n", turn.PromptId, turn.State)
		for _, m := range t.Messages {
			if m.PromptId == nil || *m.PromptId != turn.PromptId {
				continue
			}
			switch m.Role {
			case "user":
				fmt.Fprintf(w, "\n**You:**\n\n%s\n", m.Text)
			case "thought":
				fmt.Fprintf(w, "\n> _thinking:_ %s\n", strings.ReplaceAll(m.Text, "\n", "\n> "))
			default:
				fmt.Fprintf(w, "\n**Agent:**\n\n%s\n", m.Text)
			}
		}
		for _, c := range calls[turn.PromptId] {
			fmt.Fprintf(w, "\n- tool `%s` %s: %s\n", kindOf(c.Kind), c.Status, c.Title)
		}
	}
	return nil
}

// kindOf is a tool call's kind, "other" when it has none.
func kindOf(k *string) string {
	if k == nil || *k == "" {
		return "other"
	}
	return *k
}

// versionCmd prints tether's version.
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tether's version, commit and build date",
		Args:  args(0, 0),
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version()) },
	}
}
