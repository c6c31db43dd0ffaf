package onetruth

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
)

// The transcript: rebuilt from the log up to the cursor the transcript
// says it is consistent with, and compared member by member: turns,
// messages, tool calls, the plan and pending permissions. Times are left
// out: events carry some of them, not all.

// transcript is the transcript a log up to a cursor implies.
type transcript struct {
	turns    map[string]map[string]any
	order    []string // prompt ids, in turn.queued order
	messages map[float64]map[string]any
	tools    map[toolCallKey]map[string]any
	plan     any
	perms    map[string]map[string]any
}

// toolCallKey names a tool call: its turn's prompt id and its id
// (session.ToolCallKey).
type toolCallKey struct{ promptID, id string }

// foldTranscript applies the log's events up to seq upTo, in order.
func foldTranscript(t testing.TB, log []event, upTo int64) *transcript {
	t.Helper()
	f := &transcript{turns: map[string]map[string]any{}, messages: map[float64]map[string]any{},
		tools: map[toolCallKey]map[string]any{}, perms: map[string]map[string]any{}}
	for _, e := range log {
		if e.Seq > upTo {
			break
		}
		p := e.Data
		pid, _ := p["promptId"].(string)
		switch e.Type {
		case "turn.queued":
			tr := map[string]any{"promptId": pid, "kind": p["kind"], "state": "queued", "prompt": p["prompt"]}
			if c, ok := p["continuesPromptId"]; ok {
				tr["continuesPromptId"] = c
			}
			if _, seen := f.turns[pid]; !seen {
				f.order = append(f.order, pid)
			}
			f.turns[pid] = tr
		case "turn.started":
			f.knownTurn(t, e, pid)["state"] = "running"
		case "turn.stalled":
			f.knownTurn(t, e, pid)["stalledAt"] = p["stalledAt"]
		case "turn.stall_ended":
			delete(f.knownTurn(t, e, pid), "stalledAt")
		case "turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted":
			tr := f.knownTurn(t, e, pid)
			tr["state"] = p["state"]
			delete(tr, "stalledAt")
			for _, k := range []string{"stopReason", "exitCode", "exitSignal"} {
				if v, ok := p[k]; ok {
					tr[k] = v
				}
			}
			if e.Type == "turn.interrupted" {
				tr["interruptReason"] = p["reason"]
			}
			code, _ := p["code"].(string)
			msg, _ := p["message"].(string)
			if e.Type == "turn.cancelled" && p["reason"] == "budget_exceeded" {
				code = "budget_exceeded" // a budget stopped it: its error
			}
			if code != "" || msg != "" {
				tr["error"] = map[string]any{"code": code, "message": msg}
			}
		case "message.added":
			m := map[string]any{"id": p["messageId"], "role": p["role"], "text": p["text"]}
			if pid != "" {
				m["promptId"] = pid
			}
			if c, ok := p["content"]; ok {
				m["content"] = c
			}
			f.messages[p["messageId"].(float64)] = m
		case "message.chunk":
			m := f.messages[p["messageId"].(float64)]
			if m == nil {
				t.Errorf("one truth: message.chunk %s names message %v, which no message.added started", e.ID, p["messageId"])
				continue
			}
			m["text"] = m["text"].(string) + p["text"].(string)
		case "tool_call.started", "tool_call.updated":
			// Each event carries the tool call whole, the call its turn
			// and id name (the same id in another turn is another call):
			// docs/events.md, as session.State.Evolve and
			// store.UpsertToolCall key it.
			id := p["toolCallId"].(string)
			c := map[string]any{"id": id}
			for k, v := range p {
				switch k {
				case "sessionId", "taskId", "toolCallId":
				default:
					c[k] = v
				}
			}
			f.tools[toolCallKey{pid, id}] = c
		case "session.rewound":
			// Turns a rewind took back stay, marked; an undo unmarks them.
			for _, id := range stringList(p["rewound"]) {
				f.knownTurn(t, e, id)["rewound"] = true
			}
			for _, id := range stringList(p["restored"]) {
				delete(f.knownTurn(t, e, id), "rewound")
			}
		case "plan.updated":
			f.plan = p["entries"]
		case "permission.requested":
			f.perms[p["requestId"].(string)] = p
		case "permission.resolved":
			delete(f.perms, p["requestId"].(string))
		}
	}
	return f
}

// stringList is a JSON array of strings (nil for anything else).
func stringList(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// knownTurn is the turn pid that an earlier turn.queued introduced; an
// event about a turn the log never queued is an error of the log.
func (f *transcript) knownTurn(t testing.TB, e event, pid string) map[string]any {
	t.Helper()
	if tr := f.turns[pid]; tr != nil {
		return tr
	}
	t.Errorf("one truth: %s %s names turn %q, which no turn.queued introduced", e.Type, e.ID, pid)
	return map[string]any{}
}

// checkTranscript compares the served transcript of sid with the one its
// log implies. It reports false when the daemon does not serve sid.
func (d Daemon) checkTranscript(t testing.TB, sid string) bool {
	t.Helper()
	var tr struct {
		Cursor                                         string
		Turns, Messages, ToolCalls, PendingPermissions []map[string]any
		Plan                                           any
	}
	if d.get(t, "/session/"+sid+"/transcript", &tr) != 200 {
		return false // deleted, or not this daemon's
	}
	cursor := tr.Cursor
	upTo := cursorSeq(t, cursor)
	log := d.replay(t, sid)
	if h := head(log); upTo > h {
		// Shown before it committed: the log, read after, lacks it.
		t.Errorf("one truth: the transcript of %s is at cursor %s, beyond the log read after it (head %d)", sid, cursor, h)
		return true
	}
	f := foldTranscript(t, log, upTo)
	diff := func(what string, got, want any) {
		t.Helper()
		differ(t, "transcript", what, got, want)
	}

	var served []string
	for _, turn := range tr.Turns {
		id := turn["promptId"].(string)
		served = append(served, id)
		want := f.turns[id]
		if want == nil {
			diff("turn "+id, turn, nil)
			continue
		}
		got := map[string]any{}
		for k := range want {
			got[k] = turn[k]
		}
		for _, k := range []string{"stopReason", "exitCode", "exitSignal", "interruptReason", "error", "continuesPromptId", "rewound", "stalledAt"} {
			if v, ok := turn[k]; ok {
				got[k] = v
			}
		}
		if !jsonEqual(got, want) {
			diff("turn "+id, got, want)
		}
	}
	if !reflect.DeepEqual(served, f.order) && !(len(served) == 0 && len(f.order) == 0) {
		diff("turn order", served, f.order)
	}

	msgs := tr.Messages
	compareRecords(t, diff, "message", msgs, f.messages, func(m map[string]any) float64 { return m["id"].(float64) })
	ids := make([]float64, 0, len(f.messages))
	for id := range f.messages {
		ids = append(ids, id)
	}
	sort.Float64s(ids)
	for i, m := range msgs {
		if i < len(ids) && m["id"].(float64) != ids[i] {
			diff("message order", m["id"], ids[i])
			break
		}
	}

	compareRecords(t, diff, "tool call", tr.ToolCalls, f.tools, func(c map[string]any) toolCallKey {
		pid, _ := c["promptId"].(string)
		return toolCallKey{pid, c["id"].(string)}
	})

	if f.plan != nil && !jsonEqual(tr.Plan, f.plan) {
		diff("plan", tr.Plan, f.plan)
	}

	pending := tr.PendingPermissions
	if len(pending) != len(f.perms) {
		diff("pending permissions", pending, f.perms)
	}
	for _, p := range pending {
		if f.perms[p["id"].(string)] == nil {
			diff("pending permission "+p["id"].(string), p, nil)
		}
	}
	return true
}

// compareRecords compares the served records (messages, tool calls) with
// those the log implies, by key, on the members the log gives.
func compareRecords[K comparable](t testing.TB, diff func(what string, got, want any), what string, served []map[string]any, want map[K]map[string]any, key func(map[string]any) K) {
	t.Helper()
	if len(served) != len(want) {
		diff(what+" count", len(served), len(want))
	}
	for _, r := range served {
		w := want[key(r)]
		got := map[string]any{}
		for k := range w {
			got[k] = r[k]
		}
		if w == nil || !jsonEqual(got, w) {
			diff(fmt.Sprintf("%s %v", what, key(r)), r, w)
		}
	}
}
