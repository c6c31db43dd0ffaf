package sessions

import (
	"sort"
	"strings"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/session"
)

// Delivery: whether the agent holds a turn's prompt. Some agents
// (claude-agent-acp, the demo agent) persist a prompt the moment they
// receive it, so a continuation of a turn interrupted before any output
// must not send the prompt again (the model would see one request as two
// user turns), and must send it when the agent never got it.
//
// The record is Turn.DeliveredAt, set once the session/prompt request has
// been handed to the agent (Agent.PromptTurn's sent). Crash windows:
//   - before the write: not delivered, and the agent does not have it;
//     continue sends the prompt.
//   - after the write, before DeliveredAt commits (one pipe write and one
//     SQLite commit): not recorded although the agent may have it. Recording
//     before the write instead would turn this window into a lost prompt
//     (recorded, never received), which is worse than a repeated one.
//   - after the commit: delivered.
//
// A native load that replays the agent's history is better evidence than
// either: after it, the last interrupted turn is delivered exactly when the
// replayed user messages hold its text (reconcileDelivery).

// markDelivered records that r's prompt was written to the agent.
func (a *actor) markDelivered(r *turnRun) {
	if a.running != r || r.turn.DeliveredAt != nil {
		return
	}
	now := time.Now().UTC()
	r.turn.DeliveredAt = &now
	a.turns[r.turn.PromptID] = r.turn
	a.emit(a.deliveredDraft(r.turn))
}

// noteReplay keeps the user messages of a session/load replay, consecutive
// user chunks joined into one message.
func (a *actor) noteReplay(u acp.Update) {
	if u.Kind == acp.UpdateUserMessage {
		if a.replayLast != acp.UpdateUserMessage {
			a.replayUsers = append(a.replayUsers, "")
		}
		a.replayUsers[len(a.replayUsers)-1] += u.Text
	}
	a.replayLast = u.Kind
}

// reconcileDelivery corrects the delivery record of the last turn that ran,
// if it was interrupted, from what a native load replayed.
func (a *actor) reconcileDelivery() {
	if a.replayed == 0 {
		return
	}
	var last *session.Turn
	texts := []string{}
	for _, t := range a.turnsBySeq() {
		if t.State == session.TurnQueued {
			continue
		}
		t := t
		last = &t
		texts = append(texts, promptText(t.Prompt))
	}
	if last == nil || last.State != session.TurnInterrupted {
		return
	}
	held := heldInReplay(texts, a.replayUsers)
	if held == (last.DeliveredAt != nil) {
		return
	}
	t := *last
	t.DeliveredAt = nil
	if held {
		now := time.Now().UTC()
		t.DeliveredAt = &now
	}
	a.log.Info("delivery record corrected from the agent's replayed history", "promptId", t.PromptID, "delivered", held)
	a.turns[t.PromptID] = t
	a.emit(a.deliveredDraft(t))
}

// heldInReplay reports whether the agent's replayed user messages hold the
// last of texts (the prompt texts of the turns that ran, in order): at
// least as many of them contain it as turns up to the last one had it, so
// an earlier identical prompt is not taken for this one.
func heldInReplay(texts []string, replayed []string) bool {
	if len(texts) == 0 {
		return false
	}
	want := strings.TrimSpace(texts[len(texts)-1])
	if want == "" {
		return false
	}
	need := 0
	for _, t := range texts {
		if strings.TrimSpace(t) == want {
			need++
		}
	}
	have := 0
	for _, r := range replayed {
		if strings.Contains(r, want) {
			have++
		}
	}
	return have >= need
}

// turnsBySeq is the session's turns in admission order.
func (a *actor) turnsBySeq() []session.Turn {
	out := make([]session.Turn, 0, len(a.turns))
	for _, t := range a.turns {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}
