package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/tether/tether/client"
)

// lsCmd lists sessions, newest first (GET /sessions, page by page).
func lsCmd(g *globals) *cobra.Command {
	var asJSON, all, archived bool
	var limit int
	var states []string
	var query string
	c := &cobra.Command{
		Use:   "ls",
		Short: "List sessions: title, agent, state, last activity (newest first)",
		Args:  args(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 && !all {
				return usagef("--limit must be at least 1")
			}
			d, err := g.dial()
			if err != nil {
				return err
			}
			var list []client.Session
			var token *string
			for {
				page := min(200, limit-len(list))
				if all {
					page = 200
				}
				p := &client.ListSessionsParams{Limit: &page, PageToken: token}
				if query != "" {
					p.Q = &query
				}
				if archived {
					p.Archived = &archived
				}
				if len(states) > 0 {
					s := make([]client.SessionState, len(states))
					for i, v := range states {
						s[i] = client.SessionState(strings.ToUpper(v))
					}
					p.State = &s
				}
				r, err := call(d.api.ListSessionsWithResponse(cmd.Context(), p))
				if err != nil {
					return err
				}
				list = append(list, r.JSON200.Sessions...)
				token = r.JSON200.NextPageToken
				if token == nil || *token == "" || (!all && len(list) >= limit) {
					break
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), list)
			}
			return printSessions(cmd.OutOrStdout(), list, time.Now())
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the sessions as a JSON array")
	c.Flags().BoolVarP(&all, "all", "a", false, "list every session, not only the newest --limit")
	c.Flags().IntVarP(&limit, "limit", "n", 50, "list at most this many sessions")
	c.Flags().StringSliceVar(&states, "state", nil, "only sessions in these states (running, waiting_for_input, completed, …)")
	c.Flags().StringVarP(&query, "search", "q", "", "only sessions whose title, or what an ended turn said, holds every word of this")
	c.Flags().BoolVar(&archived, "archived", false, "list the archived sessions instead")
	return c
}

// renameCmd sets a session's title (PATCH /session/{id}).
func renameCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rename SESSION TITLE...",
		Short: "Set a session's title (it replaces the agent's and the first prompt's)",
		Args:  args(2, -1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			title := strings.Join(a[1:], " ")
			_, err = call(d.api.UpdateSessionWithResponse(cmd.Context(), a[0], client.SessionUpdate{Title: &title}))
			return err
		},
	}
}

// archiveCmd archives a session, or brings it back (--undo).
func archiveCmd(g *globals) *cobra.Command {
	var undo bool
	c := &cobra.Command{
		Use:   "archive SESSION",
		Short: "Archive a session: tether ls leaves it out (--undo brings it back)",
		Args:  args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			archived := !undo
			_, err = call(d.api.UpdateSessionWithResponse(cmd.Context(), a[0], client.SessionUpdate{Archived: &archived}))
			return err
		},
	}
	c.Flags().BoolVar(&undo, "undo", false, "bring the session back from the archive")
	return c
}

// printSessions writes list as a table.
func printSessions(w io.Writer, list []client.Session, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tAGENT\tSTATE\tLAST ACTIVITY")
	for _, s := range list {
		title := "(untitled)"
		if s.Title != nil && *s.Title != "" {
			title = shorten(*s.Title, 40)
		}
		last := s.UpdatedAt
		if s.LastActivityAt != nil {
			last = *s.LastActivityAt
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Id, title, s.AgentProfileId, stateWord(string(s.State)), ago(now, last))
	}
	return tw.Flush()
}

// stateWord is a session state as a person says it.
func stateWord(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "_", " ")
}

// ago is t relative to now, as "5s ago", "3m ago", "2h ago", "4d ago".
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// shorten cuts s to n runes, on one line.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// newCmd creates a session (POST /session), with a first prompt if given.
func newCmd(g *globals) *cobra.Command {
	var agent, cwd, title string
	var worktree, asJSON, wait bool
	c := &cobra.Command{
		Use:   "new [PROMPT...]",
		Short: "Start a session, with a first prompt if given",
		Long: `Start a session of --agent (default: the daemon's first available agent)
in --cwd (default: the current directory), optionally in a git worktree of
its own, and send PROMPT as its first prompt. Prints the session's id
(with --json, the session).`,
		Args: args(0, -1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if agent == "" {
				if agent, err = d.firstAgent(cmd); err != nil {
					return err
				}
			}
			if cwd == "" {
				if cwd, err = os.Getwd(); err != nil {
					return err
				}
			}
			if cwd, err = filepath.Abs(cwd); err != nil {
				return err
			}
			body := client.SessionCreate{AgentProfileId: agent, Cwd: cwd}
			if worktree {
				body.Worktree = &worktree
			}
			if title != "" {
				body.Title = &title
			}
			promptID := ""
			if text := strings.Join(a, " "); text != "" {
				promptID = uuid.NewString()
				p := textPrompt(text)
				body.InitialPrompt, body.PromptId = &p, &promptID
			}
			r, err := call(d.api.CreateSessionWithResponse(ctx, body))
			if err != nil {
				return err
			}
			s := r.JSON201
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), s); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), s.Id)
			}
			if wait && promptID != "" {
				return d.waitTurn(ctx, s.Id, promptID, "", waitOut(cmd, asJSON))
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "the agent profile's id (tether status lists them)")
	c.Flags().StringVar(&cwd, "cwd", "", "the session's working directory (default: the current one)")
	c.Flags().BoolVar(&worktree, "worktree", false, "run the session in a git worktree of its own (the directory must be in a git repository)")
	c.Flags().StringVar(&title, "title", "", "the session's title")
	c.Flags().BoolVar(&asJSON, "json", false, "print the created session as JSON")
	c.Flags().BoolVar(&wait, "wait", false, "wait for the first prompt's turn and print the agent's reply")
	return c
}

// firstAgent is the id of the daemon's first available agent profile.
func (d *conn) firstAgent(cmd *cobra.Command) (string, error) {
	r, err := call(d.api.ListAgentsWithResponse(cmd.Context()))
	if err != nil {
		return "", err
	}
	var why []string
	for _, p := range r.JSON200.Agents {
		if p.Available {
			return p.Id, nil
		}
		if p.UnavailableReason != nil {
			why = append(why, p.Id+": "+*p.UnavailableReason)
		}
	}
	return "", exitError{exitFailed, "no agent is available on this daemon (" + strings.Join(why, "; ") + ")"}
}

// textPrompt is a prompt of one text block.
func textPrompt(text string) client.Prompt {
	return client.Prompt{{Type: client.ContentBlockTypeText, Text: &text}}
}

// closeCmd ends a session (DELETE /session/{id}).
func closeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "close SESSION",
		Short: "End a session: its agent stops, its transcript stays",
		Args:  args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			_, err = call(d.api.CloseSessionWithResponse(cmd.Context(), a[0]))
			return err
		},
	}
}

// statusCmd shows a session's status, or the daemon's with its agents.
func statusCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status [SESSION]",
		Short: "Show a session's status, or the daemon's and its agents'",
		Args:  args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			ctx, w := cmd.Context(), cmd.OutOrStdout()
			if len(a) == 1 {
				r, err := call(d.api.GetSessionStatusWithResponse(ctx, a[0]))
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(w, r.JSON200)
				}
				return printStatus(w, r.JSON200)
			}
			h, err := call(d.api.GetHealthWithResponse(ctx))
			if err != nil {
				return err
			}
			ag, err := call(d.api.ListAgentsWithResponse(ctx))
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(w, map[string]any{"addr": client.BaseURL(d.addr), "health": json.RawMessage(h.Body), "agents": ag.JSON200.Agents})
			}
			fmt.Fprintf(w, "daemon   %s  %s\n", client.BaseURL(d.addr), strings.TrimSpace(string(h.Body)))
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tNAME\tAVAILABLE")
			for _, p := range ag.JSON200.Agents {
				avail := "yes"
				if !p.Available {
					avail = "no"
					if p.UnavailableReason != nil {
						avail += ": " + shorten(*p.UnavailableReason, 60)
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Id, p.DisplayName, avail)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return c
}

// printStatus writes a session's status as lines of "name value".
func printStatus(w io.Writer, s *client.SessionStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "agent\t%s\n", s.AgentProfileId)
	fmt.Fprintf(tw, "runtime\t%s\n", s.Runtime)
	fmt.Fprintf(tw, "executor\t%s\n", s.ExecutorStatus)
	fmt.Fprintf(tw, "agent running\t%t\n", s.IsAgentRunning)
	fmt.Fprintf(tw, "resumable\t%t\n", s.IsResumable)
	if s.NeedsResume {
		fmt.Fprintf(tw, "needs resume\t%s\n", s.ResumeReason)
	}
	if s.ErrorCode != nil {
		msg := ""
		if s.ErrorMessage != nil {
			msg = *s.ErrorMessage
		}
		fmt.Fprintf(tw, "error\t%s: %s\n", *s.ErrorCode, msg)
	}
	return tw.Flush()
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
