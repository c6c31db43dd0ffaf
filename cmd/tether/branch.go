package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tether/tether/client"
)

// Rewind, fork and hand-off (docs/rewind.md).

// forkCmd makes a new session from a turn of a session.
func forkCmd(g *globals) *cobra.Command {
	var at, agent, cwd, title string
	var asJSON bool
	c := &cobra.Command{
		Use:   "fork SESSION",
		Short: "Branch a session at a turn: a new session with its transcript and that turn's files (in a new worktree, or --cwd)",
		Args:  args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			body := client.ForkRequest{}
			for _, f := range []struct {
				v   string
				dst **string
			}{{at, &body.AtTurn}, {agent, &body.AgentProfileId}, {cwd, &body.Cwd}, {title, &body.Title}} {
				if f.v != "" {
					v := f.v
					*f.dst = &v
				}
			}
			r, err := call(d.api.ForkSessionWithResponse(cmd.Context(), a[0], body))
			if err != nil {
				return err
			}
			return printNewSession(cmd.OutOrStdout(), r.JSON201, asJSON)
		},
	}
	c.Flags().StringVar(&at, "at", "", "the turn (promptId) to fork at (default: the latest that ended)")
	c.Flags().StringVar(&agent, "agent", "", "the fork's agent profile (default: the session's)")
	c.Flags().StringVar(&cwd, "cwd", "", "a new or empty directory to restore the turn's files into, instead of a new worktree")
	c.Flags().StringVar(&title, "title", "", "the fork's title")
	c.Flags().BoolVar(&asJSON, "json", false, "print the new session as JSON")
	return c
}

// handoffCmd continues a session with another agent in its directory.
func handoffCmd(g *globals) *cobra.Command {
	var title string
	var asJSON bool
	c := &cobra.Command{
		Use:   "handoff SESSION AGENT",
		Short: "Continue a session with another agent, in the same directory, briefed with its transcript",
		Args:  args(2, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			body := client.HandoffRequest{AgentProfileId: a[1]}
			if title != "" {
				body.Title = &title
			}
			r, err := call(d.api.HandoffSessionWithResponse(cmd.Context(), a[0], body))
			if err != nil {
				return err
			}
			return printNewSession(cmd.OutOrStdout(), r.JSON201, asJSON)
		},
	}
	c.Flags().StringVar(&title, "title", "", "the new session's title")
	c.Flags().BoolVar(&asJSON, "json", false, "print the new session as JSON")
	return c
}

// rewindCmd takes a session's files back to the end of a turn, or undoes
// the last rewind.
func rewindCmd(g *globals) *cobra.Command {
	var dryRun, undo, asJSON bool
	c := &cobra.Command{
		Use:   "rewind SESSION [TURN]",
		Short: "Take a session's files back to the end of a turn (--dry-run: only say what would change; --undo: undo the last rewind)",
		Args:  args(1, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if undo == (len(a) == 2) {
				return usagef("name the TURN to rewind to, or --undo the last rewind (not both)")
			}
			if undo && dryRun {
				return usagef("--dry-run is of a rewind, not of an undo")
			}
			d, err := g.dial()
			if err != nil {
				return err
			}
			var res *client.RewindResult
			if undo {
				r, err := call(d.api.UndoRewindWithResponse(cmd.Context(), a[0]))
				if err != nil {
					return err
				}
				res = r.JSON200
			} else {
				r, err := call(d.api.RewindSessionWithResponse(cmd.Context(), a[0], &client.RewindSessionParams{DryRun: &dryRun}, client.RewindRequest{ToTurn: a[1]}))
				if err != nil {
					return err
				}
				res = r.JSON200
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			return printRewind(cmd.OutOrStdout(), res)
		},
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "change nothing: list what the rewind would change, and which of those files you changed outside any turn")
	c.Flags().BoolVar(&undo, "undo", false, "undo the session's last rewind (or undo)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return c
}

// printNewSession writes a fork's id (and where it works), or all of it as JSON.
func printNewSession(w io.Writer, s *client.Session, asJSON bool) error {
	if asJSON {
		return writeJSON(w, s)
	}
	_, err := fmt.Fprintf(w, "%s\t%s\n", s.Id, s.Cwd)
	return err
}

// printRewind writes what a rewind changed (or would), one file a line.
func printRewind(w io.Writer, r *client.RewindResult) error {
	user := map[string]bool{}
	for _, p := range r.UserChanged {
		user[p] = true
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range r.Files {
		note := ""
		if user[f.Path] {
			note = "changed outside any turn"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Status, f.Path, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case r.DryRun:
		_, err := fmt.Fprintf(w, "dry run: %d files would change; nothing changed\n", len(r.Files))
		return err
	case r.Rewind != nil && r.Rewind.Undoes != nil:
		_, err := fmt.Fprintf(w, "undid rewind %s: %d files changed\n", *r.Rewind.Undoes, len(r.Files))
		return err
	case r.Rewind != nil:
		_, err := fmt.Fprintf(w, "rewound: %d files changed, %d turns marked rewound (undo: tether rewind --undo)\n", len(r.Files), len(r.Rewind.Rewound))
		return err
	}
	return nil
}
