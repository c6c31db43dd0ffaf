package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether/tether/client"
)

// permissionsCmd lists and answers the agents' permission requests.
func permissionsCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "permissions [SESSION]",
		Short: "List the permission requests waiting for an answer (answer: tether permissions answer)",
		Long: `List the permission requests the agents wait on: SESSION's, or those of
every session that is not over. Answer one with
tether permissions answer SESSION REQUEST OPTION.`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			ids := a
			if len(ids) == 0 {
				if ids, err = d.liveSessions(cmd.Context()); err != nil {
					return err
				}
			}
			var all []client.PermissionRequest
			one := 1
			for _, id := range ids {
				// Pending requests are on every page: the smallest will do.
				r, err := call(d.api.GetTranscriptWithResponse(cmd.Context(), id, &client.GetTranscriptParams{Limit: &one}))
				if err != nil {
					return err
				}
				all = append(all, r.JSON200.PendingPermissions...)
			}
			if asJSON {
				if all == nil {
					all = []client.PermissionRequest{}
				}
				return writeJSON(cmd.OutOrStdout(), all)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tREQUEST\tTITLE\tOPTIONS\tASKED")
			for _, p := range all {
				title := ""
				if p.Title != nil {
					title = shorten(*p.Title, 50)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.SessionId, p.Id, title, optionList(p.Options), ago(time.Now(), p.CreatedAt))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the requests as a JSON array")
	c.AddCommand(answerCmd(g))
	return c
}

// optionList is a request's option ids with their kinds.
func optionList(opts []client.PermissionOption) string {
	s := make([]string, len(opts))
	for i, o := range opts {
		s[i] = o.OptionId
	}
	return strings.Join(s, ",")
}

// liveSessions are the ids of the sessions that are not over.
func (d *conn) liveSessions(ctx context.Context) ([]string, error) {
	states := []client.SessionState{client.SessionStateCREATED, client.SessionStateSTARTING, client.SessionStateRUNNING, client.SessionStateWAITINGFORINPUT}
	var ids []string
	var token *string
	for {
		limit := 200
		r, err := call(d.api.ListSessionsWithResponse(ctx, &client.ListSessionsParams{State: &states, Limit: &limit, PageToken: token}))
		if err != nil {
			return nil, err
		}
		for _, s := range r.JSON200.Sessions {
			ids = append(ids, s.Id)
		}
		if token = r.JSON200.NextPageToken; token == nil || *token == "" {
			return ids, nil
		}
	}
}

// answerCmd answers one permission request.
func answerCmd(g *globals) *cobra.Command {
	var cancel bool
	c := &cobra.Command{
		Use:   "answer SESSION REQUEST [OPTION]",
		Short: "Answer a permission request with one of its options (or --cancel it)",
		Args:  args(2, 3),
		RunE: func(cmd *cobra.Command, a []string) error {
			if cancel == (len(a) == 3) {
				return usagef("give either an OPTION (tether permissions lists them) or --cancel")
			}
			d, err := g.dial()
			if err != nil {
				return err
			}
			return d.answer(cmd.Context(), a[0], a[1], a[2:]...)
		},
	}
	c.Flags().BoolVar(&cancel, "cancel", false, "cancel the request instead of choosing an option")
	return c
}

// answer answers request on session: with option, or cancelled without.
func (d *conn) answer(ctx context.Context, session, request string, option ...string) error {
	var reply client.PermissionReply
	if len(option) == 1 {
		reply.OptionId = &option[0]
	} else {
		o := client.PermissionReplyOutcomeCancelled
		reply.Outcome = &o
	}
	_, err := call(d.api.AnswerPermissionWithResponse(ctx, session, request, reply))
	return err
}
