package onetruth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tether/tether/internal/session"
)

// Diff compares a state folded from a session's log with a state built
// from what some view serves (the store's rows, the API's transcript, the
// actor's memory) and describes each difference, "" free: nil when they
// agree on everything the log carries. Records are matched by their ids,
// and their order (turns, messages, tool calls, permissions) is compared
// too.
//
// Left out, because the log does not carry them (or carries them in a
// form no view keeps):
//   - every time but whether a turn started or ended and a permission was
//     resolved (their presence is compared): the backends keep times at
//     different precisions, and some rows take theirs from the clock of the
//     write, not from the event;
//   - the session's rows-only fields (MCPServers, AdditionalDirectories,
//     Prompted, ModeChoice, ConfigChoices, AutoContinue, ClosedAt) and the
//     turn's Interruption: no event sets them (a delivery is compared by
//     its presence, like the other times);
//   - AgentMessageIDs (no row keeps them) and Seq.
//
// JSON members (prompt, content, plan, options, tool call members) are
// compared as JSON values: absent, empty and null are the same, and key
// order and spacing do not matter.
func Diff(log, served *session.State) []string {
	var d stateDiffer
	d.record("session", fieldsOfSession(log.Session), fieldsOfSession(served.Session))
	d.field("plan", jsonValue(log.Plan), jsonValue(served.Plan))
	diffRecords(&d, "turn", log.Turns, served.Turns, func(t session.Turn) string { return t.PromptID }, fieldsOfTurn)
	diffRecords(&d, "message", log.Messages, served.Messages, func(m session.Message) string { return fmt.Sprint(m.ID) }, fieldsOfMessage)
	diffRecords(&d, "tool call", log.ToolCalls, served.ToolCalls, func(c session.ToolCall) string { return c.Key().String() }, fieldsOfToolCall)
	diffRecords(&d, "permission", log.Permissions, served.Permissions, func(p session.Permission) string { return p.ID }, fieldsOfPermission)
	return d.out
}

// DiffExecutor compares the executor a session's log tells (State.Executor)
// with the executor some view holds (its row, an actor's copy), the way
// Diff compares the rest: what session.executor_status records
// (ExecutorStatusOf: the shown error code), when the agent was last seen
// by its presence only, host offsets and UpdatedAt left out (the log does
// not carry them).
func DiffExecutor(log, served session.Executor) []string {
	var d stateDiffer
	d.record("executor", fieldsOfExecutor(log), fieldsOfExecutor(served))
	return d.out
}

func fieldsOfExecutor(x session.Executor) []namedField {
	x = session.ExecutorStatusOf(x).Executor()
	return []namedField{{"runtime", x.Runtime}, {"status", x.Status}, {"host", x.Host}, {"pid", x.PID},
		{"agentExecutionId", x.AgentExecutionID}, {"resumeToken", x.ResumeToken},
		{"supportsSessionResume", x.SupportsSessionResume}, {"supportsLoad", x.SupportsLoad},
		{"supportsWorkspaceOnly", x.SupportsWorkspaceOnly}, {"worktree", fmt.Sprint(x.WorktreeRepo, x.WorktreePath, x.WorktreeBranch, x.WorktreeState)},
		{"lastSeen", x.LastSeenAt != nil}, {"error", x.ErrorMessage}, {"errorCode", x.ErrorCode},
		{"errorProfile", x.ErrorProfile}, {"exitCode", intValue(x.ExitCode)}, {"exitSignal", x.ExitSignal}}
}

// stateDiffer collects the differences Diff finds.
type stateDiffer struct{ out []string }

func (d *stateDiffer) field(what string, log, served any) {
	if fmt.Sprint(log) != fmt.Sprint(served) {
		d.out = append(d.out, fmt.Sprintf("%s: log %v, served %v", what, log, served))
	}
}

// record compares the named fields of one record.
func (d *stateDiffer) record(what string, log, served []namedField) {
	for i := range log {
		d.field(what+" "+log[i].name, log[i].value, served[i].value)
	}
}

// namedField is one compared field of a record, as a printable value.
type namedField struct {
	name  string
	value any
}

// diffRecords matches log's and served's records by key and compares
// them field by field, then their order.
func diffRecords[T any](d *stateDiffer, kind string, log, served []T, key func(T) string, fields func(T) []namedField) {
	byKey := make(map[string]T, len(served))
	var servedKeys, logKeys []string
	for _, r := range served {
		byKey[key(r)] = r
		servedKeys = append(servedKeys, key(r))
	}
	inLog := make(map[string]bool, len(log))
	for _, r := range log {
		k := key(r)
		inLog[k], logKeys = true, append(logKeys, k)
		s, ok := byKey[k]
		if !ok {
			d.out = append(d.out, fmt.Sprintf("%s %s: in the log, not served", kind, k))
			continue
		}
		d.record(kind+" "+k, fields(r), fields(s))
	}
	for _, k := range servedKeys {
		if !inLog[k] {
			d.out = append(d.out, fmt.Sprintf("%s %s: served, not in the log", kind, k))
		}
	}
	common := func(keys []string, other map[string]bool) []string {
		return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !other[k] })
	}
	inServed := make(map[string]bool, len(servedKeys))
	for _, k := range servedKeys {
		inServed[k] = true
	}
	if l, s := common(logKeys, inServed), common(servedKeys, inLog); !slices.Equal(l, s) {
		d.out = append(d.out, fmt.Sprintf("%s order: log %v, served %v", kind, l, s))
	}
}

func fieldsOfSession(s session.Session) []namedField {
	return []namedField{{"id", s.ID}, {"taskId", s.TaskID}, {"agentProfileId", s.AgentProfileID}, {"cwd", s.Cwd},
		{"title", s.Title}, {"titleSource", s.TitleSource}, {"archived", s.Archived},
		{"state", s.State}, {"eventEpoch", s.EventEpoch}, {"queueHeld", s.QueueHeld},
		{"contextLost", s.ContextLost}, {"injectContext", s.InjectContext}, {"budget", budgetValue(s.Budget)}}
}

// budgetValue is a budget as JSON text, to compare.
func budgetValue(b session.Budget) string {
	j, _ := json.Marshal(b)
	return string(j)
}

func fieldsOfTurn(t session.Turn) []namedField {
	return []namedField{{"sessionId", t.SessionID}, {"seq", t.Seq}, {"kind", t.Kind}, {"state", t.State},
		{"prompt", jsonValue(t.Prompt)}, {"stopReason", t.StopReason}, {"errorCode", t.ErrorCode},
		{"errorMessage", t.ErrorMessage}, {"interruptReason", t.InterruptReason}, {"exitCode", intValue(t.ExitCode)},
		{"exitSignal", t.ExitSignal}, {"continuesPromptId", t.ContinuesPromptID},
		{"started", t.StartedAt != nil}, {"ended", t.EndedAt != nil}, {"delivered", t.DeliveredAt != nil},
		{"cancelRequested", t.CancelRequested}, {"workspaceChanges", jsonValue(t.WorkspaceChanges)},
		{"contextInjected", t.ContextInjected}, {"stalled", t.StalledAt != nil}}
}

func fieldsOfMessage(m session.Message) []namedField {
	return []namedField{{"sessionId", m.SessionID}, {"promptId", m.PromptID}, {"role", m.Role},
		{"text", fmt.Sprintf("%q", m.Text)}, {"content", jsonValue(m.Content)}}
}

func fieldsOfToolCall(c session.ToolCall) []namedField {
	return []namedField{{"sessionId", c.SessionID}, {"promptId", c.PromptID}, {"title", c.Title}, {"kind", c.Kind},
		{"status", c.Status}, {"interrupted", c.Interrupted}, {"content", jsonValue(c.Content)},
		{"locations", jsonValue(c.Locations)}, {"rawInput", jsonValue(c.RawInput)}, {"rawOutput", jsonValue(c.RawOutput)}}
}

func fieldsOfPermission(p session.Permission) []namedField {
	return []namedField{{"sessionId", p.SessionID}, {"promptId", p.PromptID}, {"toolCallId", p.ToolCallID},
		{"title", p.Title}, {"options", jsonValue(p.Options)}, {"state", p.State},
		{"selectedOptionId", p.SelectedOptionID}, {"resolved", p.ResolvedAt != nil}}
}

// jsonValue is raw as a canonical JSON text ("" when absent or null), so
// that two encodings of one value compare equal.
func jsonValue(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "invalid JSON " + string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func intValue(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
