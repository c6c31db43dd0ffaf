package session

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// RecoveryKind classifies where a session stands after its last turn (DESIGN.md
// section 6).
type RecoveryKind string

// Recovery kinds.
const (
	// Clean: the last turn has a terminal outcome (a user cancel included).
	RecoveryClean RecoveryKind = "clean"
	// InterruptedPrompt: the last turn was interrupted before the agent
	// produced anything; continuing sends the original prompt again if the
	// agent never received it, else asks it to answer the one it holds.
	RecoveryInterruptedPrompt RecoveryKind = "interrupted_prompt"
	// InterruptedTurn: interrupted after output or tool calls began;
	// continuing tells the agent what was cut off.
	RecoveryInterruptedTurn RecoveryKind = "interrupted_turn"
	// DegradedHistory: the agent's context was lost or the transcript has a
	// gap; explanation only, never continuation.
	RecoveryDegradedHistory RecoveryKind = "degraded_history"
)

// Reasons a session cannot be continued.
const (
	ReasonTurnActive        = "turn_active"
	ReasonTurnQueued        = "turn_queued"
	ReasonPermissionPending = "permission_pending"
	ReasonSessionClosing    = "session_closing"
	ReasonSessionTerminal   = "session_terminal"
	ReasonAgentUnavailable  = "agent_unavailable"
	ReasonNothingToContinue = "nothing_to_continue"
	ReasonHistoryDegraded   = "history_degraded"
	// ReasonBudgetExceeded: the session used its token or cost budget;
	// raising it allows the continuation.
	ReasonBudgetExceeded = BudgetExceeded
)

// PlanInput is everything the planner looks at: the transcript and the live
// state the session actor holds.
type PlanInput struct {
	Turns       []Turn
	Messages    []Message
	ToolCalls   []ToolCall
	Permissions []Permission
	State       SessionState
	// Closing: a close has been admitted and is in progress.
	Closing bool
	// AgentAvailable: the session's agent profile exists and can start.
	AgentAvailable bool
	// ContextLost: the last restore could not give the agent its history.
	ContextLost bool
	// QueueHeld: the queued turns were queued when tetherd restarted; they
	// wait, in order, until the session is continued or prompted, and do not
	// stop a continuation (which runs before them).
	QueueHeld bool
	// Earlier is how many turns come before Turns. A reader may give only
	// the recent turns (every turn from seq Earlier+1 on, and the output
	// of the ones that matter), and checks the rest itself (Gap); zero
	// when Turns, Messages and ToolCalls are the whole transcript.
	Earlier int64
	// Gap is the evidence of a gap (see HistoryGap) the reader found in
	// what it did not give; empty when none.
	Gap string
	// OverBudget is the budget limit the session's usage has reached
	// (Budget.Reached: tokens or cost), "" when none: nothing new runs
	// until the budget is raised.
	OverBudget string
}

// DanglingToolCall is a tool call the interruption cut off.
type DanglingToolCall struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Kind  string `json:"kind"`
}

// Recovery is the recovery plan of a
type Recovery struct {
	Kind        RecoveryKind `json:"kind"`
	CanContinue bool         `json:"canContinue"`
	Reason      string       `json:"reason,omitempty"`
	// PromptID is the turn a continuation would continue.
	PromptID        string `json:"promptId,omitempty"`
	InterruptReason string `json:"interruptReason,omitempty"`
	// PromptDelivered: the interrupted turn's prompt reached the agent
	// (Turn.DeliveredAt), so a continuation must not send it again.
	PromptDelivered   bool               `json:"promptDelivered,omitempty"`
	DanglingToolCalls []DanglingToolCall `json:"danglingToolCalls"`
	// Queued are the prompt ids of the queued turns, in the order they run.
	Queued []string `json:"queuedPromptIds,omitempty"`
	// QueueHeld: the queued turns wait for the user (see Input.QueueHeld).
	QueueHeld bool   `json:"queueHeld,omitempty"`
	Notice    string `json:"notice"`
	// Report is what the interrupted turn got done (nil when the last
	// turn was not interrupted).
	Report *TurnReport `json:"report,omitempty"`
}

// Withdrawn is the stop reason of a queued turn its client withdrew: it
// ended cancelled without ever reaching the agent.
const Withdrawn = "withdrawn"

// Plan is a pure function of its input: the same transcript and live state
// always give the same summary, so admission and display agree.
func Plan(in PlanInput) Recovery {
	s := Recovery{Kind: RecoveryClean, DanglingToolCalls: []DanglingToolCall{}}
	turns := append([]Turn(nil), in.Turns...)
	sort.SliceStable(turns, func(i, j int) bool { return turns[i].Seq < turns[j].Seq })

	active := false
	for i := range turns {
		switch turns[i].State {
		case TurnRunning:
			active = true
		case TurnQueued:
			s.Queued = append(s.Queued, turns[i].PromptID)
		}
	}
	queued := len(s.Queued) > 0
	held := queued && in.QueueHeld && !active
	s.QueueHeld = held
	last := LastRun(turns)
	if last != nil && (last.State == TurnInterrupted && !last.CancelRequested || StoppedByBudget(*last)) {
		s.PromptID = last.PromptID
		s.InterruptReason = last.InterruptReason
		if last.State == TurnCancelled {
			s.InterruptReason = BudgetExceeded
		}
		s.Kind = RecoveryInterruptedPrompt
		s.PromptDelivered = last.DeliveredAt != nil
		if producedOutput(in, last.PromptID) {
			s.Kind, s.PromptDelivered = RecoveryInterruptedTurn, true
		}
		for _, c := range in.ToolCalls {
			if c.PromptID == last.PromptID && dangling(c) {
				s.DanglingToolCalls = append(s.DanglingToolCalls, DanglingToolCall{ID: c.ToolCallID, Title: toolName(c), Kind: c.Kind})
			}
		}
		s.Report = report(in, last)
	}
	if gap := historyGap(turns, in); in.ContextLost || gap != "" {
		s.Kind = RecoveryDegradedHistory
		s.Notice = "The agent lost this conversation's context when it was restored, so it cannot pick up where it left off. Start a new turn with the context it needs, or a new "
		if gap != "" {
			s.Notice = "The transcript has a gap (" + gap + "), so the interrupted work cannot be continued safely. Start a new turn or a new "
		}
	}

	pending := false
	for _, p := range in.Permissions {
		pending = pending || p.State == PermissionPending
	}
	switch {
	case in.State.Terminal():
		s.Reason = ReasonSessionTerminal
	case in.Closing:
		s.Reason = ReasonSessionClosing
	case active:
		s.Reason = ReasonTurnActive
	case queued && !held:
		s.Reason = ReasonTurnQueued
	case pending:
		s.Reason = ReasonPermissionPending
	case s.Kind == RecoveryDegradedHistory:
		s.Reason = ReasonHistoryDegraded
	case s.Kind == RecoveryClean:
		s.Reason = ReasonNothingToContinue
	case in.OverBudget != "":
		s.Reason = ReasonBudgetExceeded
	case !in.AgentAvailable:
		s.Reason = ReasonAgentUnavailable
	default:
		s.CanContinue = true
	}
	if s.Notice == "" {
		s.Notice = notice(s, last != nil)
		if why := blocked(s.Reason); why != "" && s.Kind != RecoveryClean {
			s.Notice += " " + why
		} else if s.Kind == RecoveryClean && why != "" {
			s.Notice = why
		}
		if held {
			s.Notice += " " + heldNotice(s)
		}
	}
	return s
}

// LastRun is the turn a continuation would pick up (turns in seq order;
// nil when none qualifies): the last one that ran,
// or ended without running at the user's word (a cancelled queued turn, so
// a cancel leaves the session clean). Queued and withdrawn turns never ran.
// A continuation runs before the turns held in the queue when it was
// admitted, so a turn with a lower seq may have started after it: among
// turns that started, the one that started last wins.
func LastRun(turns []Turn) *Turn {
	var last *Turn
	for i := len(turns) - 1; i >= 0; i-- {
		if t := &turns[i]; t.State != TurnQueued && !withdrawn(*t) {
			last = t
			break
		}
	}
	if last == nil || last.StartedAt == nil {
		return last
	}
	for i := range turns {
		if t := &turns[i]; t.StartedAt != nil && t.StartedAt.After(*last.StartedAt) && t.State != TurnQueued {
			last = t
		}
	}
	return last
}

// StoppedByBudget reports whether a budget stopped t (it ended cancelled
// with reason budget_exceeded): it can be continued like an interrupted
// turn once the budget allows.
func StoppedByBudget(t Turn) bool {
	return t.State == TurnCancelled && t.ErrorCode == BudgetExceeded
}

func withdrawn(t Turn) bool {
	return t.State == TurnCancelled && t.StopReason == Withdrawn
}

// heldNotice tells the user what happens to prompts held since an
// interruption: a restart of tetherd, or a crash or loss of the agent or
// its executor host, so it names none of them.
func heldNotice(s Recovery) string {
	n, them := "1 prompt queued behind the interrupted turn is waiting", "it"
	if len(s.Queued) > 1 {
		n, them = fmt.Sprintf("%d prompts queued behind the interrupted turn are waiting", len(s.Queued)), "them"
	}
	if s.CanContinue {
		return n + ": Continue runs " + them + " after the continuation, in order; a new prompt instead runs after " + them + ", without continuing. Withdraw any you no longer want."
	}
	return n + ": a new prompt runs " + them + " first, in order, then itself. Withdraw any you no longer want."
}

// blocked explains a non-continuable reason (other than the kind itself).
func blocked(reason string) string {
	switch reason {
	case ReasonTurnActive:
		return "A turn is running now."
	case ReasonTurnQueued:
		return "A prompt is queued; it runs first."
	case ReasonPermissionPending:
		return "The agent is waiting for a permission answer."
	case ReasonSessionClosing:
		return "The session is closing."
	case ReasonSessionTerminal:
		return "The session is closed; start a new session to go on."
	case ReasonAgentUnavailable:
		return "Its agent is not available on this machine, so it cannot be continued here."
	case ReasonBudgetExceeded:
		return "The session used its budget; raise it to go on."
	}
	return ""
}

// producedOutput reports whether the agent said or did anything for a turn.
func producedOutput(in PlanInput, promptID string) bool {
	for _, m := range in.Messages {
		if m.PromptID == promptID && (m.Role == RoleAgent || m.Role == RoleThought) {
			return true
		}
	}
	for _, c := range in.ToolCalls {
		if c.PromptID == promptID {
			return true
		}
	}
	return false
}

// HistoryGap is the evidence that a whole transcript (in, with Earlier
// zero; only Seq and PromptID are looked at) is not the whole story, or
// empty. A reader that gives Plan only the recent turns runs it over ids
// of the whole history and passes its answer as Input.Gap.
func HistoryGap(in PlanInput) string {
	turns := append([]Turn(nil), in.Turns...)
	sort.SliceStable(turns, func(i, j int) bool { return turns[i].Seq < turns[j].Seq })
	return historyGap(turns, in)
}

// historyGap finds evidence that the transcript is not the whole story:
// missing turn numbers, or output attributed to a turn that does not exist.
func historyGap(turns []Turn, in PlanInput) string {
	if in.Gap != "" {
		return in.Gap
	}
	known := make(map[string]bool, len(turns))
	for i, t := range turns {
		known[t.PromptID] = true
		switch {
		case i > 0 && t.Seq == turns[i-1].Seq:
			return fmt.Sprintf("turn %d appears twice", t.Seq)
		case t.Seq != in.Earlier+int64(i+1):
			return fmt.Sprintf("turn %d is missing", in.Earlier+int64(i+1))
		}
	}
	for _, m := range in.Messages {
		if m.PromptID != "" && !known[m.PromptID] {
			return "messages of an unknown turn " + m.PromptID
		}
	}
	for _, c := range in.ToolCalls {
		if c.PromptID != "" && !known[c.PromptID] {
			return "tool calls of an unknown turn " + c.PromptID
		}
	}
	return ""
}

// notice is the sentence for the user; ran tells whether any turn has run
// (a session whose only turns are queued, or that has none, has not).
func notice(s Recovery, ran bool) string {
	switch s.Kind {
	case RecoveryInterruptedPrompt:
		if s.PromptDelivered {
			return "The last prompt was interrupted (" + readable(s.InterruptReason) + ") after the agent received it, before it answered. Continue asks the agent to answer it."
		}
		return "The last prompt was interrupted (" + readable(s.InterruptReason) + ") before the agent received it. Continue sends it again."
	case RecoveryInterruptedTurn:
		n := "The last turn was interrupted (" + readable(s.InterruptReason) + ") while the agent was working."
		if len(s.DanglingToolCalls) > 0 {
			names := make([]string, 0, len(s.DanglingToolCalls))
			for _, d := range s.DanglingToolCalls {
				names = append(names, d.Title)
			}
			n += " Unfinished tool calls were recorded as failed: " + strings.Join(names, ", ") + "."
		}
		return n + " Continue asks the agent to pick up from there."
	}
	if s.PromptID == "" && s.Reason == ReasonNothingToContinue {
		if !ran {
			return "No turn has run yet: nothing to continue."
		}
		return "Nothing to continue: the last turn finished."
	}
	return "Nothing to continue."
}

func readable(reason string) string {
	if reason == "" {
		return "unknown cause"
	}
	return strings.ReplaceAll(reason, "_", " ")
}

// MaxPartialReplyChars bounds the part of the interrupted reply that a
// continuation prompt quotes back to the agent: the last this many
// characters (runes) of what the user saw, marked as cut when longer.
const MaxPartialReplyChars = 2000

// partialCut marks the start of a quoted reply whose beginning was left out.
const partialCut = "[… earlier part of the reply omitted] "

// Continuation is the prompt (a JSON array of ACP content blocks) that
// continues the turn s names: the original prompt when the agent never
// received it, else the continuation prompt, which never repeats the
// user's request. Tools are never replayed by the daemon.
func Continuation(s Recovery, in PlanInput) json.RawMessage {
	if s.Kind == RecoveryInterruptedPrompt && !s.PromptDelivered {
		for _, t := range in.Turns {
			if t.PromptID == s.PromptID && len(t.Prompt) > 0 {
				return t.Prompt
			}
		}
	}
	b, _ := json.Marshal([]map[string]any{{"type": "text", "text": ContinuationPrompt(s, PartialReply(in, s.PromptID))}})
	return b
}

// PartialReply is the text the user saw of a turn's reply: its agent
// messages in order, the last MaxPartialReplyChars of them.
func PartialReply(in PlanInput, promptID string) string {
	var parts []string
	for _, m := range in.Messages {
		if m.PromptID == promptID && m.Role == RoleAgent && strings.TrimSpace(m.Text) != "" {
			parts = append(parts, m.Text)
		}
	}
	r := []rune(strings.Join(parts, "\n"))
	if len(r) <= MaxPartialReplyChars {
		return string(r)
	}
	return partialCut + string(r[len(r)-MaxPartialReplyChars:])
}

// ContinuationPrompt is the text the agent receives to continue an
// interrupted turn: what the user saw of its reply (partial, from
// PartialReply), which tool calls were cut off and their synthetic
// failures, and the request to go on. Agents differ in what they keep of
// an interrupted reply (Claude Code replaces it with "No response
// requested."), so the prompt says it. A prompt the agent received but did
// not answer is not repeated: it is asked to answer the one it holds.
func ContinuationPrompt(s Recovery, partial string) string {
	var b strings.Builder
	if s.Kind == RecoveryInterruptedPrompt {
		fmt.Fprintf(&b, "Your previous turn was interrupted (%s) before you answered. ", readable(s.InterruptReason))
		b.WriteString("The request you were answering is already in this conversation and is not repeated here. Answer it now.")
		return b.String()
	}
	fmt.Fprintf(&b, "Your previous turn was interrupted (%s) before it finished.\n", readable(s.InterruptReason))
	if partial != "" {
		b.WriteString("Before the interruption the user saw this much of your reply:\n<partial-reply>\n")
		b.WriteString(partial)
		b.WriteString("\n</partial-reply>\n")
	}
	if len(s.DanglingToolCalls) > 0 {
		b.WriteString("These tool calls did not complete; their results were recorded as failures:\n")
		for _, d := range s.DanglingToolCalls {
			fmt.Fprintf(&b, "- %s (%s, id %s): %s: interrupted by %s. Treat as failure.\n", d.Title, d.Kind, d.ID, InterruptedToolResult, readable(s.InterruptReason))
		}
	}
	writeReport(&b, s.Report)
	b.WriteString("Continue the task from where you left off. Do not assume interrupted tool calls succeeded, and do not repeat work that was already completed.")
	return b.String()
}
