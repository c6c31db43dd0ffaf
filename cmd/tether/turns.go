package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/tether/tether/client"
)

// promptCmd sends a prompt to a session (POST /session/{id}/prompt).
func promptCmd(g *globals) *cobra.Command {
	var wait, asJSON bool
	var promptID string
	c := &cobra.Command{
		Use:   "prompt SESSION TEXT...",
		Short: "Send a prompt to a session (it queues behind a running turn)",
		Long: `Send TEXT as a prompt to SESSION. It runs at once, or queues behind the
running turn. Prints the turn's prompt id; with --wait, streams the agent's
reply to stdout and exits when the turn ends (exit 4 unless it completed).
TEXT "-" reads the prompt from stdin.`,
		Args: args(2, -1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			text := strings.Join(a[1:], " ")
			if text == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return err
				}
				text = string(b)
			}
			if strings.TrimSpace(text) == "" {
				return usagef("the prompt is empty")
			}
			if promptID == "" {
				promptID = uuid.NewString()
			}
			r, err := call(d.api.PromptSessionWithResponse(cmd.Context(), a[0], client.PromptRequest{Prompt: textPrompt(text), PromptId: &promptID}))
			if err != nil {
				return err
			}
			acc := promptAccepted(r)
			if err := announce(cmd, asJSON, wait, acc); err != nil {
				return err
			}
			if wait {
				return d.waitTurn(cmd.Context(), a[0], acc.PromptId, acc.Cursor, waitOut(cmd, asJSON))
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&wait, "wait", "w", false, "stream the reply and wait for the turn to end")
	c.Flags().BoolVar(&asJSON, "json", false, "print the accepted turn as JSON (with --wait, the events as JSON lines)")
	c.Flags().StringVar(&promptID, "prompt-id", "", "the turn's id (a retry with the same id is not run twice; default: a new UUID)")
	return c
}

// accepted is an admitted turn: its id and the cursor of its admission.
type accepted struct {
	PromptId string `json:"promptId"`
	Cursor   string `json:"cursor"`
	State    string `json:"state,omitempty"`
}

// promptAccepted is what a prompt's answer (200 or 202) says.
func promptAccepted(r *client.PromptSessionResponse) accepted {
	var acc accepted
	_ = json.Unmarshal(r.Body, &acc)
	return acc
}

// announce prints an admitted turn: its prompt id, or with --json the whole
// of it (unless --wait streams JSON lines instead).
func announce(cmd *cobra.Command, asJSON, wait bool, acc accepted) error {
	switch {
	case asJSON && !wait:
		return writeJSON(cmd.OutOrStdout(), acc)
	case !asJSON && !wait:
		fmt.Fprintln(cmd.OutOrStdout(), acc.PromptId)
	}
	return nil
}

// continueCmd continues a session's interrupted turn (POST
// /session/{id}/continue).
func continueCmd(g *globals) *cobra.Command {
	var wait, asJSON bool
	c := &cobra.Command{
		Use:   "continue SESSION",
		Short: "Continue the session's interrupted turn where it stopped",
		Long: `Continue SESSION's interrupted turn: tetherd restores the agent and asks
it to finish what the interruption cut (docs/continue.md). Prints the new
turn's prompt id; with --wait, streams the reply and waits for its end.`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			id := uuid.NewString()
			r, err := call(d.api.ContinueSessionWithResponse(cmd.Context(), a[0], client.ContinueRequest{PromptId: &id}))
			if err != nil {
				return err
			}
			var acc accepted
			_ = json.Unmarshal(r.Body, &acc)
			if asJSON && !wait {
				_, err := cmd.OutOrStdout().Write(r.Body)
				return err
			}
			if err := announce(cmd, asJSON, wait, acc); err != nil {
				return err
			}
			if wait {
				return d.waitTurn(cmd.Context(), a[0], acc.PromptId, acc.Cursor, waitOut(cmd, asJSON))
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&wait, "wait", "w", false, "stream the reply and wait for the turn to end")
	c.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON (with --wait, the events as JSON lines)")
	return c
}

// cancelCmd cancels a session's running turn, and its queue unless
// --keep-queue.
func cancelCmd(g *globals) *cobra.Command {
	var keep bool
	c := &cobra.Command{
		Use:   "cancel SESSION",
		Short: "Cancel the running turn (queued prompts are dropped, unless --keep-queue)",
		Args:  args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			var p *client.CancelSessionParams
			if keep {
				p = &client.CancelSessionParams{KeepQueue: &keep}
			}
			_, err = call(d.api.CancelSessionWithResponse(cmd.Context(), a[0], p))
			return err
		},
	}
	c.Flags().BoolVar(&keep, "keep-queue", false, "cancel only the running turn: the prompts queued behind it run next")
	return c
}

// turnOut is where waitTurn reports: the reply's text as it streams, or
// every event of the session as a JSON line.
type turnOut struct {
	w     io.Writer
	lines bool
}

// waitOut is how a command that waits reports.
func waitOut(cmd *cobra.Command, asJSON bool) turnOut {
	return turnOut{w: cmd.OutOrStdout(), lines: asJSON}
}

// turnEnd is the terminal event of a turn, as waitTurn reads it.
type turnEnd struct {
	PromptID   string  `json:"promptId"`
	State      string  `json:"state"`
	StopReason *string `json:"stopReason"`
	Code       *string `json:"code"`
	Message    *string `json:"message"`
	Reason     any     `json:"reason"`
}

// waitTurn follows session id's events after cursor until turn promptID
// ends, writing the agent's reply (or every event) to out. A turn that
// did not complete is exit 4.
func (d *conn) waitTurn(ctx context.Context, id, promptID, cursor string, out turnOut) error {
	s := client.SessionStream(d.addr, d.token, id, cursor)
	var end *turnEnd
	var lastMsg int64
	errDone := fmt.Errorf("done")
	err := s.Run(ctx, func(e client.Event) error {
		if out.lines && inLog(e) {
			if err := writeEventLine(out.w, e); err != nil {
				return err
			}
		}
		var base struct {
			PromptID  string `json:"promptId"`
			MessageID int64  `json:"messageId"`
			Role      string `json:"role"`
			Text      string `json:"text"`
		}
		_ = json.Unmarshal(e.Data, &base)
		if base.PromptID != promptID {
			return nil
		}
		switch e.Type {
		case "message.added", "message.chunk":
			if !out.lines && base.Role == "agent" {
				if base.MessageID != lastMsg && lastMsg != 0 {
					fmt.Fprint(out.w, "\n\n") // the agent's next message: a paragraph of its own
				}
				lastMsg = base.MessageID
				fmt.Fprint(out.w, base.Text)
			}
		case "turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted":
			end = &turnEnd{}
			_ = json.Unmarshal(e.Data, end)
			return errDone
		}
		return nil
	})
	if end == nil {
		if err == nil {
			return exitError{exitFailed, "the session closed before the turn ended"}
		}
		return authErr(err)
	}
	if !out.lines {
		fmt.Fprintln(out.w)
	}
	if end.State == "completed" {
		return nil
	}
	why := end.State
	if end.Code != nil {
		why += ": " + *end.Code
	}
	if end.Message != nil {
		why += ": " + *end.Message
	}
	if r, ok := end.Reason.(string); ok && r != "" {
		why += " (" + r + ")"
	}
	return exitError{exitTurn, "the turn ended " + why}
}

// writeEventLine writes e as one JSON line: {"id","type","data"}.
func writeEventLine(w io.Writer, e client.Event) error {
	line := struct {
		ID   string          `json:"id,omitempty"`
		Type string          `json:"type"`
		Data json.RawMessage `json:"data,omitempty"`
	}{e.ID, e.Type, e.Data}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
