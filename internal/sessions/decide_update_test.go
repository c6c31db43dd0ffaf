package sessions

import (
	"encoding/json"
	"testing"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/session"
)

// The decision table's session/update input (decideUpdate): every kind of
// update in every state it can arrive in, and the edge cases of message
// chunks. Helpers are in decide_test.go.

func TestDecideUpdate(t *testing.T) {
	// running: turn p1 streams agent message m1; idle: no turn; replaying:
	// no turn while a session/load may still replay history.
	running := with(inState(session.SessionRunning), func(v *view) {
		v.Running.MessageID, v.Running.OpenMessage, v.Running.OpenRole = "m1", 7, session.RoleAgent
	})
	idle := inState(session.SessionWaitingForInput)
	replaying := with(idle, func(v *view) { v.Replaying = true })
	// Replayed history (counted for the load's settle), and output
	// outside a turn, are stored nowhere.
	none := accepted()
	skip, drop := decision{Replayed: true}, none
	options := accepted(record("", &session.SessionOptionsChangedData{}))
	entries := json.RawMessage(`[{"content":"test","status":"pending"}]`)
	plan := func(promptID string) decision {
		return accepted(effRecord{Event: &session.PlanUpdatedData{EventCommon: session.EventCommon{PromptID: promptID}, Entries: entries}})
	}
	kinds := []struct {
		kind                     acp.UpdateKind
		running, idle, replaying decision
	}{
		{acp.UpdateAgentMessage, accepted(record("p1", &session.MessageChunkData{MessageID: 7, Role: session.RoleAgent, AgentMessageID: "m1"})), drop, skip},
		{acp.UpdateAgentThought, accepted(record("p1", &session.MessageAddedData{Role: session.RoleThought, AgentMessageID: "m1", Closes: 7})), drop, skip},
		{acp.UpdateUserMessage, none, none, skip},
		{acp.UpdateToolCall, accepted(record("p1", &session.ToolCallStartedData{ToolCallData: session.ToolCallData{ToolCallID: "t1"}})), drop, skip},
		{acp.UpdateToolCallUpdate, accepted(record("p1", &session.ToolCallData{ToolCallID: "t1"})), drop, skip},
		{acp.UpdatePlan, plan("p1"), plan(""), skip},
		{acp.UpdateAvailableCommands, options, options, options},
		{acp.UpdateCurrentMode, options, options, options},
		{acp.UpdateConfigOptions, options, options, options},
		{acp.UpdateSessionInfo, none, none, none},
		{acp.UpdateUsage, none, none, none},
		{"some_future_update", none, none, none},
	}
	var cases []decideCase
	for _, k := range kinds {
		in := updateInput{Kind: k.kind, MessageID: "m1", Current: true}
		switch k.kind {
		case acp.UpdatePlan:
			in.Data = entries
		case acp.UpdateToolCall, acp.UpdateToolCallUpdate:
			in.Tool = &acp.ToolCall{ID: "t1"}
		}
		stale := in
		stale.Current = false
		name := "update " + string(k.kind)
		cases = append(cases,
			decideCase{name + "/in a turn", running, in, k.running},
			decideCase{name + "/outside a turn", idle, in, k.idle},
			decideCase{name + "/while a load replays", replaying, in, k.replaying},
			decideCase{name + "/from a previous agent", running, stale, none},
		)
		// The lost agent's late output, on the turn its loss interrupted:
		// only what records output is kept (late.go).
		late := in
		late.Late = true
		want := none
		switch k.kind {
		case acp.UpdateAgentMessage, acp.UpdateAgentThought, acp.UpdateToolCall, acp.UpdateToolCallUpdate, acp.UpdatePlan:
			want = k.running
		}
		cases = append(cases, decideCase{name + "/late output", running, late, want})
	}
	chunk := func(messageID string) updateInput {
		return updateInput{Kind: acp.UpdateAgentMessage, MessageID: messageID, Current: true}
	}
	// A new message's id is taken as it is folded; it ends the open one
	// (closes).
	startClosing := func(messageID string, closes int64) decision {
		return accepted(record("p1", &session.MessageAddedData{Role: session.RoleAgent, AgentMessageID: messageID, Closes: closes}))
	}
	start := func(messageID string) decision { return startClosing(messageID, 7) }
	appendTo := func(messageID string) decision {
		return accepted(record("p1", &session.MessageChunkData{MessageID: 7, Role: session.RoleAgent, AgentMessageID: messageID}))
	}
	cases = append(cases, []decideCase{
		{"chunk starts the turn's first message", inState(session.SessionRunning), chunk("m1"), startClosing("m1", 0)},
		{"chunk carries its text", running, updateInput{Kind: acp.UpdateAgentMessage, MessageID: "m1", Text: "hi", Current: true},
			accepted(record("p1", &session.MessageChunkData{MessageID: 7, Role: session.RoleAgent, Text: "hi", AgentMessageID: "m1"}))},
		{"chunk after a tool call, plan or permission", with(running, func(v *view) { v.Running.Split = true }), chunk("m1"), start("m1")},
		{"chunk with a new messageId", running, chunk("m2"), start("m2")},
		{"chunk without a messageId continues", running, chunk(""), appendTo("")},
		{"chunk with a messageId after chunks without", with(running, func(v *view) { v.Running.MessageID = "" }), chunk("m2"), appendTo("m2")},
		{"chunk after its open message was lost to a failed write", with(running, func(v *view) { v.Running.OpenMessage = 0 }),
			chunk("m1"), startClosing("m1", 0)},
		{"chunk that is not plain text", running, updateInput{Kind: acp.UpdateAgentMessage, MessageID: "m1", Text: "x", Block: true,
			Content: json.RawMessage(`{"type":"image"}`), Current: true},
			accepted(record("p1", &session.MessageAddedData{Role: session.RoleAgent, Content: json.RawMessage(`[{"type":"image"}]`), AgentMessageID: "m1", Closes: 7}))},
		{"empty chunk", running, updateInput{Kind: acp.UpdateAgentMessage, MessageID: "m2", Empty: true, Current: true}, none},
		{"empty chunk outside a turn", idle, updateInput{Kind: acp.UpdateAgentMessage, Empty: true, Current: true}, drop},
		{"thought chunk continues a thought", with(running, func(v *view) { v.Running.OpenRole = session.RoleThought }),
			updateInput{Kind: acp.UpdateAgentThought, MessageID: "m1", Current: true},
			accepted(record("p1", &session.MessageChunkData{MessageID: 7, Role: session.RoleThought, AgentMessageID: "m1"}))},
		{"chunk in a turn that started while a load replayed", with(running, func(v *view) { v.Replaying = true }), chunk("m1"), appendTo("m1")},
		{"current mode announced", with(idle, func(v *view) {
			v.Modes = json.RawMessage(`{"availableModes":[{"id":"a"},{"id":"b"}],"currentModeId":"a"}`)
			v.Commands = json.RawMessage(`[{"name":"c"}]`)
		}), updateInput{Kind: acp.UpdateCurrentMode, Data: json.RawMessage(`"b"`), Current: true},
			accepted(record("", &session.SessionOptionsChangedData{CurrentMode: json.RawMessage(`"b"`),
				AvailableModes: json.RawMessage(`[{"id":"a"},{"id":"b"}]`), AvailableCommands: json.RawMessage(`[{"name":"c"}]`)}))},
		{"chunk in a cancelled turn", with(running, func(v *view) { v.Running.CancelRequested = true }), chunk("m1"), appendTo("m1")},
	}...)
	runDecideCases(t, cases)
}

// TestDecideUsage: a usage_update is recorded as usage.updated with the
// session's and the running turn's usage as they now stand: the context
// window and the cost replaced (the cost only in the session's: it is the
// session's total), tokens summed; nothing for a report that says nothing.
func TestDecideUsage(t *testing.T) {
	soFar := session.Usage{InputTokens: 10, ContextUsed: 500, ContextSize: 200000, Cost: &session.Cost{Amount: 0.01, Currency: "USD"}}
	running := with(inState(session.SessionRunning), func(v *view) {
		v.Usage = soFar
		v.Running.Usage = session.Usage{InputTokens: 4, ContextUsed: 400, ContextSize: 200000}
	})
	idle := with(inState(session.SessionWaitingForInput), func(v *view) { v.Usage = soFar })
	cost := &session.Cost{Amount: 0.05, Currency: "USD"}
	full := `{"sessionUpdate":"usage_update","used":3000,"size":200000,"cost":{"amount":0.05,"currency":"USD"}}`
	cases := []struct {
		name string
		v    view
		data string
		want []effect
	}{
		{"in a turn", running, full, []effect{record("p1", &session.UsageUpdatedData{
			Report:  session.Usage{ContextUsed: 3000, ContextSize: 200000, Cost: cost},
			Session: session.Usage{InputTokens: 10, ContextUsed: 3000, ContextSize: 200000, Cost: cost},
			Turn:    &session.Usage{InputTokens: 4, ContextUsed: 3000, ContextSize: 200000}})}},
		{"after the turn", idle, full, []effect{record("", &session.UsageUpdatedData{
			Report:  session.Usage{ContextUsed: 3000, ContextSize: 200000, Cost: cost},
			Session: session.Usage{InputTokens: 10, ContextUsed: 3000, ContextSize: 200000, Cost: cost}})}},
		{"context without its size", idle, `{"used":3000,"cost":{"amount":0.05,"currency":"USD"}}`, []effect{record("", &session.UsageUpdatedData{
			Report:  session.Usage{Cost: cost},
			Session: session.Usage{InputTokens: 10, ContextUsed: 500, ContextSize: 200000, Cost: cost}})}},
		{"an answer's tokens", running, `{"sessionUpdate":"usage_update","used":0,"size":0,"_meta":{"tether/promptUsage":{"inputTokens":100,"outputTokens":20,"cachedReadTokens":7,"totalTokens":127}}}`,
			[]effect{record("p1", &session.UsageUpdatedData{
				Report:  session.Usage{InputTokens: 100, OutputTokens: 20, CachedReadTokens: 7, TotalTokens: 127},
				Session: session.Usage{InputTokens: 110, OutputTokens: 20, CachedReadTokens: 7, TotalTokens: 127, ContextUsed: 500, ContextSize: 200000, Cost: soFar.Cost},
				Turn:    &session.Usage{InputTokens: 104, OutputTokens: 20, CachedReadTokens: 7, TotalTokens: 127, ContextUsed: 400, ContextSize: 200000}})}},
		{"negative tokens", running, `{"_meta":{"tether/promptUsage":{"inputTokens":-1}}}`, nil},
		{"a cost without its currency", idle, `{"cost":{"amount":0.05}}`, nil},
		{"nothing said", running, `{"sessionUpdate":"usage_update"}`, nil},
		{"not JSON", running, `{`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decideUpdate(tc.v, updateInput{Kind: acp.UpdateUsage, Data: json.RawMessage(tc.data), Current: true})
			got, _ := json.Marshal(d.Effects)
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) || d.Refusal != nil {
				t.Errorf("got %s (refusal %v), want %s", got, d.Refusal, want)
			}
		})
	}
}
