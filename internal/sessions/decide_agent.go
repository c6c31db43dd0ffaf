package sessions

import (
	"encoding/json"
	"fmt"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/session"
)

// The decision table, continued: what the agent reports (a turn's end, an
// exit, a permission request, each session/update) and the actor's own
// inputs (an admission's write reported, the idle clock, what runs next).
// decide.go has the commands, decide_lifecycle.go the agent's start.

// decideTurnEnded records the agent's answer to a prompt as the turn's
// outcome and runs what is queued next.
func decideTurnEnded(v view, in turnEndedInput) decision {
	if v.Running == nil || v.Running.PromptID != in.PromptID || v.Stopping {
		// After a shutdown began, whatever the dying agent answered is not
		// the turn's outcome: start-up reconciliation records it as
		// interrupted by the restart.
		return accept()
	}
	if in.Disconnected {
		// The agent is gone or going; its exit records the outcome with
		// the exit code. Make sure the process really ends.
		return accept(effStopAgent{How: stopRunning})
	}
	if in.SessionLost {
		return decideSessionLost(v, in)
	}
	var end session.EventPayload = completed(in.StopReason)
	switch {
	case v.Running.BudgetStop && !v.Running.CancelRequested:
		// Stopped by a budget: cancelled, whatever the agent answered.
		end = budgetCancelled(v.Running, in.StopReason)
	case v.Running.CancelRequested || in.StopReason == "cancelled":
		// The user's intent wins whatever the agent answered.
		end = cancelled(in.StopReason, v.Running.CancelRequested)
	case in.Failed:
		end = failed(in.ErrorCode, in.ErrorMessage)
	}
	// The end's fold notes the agent seen now, if it is ready.
	d := accept(endTurn(in.PromptID, end)...)
	return accept(append(d.Effects, effAnswerPermissions{PromptID: in.PromptID, State: session.PermissionCancelled},
		effTimer{Timer: timerIdle})...).then(nextInput{})
}

// decideAgentExited handles the agent process ending, expected or not.
func decideAgentExited(v view, in agentExitedInput) decision {
	if v.Stopping {
		// Close or daemon shutdown stopped it on purpose. Close records the
		// stop itself; after a shutdown, start-up reconciliation marks what
		// was running as interrupted by the restart.
		return accept()
	}
	r := v.Running
	interrupted := r != nil && !r.CancelRequested
	// Queued prompts were accepted and nothing was cut, or a resume waits
	// for an agent (the one that exited was being stopped, or had ended
	// on its host): a fresh agent starts for them, in the slot the one
	// that exited held.
	restart := !v.State.Terminal() && (len(v.Queue) > 0 && !v.QueueHeld && !interrupted || v.Waiting)
	d := accept(record("", session.ExecutorStatusOf(exited(v.Executor, in))), effAnswerPermissions{State: session.PermissionExpired})
	if r != nil {
		if r.CancelRequested {
			d.Effects = append(d.Effects, endTurn(r.PromptID, cancelled("", true))...)
		} else if r.BudgetStop {
			// Stopped by a budget (its agent ignored the cancel, or went).
			d.Effects = append(d.Effects, endTurn(r.PromptID, budgetCancelled(r, ""))...)
		} else {
			reason := "agent_exited"
			if in.Lost {
				reason = reasonExecutorLost
			}
			if len(v.Queue) > 0 && !v.QueueHeld && !v.State.Terminal() {
				// What was queued behind the cut turn waits for the user,
				// as after a daemon restart: the interrupted turn stays
				// the one to continue, and no queued prompt reaches an
				// agent that was never told its task was cut. Held before
				// the interruption is written, so the plan it pushes
				// shows the hold.
				d.Effects = append(d.Effects, holdQueue(true))
			}
			// Lost with its host (executor_lost): what the agent goes on
			// sending there is kept, as the turn's late output, if the
			// host comes back (the fold: interruptTurn).
			d.Effects = append(d.Effects, interruption(r.PromptID, reason, in.Exit, in.Cause))
		}
	}
	if restart {
		return d.then(ensureAgentInput{})
	}
	return accept(append(d.Effects, moveTo(v.State, session.SessionWaitingForInput)...)...)
}

// exited is executor ex once its agent ended as in says: stopped with
// its exit, or error when the executor knows a cause.
func exited(ex session.Executor, in agentExitedInput) session.Executor {
	at := in.At
	ex.Status, ex.LastSeenAt = session.ExecutorStopped, &at
	ex.ExitCode, ex.ExitSignal = exitCode(acp.Exit(in.Exit)), in.Exit.Signal
	ex.ErrorMessage, ex.ErrorCode = "agent "+acp.Exit(in.Exit).String(), ""
	if in.Cause.Code != "" {
		ex.Status, ex.ErrorMessage, ex.ErrorCode = session.ExecutorError, in.Cause.Message, in.Cause.Code
	}
	return ex
}

// reasonExecutorLost is the interruption of a turn whose executor host
// stayed unreachable past its deadline (--host-lost-after).
const reasonExecutorLost = "executor_lost"

// reasonSessionLost is the interruption of a turn whose agent lost the
// session it served while its process lived on.
const reasonSessionLost = "agent_session_lost"

// interruption records turn promptID interrupted as it lost its agent
// (turn.interrupted): the process ended (exit; reason agent_exited or
// executor_lost), or the agent lost the session it served
// (reasonSessionLost: it did not exit, and the turn has no exit code).
// cause, when set, is kept as the turn's error. Its notice, the system
// message the write adds, says why: the cause's message when there is
// one, else the exit.
func interruption(promptID, reason string, exit exitInfo, cause causeInfo) effect {
	p := &session.TurnInterruptedData{State: session.TurnInterrupted, Reason: reason, Code: cause.Code, Message: cause.Message,
		Notice: fmt.Sprintf("Turn interrupted: the agent %s.", acp.Exit(exit))}
	if reason != reasonSessionLost {
		p.ExitCode, p.ExitSignal = exitCode(acp.Exit(exit)), exit.Signal
	}
	if cause.Message != "" {
		p.Notice = "Turn interrupted: " + cause.Message + "."
	}
	return record(promptID, p)
}

// decideSessionLost: the agent answered the prompt that it no longer has
// the session (it died inside the agent: claude-agent-acp's Claude Code
// process, killed mid-turn), and will answer every later prompt the same.
// That is an interrupted turn, as if the agent had exited: what is queued
// is held, and the agent is retired so that the next prompt, continue or
// resume restores the session in a new one (resume, load or injection).
func decideSessionLost(v view, in turnEndedInput) decision {
	r := v.Running
	var d decision
	if r.CancelRequested {
		d.Effects = append(d.Effects, endTurn(r.PromptID, cancelled("", true))...)
	} else {
		if len(v.Queue) > 0 && !v.QueueHeld {
			d.Effects = append(d.Effects, holdQueue(true))
		}
		d.Effects = append(d.Effects, interruption(r.PromptID, reasonSessionLost, exitInfo{}, sessionLostCause(in)))
	}
	d.Effects = append(d.Effects, effAnswerPermissions{State: session.PermissionExpired},
		effStopAgent{How: stopRetire, Why: "agent stopped: it lost the session (" + in.ErrorMessage + ")"})
	return accept(append(d.Effects, moveTo(v.State, session.SessionWaitingForInput)...)...)
}

// sessionLostCause is the interrupted turn's error when the agent lost its
// session: the agent's own code, and what it said.
func sessionLostCause(in turnEndedInput) causeInfo {
	return causeInfo{Code: in.ErrorCode,
		Message: "the agent lost its session (" + in.ErrorMessage + "); it is restored when the session is used again"}
}

// decideNext runs the head of the queue if the agent is ready and idle.
func decideNext(v view) decision {
	if v.Running != nil || v.Agent != agentReady || v.Settling || v.Stopping {
		return accept()
	}
	if len(v.Queue) == 0 || v.QueueHeld {
		// Held since a restart: the queue waits for a continue or a prompt.
		return accept(moveTo(v.State, session.SessionWaitingForInput)...)
	}
	if v.Queue[0].Admitting {
		return accept() // not durable yet: admitted runs it once it is
	}
	return accept(effStartTurn{PromptID: v.Queue[0].PromptID})
}

// decidePermissionRequested puts an agent's question to the user, unless
// the session is closing, the turn it belongs to was cancelled, or too
// many are open already (answered cancelled: ACP's answer for a question
// that will not be put to the user; the agent may ask again).
func decidePermissionRequested(v view) decision {
	if v.Stopping {
		return accept(effAskPermission{Declined: true})
	}
	promptID := ""
	if r := v.Running; r != nil {
		if r.CancelRequested {
			return accept(effAskPermission{Declined: true})
		}
		promptID = r.PromptID
	}
	if v.OpenPermissions >= v.MaxPermissions {
		return accept(effAskPermission{Declined: true, TooMany: true})
	}
	return accept(effAskPermission{PromptID: promptID}, effPushRecovery{})
}

// decideAdmitted: a turn's admitting write has reported, and the actor
// has taken its outcome (a turn durable, or forgotten as if never asked:
// admitted, admission.go). A turn still queued may now run: an agent is
// started for it (a failed start or a cancel may have ended it); either
// way what runs next is decided again.
func decideAdmitted(v view, in admittedInput) decision {
	for _, q := range v.Queue {
		if q.PromptID == in.PromptID {
			return accept().then(ensureAgentInput{}, nextInput{})
		}
	}
	return accept().then(nextInput{})
}

// idle: the agent has nothing to do: no turn running or queued, no
// permission open, no start or load in progress.
func (v view) idle() bool {
	return v.Agent == agentReady && !v.Settling && !v.Stopping && v.Running == nil &&
		(len(v.Queue) == 0 || v.QueueHeld) && v.OpenPermissions == 0
}

// decideIdleCheck stops the agent once it has been idle for the timeout,
// else looks again when that time would be up.
func decideIdleCheck(v view, in idleCheckInput) decision {
	if v.Agent != agentReady || v.Stopping {
		return accept() // the next start arms the clock again
	}
	if !v.idle() {
		return accept(effTimer{Timer: timerIdle, After: in.Timeout, Restart: true})
	}
	if left := in.Timeout - in.Elapsed; left > 0 {
		return accept(effTimer{Timer: timerIdle, After: left})
	}
	return accept(effStopAgent{How: stopRetire, Why: "agent stopped: idle for " + in.Timeout.String()})
}

// decideUpdate records one session/update in the transcript. Updates
// outside a turn (available commands, modes, a plan) belong to no prompt.
// Output after its turn ended (cancelled, interrupted, or an agent that
// keeps talking after it answered) is dropped: the turn's outcome is
// final, and it belongs to no turn the user asked for. Storing it would add
// a message without a promptId, or overwrite an interrupted tool call's
// recorded failure.
func decideUpdate(v view, in updateInput) decision {
	if !in.Current {
		return accept() // a previous agent's: stale
	}
	r := v.Running
	if v.Replaying && r == nil && replayedKind(in.Kind) {
		// A session/load replays history already stored: stored nowhere
		// (the load counts it for its settle: onUpdate).
		return decision{Replayed: true}
	}
	switch in.Kind {
	case acp.UpdateAgentMessage, acp.UpdateAgentThought:
		if r == nil || in.Empty {
			return accept()
		}
		role := session.RoleAgent
		if in.Kind == acp.UpdateAgentThought {
			role = session.RoleThought
		}
		// A new message when the agent changed messageId (both ids known),
		// something came between, the role changed, or the turn has none
		// open (its first: the prompt's user message precedes it).
		fresh := r.Split || (in.MessageID != "" && r.MessageID != "" && in.MessageID != r.MessageID)
		if fresh || in.Block || r.OpenMessage == 0 || r.OpenRole != role {
			// Its id is taken as it is folded (record.go), so the chunks
			// that follow name it.
			m := &session.MessageAddedData{Role: role, Text: in.Text, AgentMessageID: in.MessageID, Closes: r.OpenMessage}
			if in.Block {
				m.Text, m.Content = "", json.RawMessage("["+string(in.Content)+"]")
			}
			return accept(record(r.PromptID, m))
		}
		return accept(record(r.PromptID, &session.MessageChunkData{MessageID: r.OpenMessage, Role: role, Text: in.Text, AgentMessageID: in.MessageID}))
	case acp.UpdateToolCall, acp.UpdateToolCallUpdate:
		if r == nil {
			return accept()
		}
		// Its fold ends the running turn's current message first.
		p := toolCallPayload(toolCallRecord("", r.PromptID, in.Tool))
		if in.Kind == acp.UpdateToolCall {
			return accept(record(r.PromptID, &session.ToolCallStartedData{ToolCallData: *p}))
		}
		return accept(record(r.PromptID, p))
	case acp.UpdatePlan:
		// Its fold ends the running turn's current message.
		promptID := ""
		if r != nil {
			promptID = r.PromptID
		}
		return accept(record(promptID, &session.PlanUpdatedData{Entries: in.Data}))
	case acp.UpdateAvailableCommands, acp.UpdateCurrentMode, acp.UpdateConfigOptions:
		if in.Late {
			// Of an agent that is gone: it belongs to no turn.
			return accept()
		}
		return accept(record("", optionsAnnounced(v, in)))
	case acp.UpdateSessionInfo:
		// The agent's title for the session (session_info_update), unless
		// the user named it.
		var info struct {
			Title *string `json:"title"`
		}
		if json.Unmarshal(in.Data, &info) != nil || info.Title == nil || v.closed() {
			return accept()
		}
		return accept(retitle(v, session.CleanTitle(*info.Title), session.TitleAgent)...)
	case acp.UpdateUsage:
		return accept(usageUpdated(v, in.Data)...)
	}
	// user_message_chunk echoes what we already stored.
	return accept()
}

// usageUpdated records one usage_update (an agent's, or the one the
// daemon makes of a prompt's answer's token usage, acp.PromptUsageMeta):
// the report, and the session's and the running turn's usage with it
// taken in. A usage_update's cost is
// the session's total so far (ACP), so the turn's usage takes its context
// window, not its cost. Nothing for a report that says nothing.
func usageUpdated(v view, data json.RawMessage) []effect {
	var u struct {
		Used *int64 `json:"used"`
		Size *int64 `json:"size"`
		Cost *struct {
			Amount   float64 `json:"amount"`
			Currency string  `json:"currency"`
		} `json:"cost"`
		Meta struct {
			// A turn's tokens, from the agent's answer to its prompt
			// (acp.PromptUsageMeta).
			Prompt *struct {
				InputTokens       int64 `json:"inputTokens"`
				OutputTokens      int64 `json:"outputTokens"`
				CachedReadTokens  int64 `json:"cachedReadTokens"`
				CachedWriteTokens int64 `json:"cachedWriteTokens"`
				TotalTokens       int64 `json:"totalTokens"`
			} `json:"tether/promptUsage"`
		} `json:"_meta"`
	}
	if json.Unmarshal(data, &u) != nil {
		return nil
	}
	var r session.Usage
	if t := u.Meta.Prompt; t != nil && t.InputTokens >= 0 && t.OutputTokens >= 0 && t.CachedReadTokens >= 0 && t.CachedWriteTokens >= 0 && t.TotalTokens >= 0 {
		r.InputTokens, r.OutputTokens, r.CachedReadTokens, r.CachedWriteTokens, r.TotalTokens =
			t.InputTokens, t.OutputTokens, t.CachedReadTokens, t.CachedWriteTokens, t.TotalTokens
	}
	if u.Used != nil && u.Size != nil && *u.Used >= 0 && *u.Size > 0 {
		r.ContextUsed, r.ContextSize = *u.Used, *u.Size
	}
	if u.Cost != nil && u.Cost.Currency != "" && u.Cost.Amount >= 0 {
		r.Cost = &session.Cost{Amount: u.Cost.Amount, Currency: u.Cost.Currency}
	}
	if r.IsZero() {
		return nil
	}
	p := &session.UsageUpdatedData{Report: r, Session: v.Usage.Add(r)}
	promptID := ""
	if run := v.Running; run != nil {
		promptID = run.PromptID
		tr := r
		tr.Cost = nil
		t := run.Usage.Add(tr)
		p.Turn = &t
	}
	effs := []effect{record(promptID, p)}
	// A report that reaches the budget stops the running turn; one that
	// comes after a turn changes what the plan allows.
	before, _ := v.Budget.Reached(v.Usage)
	v.Usage = p.Session
	if limit, msg := v.Budget.Reached(v.Usage); limit != "" && v.Running != nil {
		effs = append(effs, budgetStop(v, limit, msg)...)
	} else if limit != "" && before == "" {
		effs = append(effs, effPushRecovery{})
	}
	return effs
}

// optionsAnnounced is the session's options once the agent announced in (its
// commands, its current mode or its config options), as
// session.options_changed tells clients.
func optionsAnnounced(v view, in updateInput) *session.SessionOptionsChangedData {
	commands, mode, modes, config := v.Commands, v.Mode, v.Modes, v.ConfigOptions
	switch in.Kind {
	case acp.UpdateAvailableCommands:
		commands = in.Data
	case acp.UpdateCurrentMode:
		mode = in.Data
		var id string
		if json.Unmarshal(in.Data, &id) == nil {
			modes = acp.WithCurrentMode(modes, id)
		}
	case acp.UpdateConfigOptions:
		config = in.Data
	}
	return &session.SessionOptionsChangedData{CurrentMode: mode, AvailableModes: acp.AvailableModes(modes), ConfigOptions: config, AvailableCommands: commands}
}

// replayedKind: a session/load replays updates of this kind as history.
func replayedKind(k acp.UpdateKind) bool {
	switch k {
	case acp.UpdateAgentMessage, acp.UpdateAgentThought, acp.UpdateUserMessage, acp.UpdateToolCall,
		acp.UpdateToolCallUpdate, acp.UpdatePlan:
		return true
	}
	return false
}
