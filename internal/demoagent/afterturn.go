package demoagent

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Output that is not the turn's reply: what comes after the answer
// (/late) and notifications that change nothing in the transcript
// (/usage). A client must drop the one and may ignore the other, and
// neither may upset its bookkeeping.

// lateDelay lets the client read a turn's response before /late sends
// output that belongs to no turn.
const lateDelay = 100 * time.Millisecond

// late misbehaves as an agent whose output outlives its turn (a cancelled
// or cut-off turn's leftovers): N chunks after the prompt was answered,
// then a plan "late output sent" so a client can tell they are all out. It
// ends once they are sent or the connection is gone.
func (t *turn) late(n int) {
	time.Sleep(lateDelay)
	for i := 1; i <= n; i++ {
		if t.a.emit(t.s, t.sid, acp.UpdateAgentMessageText(fmt.Sprintf("late %d\n", i))) != nil {
			return
		}
	}
	_ = t.a.emit(t.s, t.sid, acp.UpdatePlan(acp.PlanEntry{Content: "late output sent",
		Priority: acp.PlanEntryPriorityLow, Status: acp.PlanEntryStatusCompleted}))
}

// usage implements /usage N [late]: one chunk, then N usage_update
// notifications (context used of size and the cost so far, as
// claude-agent-acp sends them), the last thing of the turn before its
// answer or, with late, after it. They change nothing in the transcript
// (the daemon records them as usage.updated), and a daemon that
// acknowledged them to an executor host without committing their
// offsets lost track of where its stream stood (issue 28). Usage is not
// history: a load does not replay it.
func (t *turn) usage(arg string) error {
	f := strings.Fields(arg)
	n, err := 0, error(nil)
	if len(f) > 0 {
		n, err = strconv.Atoi(f[0])
	}
	late := len(f) == 2 && f[1] == "late"
	if len(f) == 0 || len(f) > 2 || (len(f) == 2 && !late) || err != nil || n < 0 {
		return t.say("usage: /usage N [late]")
	}
	if err := t.say(fmt.Sprintf("sending %d usage updates\n", n)); err != nil {
		return err
	}
	// The answer reports the turn's tokens too, as claude-agent-acp's.
	cached := 5 * n
	t.tokens = &acp.Usage{InputTokens: 100 * n, OutputTokens: 10 * n, CachedReadTokens: &cached, TotalTokens: 110 * n}
	send := func() error {
		for i := 1; i <= n; i++ {
			// The cost, as claude-agent-acp's, is the session's total so far.
			raw := fmt.Sprintf(`{"sessionUpdate":"usage_update","used":%d,"size":200000,"cost":{"amount":%g,"currency":"USD"}}`, 1000*i, 0.01*float64(i))
			if err := t.a.writeRawUpdate(t.sid, json.RawMessage(raw)); err != nil {
				return err
			}
		}
		return nil
	}
	if late {
		go func() {
			time.Sleep(lateDelay)
			_ = send()
		}()
		return nil
	}
	return send()
}

// loopTokens is what each /loop step reports it used: 100 in, 20 out.
const loopTokens = 120

// loop implements /loop N [MS]: an agent that keeps working (a model
// that loops), N steps (0: until cancelled) MS milliseconds apart (20
// by default), each a chunk "step i" and what the step used as it goes:
// its tokens as qwen reports each model call's (an empty chunk with
// _meta.usage), and the session's cost so far as claude-agent-acp does
// (usage_update), 0.01 USD a step. What stops it is a cancel: the
// budgets' test (a token budget stops a looping turn).
func (t *turn) loop(arg string) error {
	f := strings.Fields(arg)
	n, err := strconv.Atoi(first(f))
	ms := 20
	if err == nil && len(f) == 2 {
		ms, err = strconv.Atoi(f[1])
	}
	if err != nil || n < 0 || ms < 0 || len(f) > 2 {
		return t.say("usage: /loop N [MS]")
	}
	for i := 1; n == 0 || i <= n; i++ {
		if err := t.interrupted(); err != nil {
			return err
		}
		if err := t.say(fmt.Sprintf("step %d\n", i)); err != nil {
			return err
		}
		tokens := fmt.Sprintf(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"_meta":{"usage":{"inputTokens":100,"outputTokens":20,"totalTokens":%d}}}`, loopTokens)
		if err := t.a.writeRawUpdate(t.sid, json.RawMessage(tokens)); err != nil {
			return err
		}
		t.s.mu.Lock()
		t.s.cost += 0.01
		cost := t.s.cost
		t.s.mu.Unlock()
		if err := t.a.writeRawUpdate(t.sid, json.RawMessage(fmt.Sprintf(`{"sessionUpdate":"usage_update","used":%d,"size":200000,"cost":{"amount":%.2f,"currency":"USD"}}`, 1000*i, cost))); err != nil {
			return err
		}
		if err := t.pause(time.Duration(ms) * time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}
