package crash_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// One truth (issue 29): the transcript tetherd serves must be what its own
// event log says. checkOneTruth rebuilds the transcript from the session's
// durable log (GET events?follow=false), up to the cursor the transcript
// says it is consistent with, and compares the two: turns, messages, tool
// calls, the plan and pending permissions. A row that a write changed
// without an event, or an event whose row was lost (a takeover, a failed
// write), shows here as a difference. Times are left out: events carry
// some of them, not all.

// foldTranscript is the transcript a log up to seq implies.
type foldTranscript struct {
	turns    map[string]map[string]any
	order    []string // prompt ids, in turn.queued order
	messages map[float64]map[string]any
	tools    map[string]map[string]any
	plan     any
	perms    map[string]map[string]any
}

// fold applies the log's events up to seq, in order.
func fold(w *world, frames []frame, upTo int64) *foldTranscript {
	f := &foldTranscript{turns: map[string]map[string]any{}, messages: map[float64]map[string]any{},
		tools: map[string]map[string]any{}, perms: map[string]map[string]any{}}
	for _, fr := range frames {
		if fr.seq() > upTo {
			break
		}
		p := fr.JSON(w.t)
		pid, _ := p["promptId"].(string)
		switch fr.Event {
		case "turn.queued":
			t := map[string]any{"promptId": pid, "kind": p["kind"], "state": "queued", "prompt": p["prompt"]}
			if c, ok := p["continuesPromptId"]; ok {
				t["continuesPromptId"] = c
			}
			if _, seen := f.turns[pid]; !seen {
				f.order = append(f.order, pid)
			}
			f.turns[pid] = t
		case "turn.started":
			f.turns[pid]["state"] = "running"
		case "turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted":
			t := f.turns[pid]
			t["state"] = p["state"]
			for _, k := range []string{"stopReason", "exitCode", "exitSignal"} {
				if v, ok := p[k]; ok {
					t[k] = v
				}
			}
			if fr.Event == "turn.interrupted" {
				t["interruptReason"] = p["reason"]
			}
			code, _ := p["code"].(string)
			msg, _ := p["message"].(string)
			if code != "" || msg != "" {
				t["error"] = map[string]any{"code": code, "message": msg}
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
				w.t.Errorf("one truth: message.chunk %s names message %v, which no message.added started", fr.ID, p["messageId"])
				continue
			}
			m["text"] = m["text"].(string) + p["text"].(string)
		case "tool_call.started", "tool_call.updated":
			id := p["toolCallId"].(string)
			c := map[string]any{"id": id}
			for k, v := range p {
				switch k {
				case "sessionId", "taskId", "toolCallId":
				default:
					c[k] = v
				}
			}
			f.tools[id] = c
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

// checkOneTruth compares the served transcript of sid with the one its log
// implies, and reports each difference.
func (w *world) checkOneTruth(sid string) {
	w.t.Helper()
	code, tr := w.do("GET", "/session/"+sid+"/transcript", nil)
	if code != 200 {
		return // deleted, or not this daemon's
	}
	cursor, _ := tr["cursor"].(string)
	_, seq, _ := strings.Cut(cursor, ":")
	upTo, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		w.t.Fatalf("one truth: transcript cursor %q", cursor)
	}
	f := fold(w, w.replay(sid), upTo)
	diff := func(what string, got, want any) {
		w.t.Helper()
		g, _ := json.Marshal(got)
		l, _ := json.Marshal(want)
		w.t.Errorf("one truth, %s: the transcript has %s, the log implies %s", what, g, l)
	}

	turns := list(tr, "turns")
	var served []string
	for _, t := range turns {
		id := t["promptId"].(string)
		served = append(served, id)
		want := f.turns[id]
		if want == nil {
			diff("turn "+id, t, nil)
			continue
		}
		got := map[string]any{}
		for k := range want {
			got[k] = t[k]
		}
		for _, k := range []string{"stopReason", "exitCode", "exitSignal", "interruptReason", "error", "continuesPromptId"} {
			if v, ok := t[k]; ok {
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

	msgs := list(tr, "messages")
	if len(msgs) != len(f.messages) {
		diff("message count", len(msgs), len(f.messages))
	}
	for _, m := range msgs {
		want := f.messages[m["id"].(float64)]
		got := map[string]any{}
		for k := range want {
			got[k] = m[k]
		}
		if want == nil || !jsonEqual(got, want) {
			diff(fmt.Sprintf("message %v", m["id"]), m, want)
		}
	}
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

	calls := list(tr, "toolCalls")
	if len(calls) != len(f.tools) {
		diff("tool call count", len(calls), len(f.tools))
	}
	for _, c := range calls {
		want := f.tools[c["id"].(string)]
		got := map[string]any{}
		for k := range want {
			got[k] = c[k]
		}
		if want == nil || !jsonEqual(got, want) {
			diff("tool call "+c["id"].(string), c, want)
		}
	}

	if f.plan != nil && !jsonEqual(tr["plan"], f.plan) {
		diff("plan", tr["plan"], f.plan)
	}

	pending := list(tr, "pendingPermissions")
	if len(pending) != len(f.perms) {
		diff("pending permissions", pending, f.perms)
	}
	for _, p := range pending {
		if f.perms[p["id"].(string)] == nil {
			diff("pending permission "+p["id"].(string), p, nil)
		}
	}
}

// jsonEqual compares two values as their JSON encodings decode.
func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}
