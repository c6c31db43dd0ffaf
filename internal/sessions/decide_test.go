package sessions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// The decision table's tests: every command in every session state, every
// agent input in the states it can arrive in, and the edge cases of each.
// decide is pure, so these need no store, no agent and no clock.

var allStates = []session.SessionState{session.SessionCreated, session.SessionStarting, session.SessionRunning,
	session.SessionWaitingForInput, session.SessionCompleted, session.SessionFailed, session.SessionCancelled}

// inState is a typical session in state s: CREATED has no agent yet,
// STARTING an agent starting, RUNNING turn p1 on a ready agent,
// WAITING_FOR_INPUT a ready idle agent after p0; terminal sessions have no
// agent and ended p0.
func inState(s session.SessionState) view {
	v := view{State: s, QueueLimit: 3, Version: 7}
	ended := &turnView{PromptID: "p0", State: session.TurnCompleted, Kind: session.TurnPrompt}
	switch s {
	case session.SessionCreated:
	case session.SessionStarting:
		v.Agent, v.HasSlot = agentStarting, true
	case session.SessionRunning:
		v.Agent, v.HasSlot, v.Connected = agentReady, true, true
		v.Running = &runningView{PromptID: "p1"}
		v.Last = &turnView{PromptID: "p1", State: session.TurnRunning, Kind: session.TurnPrompt}
	case session.SessionWaitingForInput:
		v.Agent, v.HasSlot, v.Connected = agentReady, true, true
		v.Last = ended
	default:
		v.Last = ended
	}
	return v
}

// with is v changed by f. f changes a deep copy: views hold pointers and
// slices, which the cases share.
func with(v view, f func(*view)) view {
	v.Queue = append([]queuedView(nil), v.Queue...)
	v.Running = clone(v.Running)
	v.Last, v.Turn = clone(v.Last), clone(v.Turn)
	v.Permission = clone(v.Permission)
	f(&v)
	return v
}

func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

func queued(ids ...string) []queuedView {
	out := make([]queuedView, len(ids))
	for i, id := range ids {
		out[i] = queuedView{PromptID: id}
	}
	return out
}

func refused(code errcode.Code, details map[string]any) decision {
	return decision{Refusal: &errcode.Error{Code: code, Details: details}}
}

func accepted(effs ...effect) decision { return decision{Effects: effs} }

// The executor records a decision makes (effRecord of
// session.executor_status, from the view's executor, zero in these
// tables), and the stop of the previous daemon's agent process before one.
func stopped(why string) effect {
	return effRecord{Event: &session.ExecutorStatusData{Status: session.ExecutorStopped, Error: why}}
}

var (
	reconnectingExec effect = effRecord{Event: &session.ExecutorStatusData{Status: session.ExecutorReconnecting}}
	orphan           effect = effStopAgent{How: stopOrphaned}
)

// The events a decision records (effRecord), spelled out.

// stateChange records the session's move from state from to state to.
func stateChange(from, to session.SessionState) effect {
	return effRecord{Event: &session.SessionStateChangedData{State: to, PreviousState: from}}
}

// toWaiting is stateChange to WAITING_FOR_INPUT, as a list: none when the
// session waits already.
func toWaiting(from session.SessionState) []effect {
	if from == session.SessionWaitingForInput {
		return nil
	}
	return []effect{stateChange(from, session.SessionWaitingForInput)}
}

// queueHeld records the queue held (or let go).
func queueHeld(held bool) effect { return effRecord{Event: &session.SessionQueueHeldData{Held: held}} }

// cancelRequested records the user's cancel of turn promptID.
func cancelRequested(promptID string) effect {
	return effRecord{Event: &session.TurnCancelRequestedData{EventCommon: session.EventCommon{PromptID: promptID}}}
}

// resolved records permission request id closed in state st.
func resolved(id string, st session.PermissionState, optionID string) effect {
	return effRecord{Event: &session.PermissionResolvedData{RequestID: id, State: st, OptionID: optionID}}
}

// turnEnd is the end of turn id, recorded as its terminal event p, and the
// plan pushed after it; endCompleted, endFailed, endCancelled and
// endWithdrawn are the four ends.
func turnEnd(id string, p session.EventPayload) []effect {
	p.Base().PromptID = id
	return []effect{effRecord{Event: p}, effPushRecovery{}}
}

func endCompleted(id, stopReason string) []effect {
	return turnEnd(id, &session.TurnCompletedData{State: session.TurnCompleted, StopReason: stopReason})
}

func endFailed(id, code, message string) []effect {
	return turnEnd(id, &session.TurnFailedData{State: session.TurnFailed, Code: code, Message: message})
}

func endCancelled(id, stopReason string, requested bool) []effect {
	return turnEnd(id, &session.TurnCancelledData{State: session.TurnCancelled, StopReason: stopReason, CancelRequested: requested})
}

func endWithdrawn(id string) []effect {
	return turnEnd(id, &session.TurnCancelledData{State: session.TurnCancelled, StopReason: session.Withdrawn, Reason: session.Withdrawn})
}

// lostOutcome records turn id, which the store shows running with no live
// run, failed: its outcome was lost (no plan is pushed for it alone).
// interruptedTurn is the record of turn id's interruption for reason,
// with the exit code (nil: none), the cause and the notice, as decide words
// it.
func interruptedTurn(id, reason string, exitCode *int, signal string, cause causeInfo, notice string) effect {
	return effRecord{Event: &session.TurnInterruptedData{EventCommon: session.EventCommon{PromptID: id}, State: session.TurnInterrupted,
		Reason: reason, ExitCode: exitCode, ExitSignal: signal, Code: cause.Code, Message: cause.Message, Notice: notice}}
}

func lostOutcome(id string) effect {
	return effRecord{Event: &session.TurnFailedData{EventCommon: session.EventCommon{PromptID: id}, State: session.TurnFailed,
		Code: "store_write_failed", Message: "the turn's outcome could not be stored; see the daemon log"}}
}

// flat lists effects and lists of effects as one list.
func flat(parts ...any) []effect {
	var out []effect
	for _, p := range parts {
		switch p := p.(type) {
		case effect:
			out = append(out, p)
		case []effect:
			out = append(out, p...)
		default:
			panic(fmt.Sprintf("flat: %T is not an effect", p))
		}
	}
	return out
}

// acc is accepted with the effects flat lists.
func acc(parts ...any) decision { return accepted(flat(parts...)...) }

// resumedAs records how a start restored the session.
func resumedAs(r resumedInfo) effect {
	return effRecord{Event: &session.SessionResumedData{Strategy: r.Strategy, ContextRestored: r.ContextRestored, FallbackReason: r.Fallback}}
}

func terminalRefusal(s session.SessionState) decision {
	return refused(errcode.SessionTerminal, map[string]any{"state": string(s)})
}

// decideCase is one row of the table.
type decideCase struct {
	name string
	v    view
	in   input
	want decision
}

// perState makes one case per session state, named cmd/STATE, from the
// typical view of each state (changed by prep, if set) and the wanted
// decision for each.
func perState(cmd string, in input, prep func(*view), want map[session.SessionState]decision) []decideCase {
	var out []decideCase
	for _, s := range allStates {
		w, ok := want[s]
		if !ok {
			panic(fmt.Sprintf("%s: no wanted decision for %s", cmd, s))
		}
		v := inState(s)
		if prep != nil {
			prep(&v)
		}
		out = append(out, decideCase{name: cmd + "/" + string(s), v: v, in: in, want: w})
	}
	return out
}

// terminalStates adds the same wanted decision for the three terminal states.
func terminalStates(want map[session.SessionState]decision, d func(session.SessionState) decision) map[session.SessionState]decision {
	for _, s := range []session.SessionState{session.SessionCompleted, session.SessionFailed, session.SessionCancelled} {
		want[s] = d(s)
	}
	return want
}

func runDecideCases(t *testing.T, cases []decideCase) {
	t.Helper()
	runNamed(t, cases, func(c decideCase) string { return c.name }, func(t *testing.T, c decideCase) {
		checkDecision(t, decide(c.v, c.in), c.want)
	})
}

// runNamed runs each case as a subtest of its name; a name used twice is
// a mistake in the table (the second case would hide behind the first).
func runNamed[C any](t *testing.T, cases []C, name func(C) string, run func(*testing.T, C)) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		n := name(c)
		if seen[n] {
			t.Fatalf("case name %q used twice", n)
		}
		seen[n] = true
		t.Run(n, func(t *testing.T) { run(t, c) })
	}
}

// checkDecision compares refusals by code and details (messages are for
// people), effects and the cancel answer exactly.
func checkDecision(t *testing.T, got, want decision) {
	t.Helper()
	switch {
	case (got.Refusal == nil) != (want.Refusal == nil):
		t.Fatalf("got refusal %v, want %v", got.Refusal, want.Refusal)
	case got.Refusal != nil && (got.Refusal.Code != want.Refusal.Code || !reflect.DeepEqual(got.Refusal.Details, want.Refusal.Details)):
		t.Fatalf("got refusal %s %v, want %s %v", got.Refusal.Code, got.Refusal.Details, want.Refusal.Code, want.Refusal.Details)
	}
	if !reflect.DeepEqual(got.Effects, want.Effects) {
		t.Fatalf("got effects\n\t%#v\nwant\n\t%#v", got.Effects, want.Effects)
	}
	if !reflect.DeepEqual(got.Then, want.Then) {
		t.Fatalf("got then %#v, want %#v", got.Then, want.Then)
	}
	if !reflect.DeepEqual(got.Cancel, want.Cancel) {
		t.Fatalf("got cancel %+v, want %+v", got.Cancel, want.Cancel)
	}
	if got.Replayed != want.Replayed {
		t.Fatalf("got replayed %v, want %v", got.Replayed, want.Replayed)
	}
}

func TestDecidePrompt(t *testing.T) {
	in := promptCmd{PromptID: "p9", Multitask: MultitaskEnqueue}
	reject := promptCmd{PromptID: "p9", Multitask: MultitaskReject}
	enqueue := accepted(effAdmit{})
	cases := perState("prompt", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         accepted(effAdmit{Reserve: true}),
		session.SessionStarting:        enqueue,
		session.SessionRunning:         enqueue,
		session.SessionWaitingForInput: enqueue,
	}, terminalRefusal))
	cases = append(cases, perState("prompt reject", reject, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         accepted(effAdmit{Reserve: true}),
		session.SessionStarting:        enqueue,
		session.SessionRunning:         refused(errcode.TurnActive, map[string]any{"promptId": "p1"}),
		session.SessionWaitingForInput: enqueue,
	}, terminalRefusal))...)
	repeat := func(samePrompt, admitting bool) func(*view) {
		return func(v *view) {
			v.Turn = &turnView{PromptID: "p9", State: session.TurnQueued, SamePrompt: samePrompt, Admitting: admitting}
		}
	}
	// A repeated prompt id answers with its turn in every state, closed or not.
	cases = append(cases, perState("prompt repeated", in, repeat(true, false), terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         accepted(effAdmit{Existing: "p9"}),
		session.SessionStarting:        accepted(effAdmit{Existing: "p9"}),
		session.SessionRunning:         accepted(effAdmit{Existing: "p9"}),
		session.SessionWaitingForInput: accepted(effAdmit{Existing: "p9"}),
	}, func(session.SessionState) decision { return accepted(effAdmit{Existing: "p9"}) }))...)
	conflict := refused(errcode.PromptIDConflict, nil)
	cases = append(cases, perState("prompt id conflict", in, repeat(false, false), terminalStates(map[session.SessionState]decision{
		session.SessionCreated: conflict, session.SessionStarting: conflict, session.SessionRunning: conflict, session.SessionWaitingForInput: conflict,
	}, func(session.SessionState) decision { return conflict }))...)
	waiting := inState(session.SessionWaitingForInput)
	cases = append(cases, []decideCase{
		{"prompt repeated while admitting", with(waiting, repeat(true, true)), in, accepted(effAdmit{Existing: "p9", Admitting: true})},
		{"prompt while stopping", with(waiting, func(v *view) { v.Stopping = true }), in, terminalRefusal(session.SessionWaitingForInput)},
		{"prompt queue full", with(inState(session.SessionRunning), func(v *view) { v.Queue = queued("q1", "q2", "q3") }), in,
			refused(errcode.PromptQueueFull, map[string]any{"retryAfter": 5})},
		{"prompt queue below limit", with(inState(session.SessionRunning), func(v *view) { v.Queue = queued("q1", "q2") }), in, enqueue},
		{"prompt reject behind a queue", with(waiting, func(v *view) { v.Queue = queued("q1") }), reject,
			refused(errcode.TurnActive, map[string]any{"promptId": "q1"})},
		{"prompt with a block the agent does not take", waiting, promptCmd{PromptID: "p9", Unsupported: "image"},
			refused(errcode.PromptContentUnsupported, map[string]any{"blockType": "image"})},
		{"prompt with a reserved slot", with(inState(session.SessionCreated), func(v *view) { v.HasSlot = true }), in, enqueue},
		{"prompt after an idle stop", with(waiting, func(v *view) { v.Agent, v.HasSlot, v.Connected = agentNone, false, false }), in,
			accepted(effAdmit{Reserve: true})},
	}...)
	runDecideCases(t, cases)
}

func TestDecideCancel(t *testing.T) {
	in := cancelCmd{}
	none := accepted()
	cases := perState("cancel", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:  none,
		session.SessionStarting: none,
		session.SessionRunning: {Effects: []effect{cancelRequested("p1"),
			effAnswerPermissions{PromptID: "p1", State: session.PermissionCancelled}, effCancelAgent{}},
			Cancel: CancelResult{PromptID: "p1", Cancelled: true}},
		session.SessionWaitingForInput: none,
	}, func(session.SessionState) decision { return none }))
	endQueued := func(id string) []effect { return endCancelled(id, "", true) }
	cases = append(cases, perState("cancel with a queue", in, func(v *view) { v.Queue = queued("q1", "q2") },
		terminalStates(map[session.SessionState]decision{
			session.SessionCreated:  {Effects: flat(endQueued("q1"), endQueued("q2")), Cancel: CancelResult{Cancelled: true, Dequeued: []string{"q1", "q2"}}},
			session.SessionStarting: {Effects: flat(endQueued("q1"), endQueued("q2")), Cancel: CancelResult{Cancelled: true, Dequeued: []string{"q1", "q2"}}},
			session.SessionRunning: {Effects: flat(endQueued("q1"), endQueued("q2"), cancelRequested("p1"),
				effAnswerPermissions{PromptID: "p1", State: session.PermissionCancelled}, effCancelAgent{}),
				Cancel: CancelResult{PromptID: "p1", Cancelled: true, Dequeued: []string{"q1", "q2"}}},
			session.SessionWaitingForInput: {Effects: flat(endQueued("q1"), endQueued("q2")), Cancel: CancelResult{Cancelled: true, Dequeued: []string{"q1", "q2"}}},
		}, func(session.SessionState) decision { return none }))...)
	interrupted := func(v *view) {
		v.Last = &turnView{PromptID: "p0", State: session.TurnInterrupted, Kind: session.TurnPrompt}
	}
	markLast := decision{Effects: []effect{cancelRequested("p0"), effPushRecovery{}}, Cancel: CancelResult{PromptID: "p0", Cancelled: true}}
	waiting := inState(session.SessionWaitingForInput)
	running := inState(session.SessionRunning)
	cases = append(cases, []decideCase{
		{"cancel idle after an interrupted turn", with(waiting, interrupted), in, markLast},
		// Nothing is recorded on a closed session (it used to mark the
		// turn and answer cancelled: TestCancelAfterCloseLeavesTheLogClosed).
		{"cancel closed after an interrupted turn", with(inState(session.SessionCompleted), interrupted), in, none},
		{"cancel idle after an interrupted turn already cancelled", with(waiting, func(v *view) {
			interrupted(v)
			v.Last.CancelRequested = true
		}), in, none},
		{"cancel held queue after an interrupted turn", with(waiting, func(v *view) {
			interrupted(v)
			v.Queue, v.QueueHeld = queued("q1"), true
		}), in, decision{Effects: flat(endQueued("q1"), queueHeld(false), effPushRecovery{}),
			Cancel: CancelResult{Cancelled: true, Dequeued: []string{"q1"}}}},
		{"cancel running twice", with(running, func(v *view) { v.Running = &runningView{PromptID: "p1", CancelRequested: true} }), in,
			decision{Cancel: CancelResult{PromptID: "p1", Cancelled: true}}},
		// KeepQueue stops the running turn only: nothing queued is ended.
		{"cancel keeping the queue", with(running, func(v *view) {
			v.Running = &runningView{PromptID: "p1"}
			v.Queue = queued("q1", "q2")
		}), cancelCmd{KeepQueue: true}, decision{Effects: []effect{cancelRequested("p1"),
			effAnswerPermissions{PromptID: "p1", State: session.PermissionCancelled}, effCancelAgent{}},
			Cancel: CancelResult{PromptID: "p1", Cancelled: true}}},
		{"cancel keeping a held queue after an interrupted turn", with(waiting, func(v *view) {
			interrupted(v)
			v.Queue, v.QueueHeld = queued("q1"), true
		}), cancelCmd{KeepQueue: true}, markLast},
	}...)
	runDecideCases(t, cases)
}

func TestDecideClose(t *testing.T) {
	in := closeCmd{}
	tailIn := func(s session.SessionState) []effect {
		return []effect{effAnswerPermissions{State: session.PermissionCancelled}, stateChange(s, session.SessionCompleted), effPushRecovery{}}
	}
	tail := tailIn(session.SessionRunning)
	idleIn := func(s session.SessionState) decision {
		return accepted(append([]effect{effStopAgent{How: stopClosing}}, tailIn(s)...)...)
	}
	cases := perState("close", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         idleIn(session.SessionCreated),
		session.SessionStarting:        idleIn(session.SessionStarting),
		session.SessionRunning:         acc(effStopAgent{How: stopClosing}, endCancelled("p1", "", true), tail),
		session.SessionWaitingForInput: idleIn(session.SessionWaitingForInput),
	}, func(session.SessionState) decision { return accepted() }))
	cases = append(cases, decideCase{"close running with a queue", with(inState(session.SessionRunning), func(v *view) { v.Queue = queued("q1") }), in,
		acc(effStopAgent{How: stopClosing}, endCancelled("q1", "", true), endCancelled("p1", "", true), tail)})
	cases = append(cases, decideCase{"close while a shutdown stops", with(inState(session.SessionWaitingForInput), func(v *view) { v.Stopping = true }), in, idleIn(session.SessionWaitingForInput)})
	runDecideCases(t, cases)
}

func TestDecideContinue(t *testing.T) {
	plan := session.Recovery{Kind: session.RecoveryInterruptedTurn, CanContinue: true, PromptID: "p0"}
	in := continueCmd{PromptID: "c1", Version: 7, Plan: plan}
	stale := decision{Refusal: errStale}
	front := accepted(effAdmit{Front: true})
	cases := perState("continue", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         accepted(effAdmit{Front: true, Reserve: true}),
		session.SessionStarting:        front,
		session.SessionRunning:         stale,
		session.SessionWaitingForInput: front,
	}, func(session.SessionState) decision { return stale }))
	waiting := inState(session.SessionWaitingForInput)
	cases = append(cases, []decideCase{
		{"continue ahead of a held queue", with(waiting, func(v *view) { v.Queue, v.QueueHeld = queued("q1"), true }), in, front},
		{"continue behind a queue", with(waiting, func(v *view) { v.Queue = queued("q1") }), in, stale},
		{"continue planned on an older version", waiting, continueCmd{PromptID: "c1", Version: 6, Plan: plan}, stale},
		{"continue with a prompt id already admitted", with(waiting, func(v *view) {
			v.Turn = &turnView{PromptID: "c1", State: session.TurnQueued, Kind: session.TurnContinue}
		}), in, stale},
		{"continue while stopping", with(waiting, func(v *view) { v.Stopping = true }), in, stale},
	}...)
	// The plan's answer comes first, in every state: nothing to continue
	// declines before anything about the live session.
	nothing := session.Recovery{Kind: session.RecoveryClean, Reason: session.ReasonNothingToContinue}
	declined := refused(errcode.Code(session.ReasonNothingToContinue),
		map[string]any{"accepted": false, "reason": session.ReasonNothingToContinue, "recovery": nothing})
	cases = append(cases, perState("continue declined", continueCmd{PromptID: "c1", Version: 7, Plan: nothing}, nil,
		terminalStates(map[session.SessionState]decision{
			session.SessionCreated: declined, session.SessionStarting: declined, session.SessionRunning: declined, session.SessionWaitingForInput: declined,
		}, func(session.SessionState) decision { return declined }))...)
	runDecideCases(t, cases)
}

func TestDecideWithdraw(t *testing.T) {
	in := withdrawCmd{PromptID: "q2"}
	withdrawn := endWithdrawn("q2")
	ok := acc(withdrawn).then(nextInput{})
	queuedQ2 := func(v *view) {
		if !v.State.Terminal() {
			v.Queue = queued("q1", "q2")
			v.Turn = &turnView{PromptID: "q2", State: session.TurnQueued, Kind: session.TurnPrompt}
			return
		}
		// A close cancelled it.
		v.Turn = &turnView{PromptID: "q2", State: session.TurnCancelled, Kind: session.TurnPrompt, CancelRequested: true}
	}
	cases := perState("withdraw", in, queuedQ2, terminalStates(map[session.SessionState]decision{
		session.SessionCreated: ok, session.SessionStarting: ok, session.SessionRunning: ok, session.SessionWaitingForInput: ok,
	}, func(session.SessionState) decision {
		return refused(errcode.TurnNotQueued, map[string]any{"promptId": "q2", "state": "cancelled"})
	}))
	notFound := refused(errcode.TurnNotFound, map[string]any{"promptId": "q2"})
	cases = append(cases, perState("withdraw unknown", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated: notFound, session.SessionStarting: notFound, session.SessionRunning: notFound, session.SessionWaitingForInput: notFound,
	}, func(session.SessionState) decision { return notFound }))...)
	running := inState(session.SessionRunning)
	waiting := inState(session.SessionWaitingForInput)
	cases = append(cases, []decideCase{
		{"withdraw the running turn", with(running, func(v *view) { v.Turn = &turnView{PromptID: "p1", State: session.TurnRunning} }),
			withdrawCmd{PromptID: "p1"}, refused(errcode.TurnNotQueued, map[string]any{"promptId": "p1", "state": "running"})},
		{"withdraw an ended turn", with(waiting, func(v *view) { v.Turn = v.Last }),
			withdrawCmd{PromptID: "p0"}, refused(errcode.TurnNotQueued, map[string]any{"promptId": "p0", "state": "completed"})},
		{"withdraw the last of a held queue", with(waiting, func(v *view) {
			v.Queue, v.QueueHeld = queued("q2"), true
			v.Turn = &turnView{PromptID: "q2", State: session.TurnQueued}
		}), in, acc(withdrawn, queueHeld(false), effPushRecovery{}).then(nextInput{})},
		{"withdraw one of a held queue", with(waiting, func(v *view) {
			queuedQ2(v)
			v.QueueHeld = true
		}), in, ok},
	}...)
	runDecideCases(t, cases)
}

const testModes = `{"availableModes":[{"id":"ask"},{"id":"code"}],"currentModeId":"ask"}`
const testConfig = `[{"id":"model","type":"select","currentValue":"fast","options":[{"value":"fast"},{"value":"smart"}]},{"id":"yolo","type":"boolean","currentValue":false}]`

// announced: a ready agent announced its modes and config options.
func announced(v *view) {
	if v.Agent == agentReady {
		v.Modes, v.ConfigOptions = json.RawMessage(testModes), json.RawMessage(testConfig)
	}
}

func TestDecideSetMode(t *testing.T) {
	in := setModeCmd{ModeID: "code"}
	cases := perState("set mode", in, announced, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         accepted(effSetOption{}),
		session.SessionStarting:        accepted(effSetOption{}),
		session.SessionRunning:         accepted(effSetOption{Now: true}),
		session.SessionWaitingForInput: accepted(effSetOption{Now: true}),
	}, terminalRefusal))
	unknown := refused(errcode.UnknownMode, map[string]any{"modeId": "plan"})
	waiting := inState(session.SessionWaitingForInput)
	cases = append(cases, []decideCase{
		{"set mode not offered", with(waiting, announced), setModeCmd{ModeID: "plan"}, unknown},
		{"set mode on an agent that announced none", waiting, setModeCmd{ModeID: "plan"}, unknown},
		{"set mode not offered by the stopped agent", with(waiting, func(v *view) {
			announced(v)
			v.Agent, v.Connected = agentNone, false
		}), setModeCmd{ModeID: "plan"}, unknown},
		{"set mode while stopping", with(waiting, func(v *view) { v.Stopping = true }), in, terminalRefusal(session.SessionWaitingForInput)},
	}...)
	runDecideCases(t, cases)
}

func TestDecideSetConfigOption(t *testing.T) {
	in := setConfigCmd{OptionID: "model", Value: json.RawMessage(`"smart"`)}
	cases := perState("set config", in, announced, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         accepted(effSetOption{}),
		session.SessionStarting:        accepted(effSetOption{}),
		session.SessionRunning:         accepted(effSetOption{Now: true}),
		session.SessionWaitingForInput: accepted(effSetOption{Now: true}),
	}, terminalRefusal))
	waiting := with(inState(session.SessionWaitingForInput), announced)
	cases = append(cases, []decideCase{
		{"set config boolean", waiting, setConfigCmd{OptionID: "yolo", Value: json.RawMessage(`true`)}, accepted(effSetOption{Now: true})},
		{"set config value not offered", waiting, setConfigCmd{OptionID: "model", Value: json.RawMessage(`"huge"`)},
			refused(errcode.InvalidConfigValue, map[string]any{"optionId": "model"})},
		{"set config boolean given a string", waiting, setConfigCmd{OptionID: "yolo", Value: json.RawMessage(`"yes"`)},
			refused(errcode.InvalidConfigValue, map[string]any{"optionId": "yolo"})},
		{"set config unknown option", waiting, setConfigCmd{OptionID: "speed", Value: json.RawMessage(`"x"`)},
			refused(errcode.UnknownConfigOption, map[string]any{"optionId": "speed"})},
		{"set config on an agent that announced none", inState(session.SessionWaitingForInput), in,
			refused(errcode.UnknownConfigOption, map[string]any{"optionId": "model"})},
	}...)
	runDecideCases(t, cases)
}

func TestDecideAnswerPermission(t *testing.T) {
	in := answerPermissionCmd{RequestID: "r1", OptionID: "allow"}
	open := func(v *view) {
		if v.Running != nil {
			v.Permission = &permissionView{Options: []string{"allow", "reject"}}
		}
	}
	notOpen := refused(errcode.PermissionResolved, nil)
	cases := perState("answer permission", in, open, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         notOpen,
		session.SessionStarting:        notOpen,
		session.SessionRunning:         accepted(effAnswerPermissions{RequestID: "r1", State: session.PermissionSelected, OptionID: "allow"}),
		session.SessionWaitingForInput: notOpen,
	}, func(session.SessionState) decision { return notOpen }))
	running := with(inState(session.SessionRunning), open)
	cases = append(cases, []decideCase{
		{"answer permission cancelled", running, answerPermissionCmd{RequestID: "r1", Cancelled: true},
			accepted(effAnswerPermissions{RequestID: "r1", State: session.PermissionCancelled})},
		{"answer permission with an option not offered", running, answerPermissionCmd{RequestID: "r1", OptionID: "always"},
			refused(errcode.InvalidPermissionOpt, nil)},
	}...)
	runDecideCases(t, cases)
}

func TestDecideResume(t *testing.T) {
	in := resumeCmd{}
	cases := perState("resume", in, nil, terminalStates(map[session.SessionState]decision{
		session.SessionCreated:         accepted(effWaiters{Reserve: true}).then(ensureAgentInput{}),
		session.SessionStarting:        accepted(effWaiters{}).then(ensureAgentInput{}), // shares the start in progress
		session.SessionRunning:         accepted(effWaiters{Ready: true}),
		session.SessionWaitingForInput: accepted(effWaiters{Ready: true}),
	}, terminalRefusal))
	waiting := inState(session.SessionWaitingForInput)
	cases = append(cases, []decideCase{
		{"resume after an idle stop", with(waiting, func(v *view) { v.Agent, v.HasSlot, v.Connected = agentNone, false, false }), in,
			accepted(effWaiters{Reserve: true}).then(ensureAgentInput{})},
		{"resume while stopping", with(waiting, func(v *view) { v.Stopping = true }), in, terminalRefusal(session.SessionWaitingForInput)},
	}...)
	runDecideCases(t, cases)
}
