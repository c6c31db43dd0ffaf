package server_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
)

// TestTranscriptKeepsAgentMessages drives the demo agent's multi-message
// replies over real HTTP: a new agent message starts when the ACP messageId
// changes or a tool call comes between chunks, so the transcript, and a
// client rebuilding it from the event log, read text → tool → text in order.
func TestTranscriptKeepsAgentMessages(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	cases := []struct {
		name, prompt string
		want         []string
	}{
		{"two messageIds around a tool call", "/two-messages",
			[]string{"user:/two-messages", "agent:Let me look that up.", "tool:Look it up", "agent:FINAL: done."}},
		{"no messageIds, split by the tool call alone", "/two-messages noid",
			[]string{"user:/two-messages noid", "agent:Let me look that up.", "tool:Look it up", "agent:FINAL: done."}},
		{"messageId change with nothing between", "/message-ids",
			[]string{"user:/message-ids", "agent:first message", "agent:second message"}},
		{"one message stays one", "/stream 3",
			[]string{"user:/stream 3", "agent:chunk 1\nchunk 2\nchunk 3\n"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sid, _ := d.createSession(nil)
			pid := fmt.Sprintf("p%d", i)
			d.prompt(sid, tc.prompt, pid)
			if got := d.waitTurn(sid, pid)["state"]; got != "completed" {
				t.Fatalf("turn: got %v, want completed", got)
			}
			if got := transcriptItems(t, d.transcript(sid)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("transcript: got %q, want %q", got, tc.want)
			}
			if got := replayedItems(t, d.replayLog("/session/"+sid+"/events?follow=false")); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("events replayed: got %q, want %q", got, tc.want)
			}
		})
	}
}

// transcriptItems lays a transcript snapshot out as a reader sees it:
// messages and tool calls ordered by their creation time ("role:text",
// "tool:title").
func transcriptItems(t *testing.T, tr map[string]any) []string {
	t.Helper()
	type item struct {
		at   time.Time
		what string
	}
	var items []item
	at := func(o map[string]any) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, fmt.Sprint(o["createdAt"]))
		if err != nil {
			t.Fatalf("createdAt of %v: %v", o, err)
		}
		return ts
	}
	for _, m := range list(tr, "messages") {
		items = append(items, item{at(m), fmt.Sprintf("%v:%v", m["role"], m["text"])})
	}
	for _, c := range list(tr, "toolCalls") {
		items = append(items, item{at(c), fmt.Sprintf("tool:%v", c["title"])})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at.Before(items[j].at) })
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.what
	}
	return out
}

// replayedItems rebuilds the same layout from the event log as a client
// does: message.added starts a message, message.chunk appends to the one
// its messageId names, a tool call takes its place when it starts.
func replayedItems(t *testing.T, frames []sseFrame) []string {
	t.Helper()
	type entry struct{ role, text string }
	var order []string
	msgs := map[string]*entry{}
	tools := map[string]string{}
	for _, f := range frames {
		p := f.JSON(t)
		switch f.Event {
		case events.MessageAdded:
			id := fmt.Sprint(p["messageId"])
			if msgs[id] != nil {
				t.Fatalf("message %s added twice", id)
			}
			msgs[id] = &entry{fmt.Sprint(p["role"]), fmt.Sprint(p["text"])}
			order = append(order, "m"+id)
		case events.MessageChunk:
			m := msgs[fmt.Sprint(p["messageId"])]
			if m == nil {
				t.Fatalf("chunk for a message never added: %s", f.Data)
			}
			m.text += fmt.Sprint(p["text"])
		case events.ToolCallStarted:
			id := fmt.Sprint(p["toolCallId"])
			tools[id] = fmt.Sprint(p["title"])
			order = append(order, "t"+id)
		}
	}
	out := make([]string, len(order))
	for i, k := range order {
		if m := msgs[k[1:]]; k[0] == 'm' {
			out[i] = m.role + ":" + m.text
		} else {
			out[i] = "tool:" + tools[k[1:]]
		}
	}
	return out
}
