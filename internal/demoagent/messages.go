package demoagent

import (
	acp "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"
)

// Commands that shape a reply as several assistant messages, the way real
// agents do: each message has its own ACP messageId (a UUID, as ACP asks).

// twoMessages implements /two-messages: "Let me look that up." in two
// chunks, a completed tool call, then "FINAL: done." in two chunks, the two
// texts under distinct messageIds (withIDs) or under none, so that only the
// tool call between them tells them apart.
func (t *turn) twoMessages(withIDs bool) error {
	first, second := "", ""
	if withIDs {
		first, second = uuid.NewString(), uuid.NewString()
	}
	for _, c := range []string{"Let me ", "look that up."} {
		if err := t.sayIn(first, c); err != nil {
			return err
		}
	}
	id := t.nextToolCallID()
	if err := t.emit(acp.StartToolCall(id, "Look it up", acp.WithStartKind(acp.ToolKindSearch),
		acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
		return err
	}
	if err := t.emit(toolDone(id, acp.ToolCallStatusCompleted, "found it")); err != nil {
		return err
	}
	for _, c := range []string{"FINAL: ", "done."} {
		if err := t.sayIn(second, c); err != nil {
			return err
		}
	}
	return nil
}

// messageIDs implements /message-ids: "first message" and "second message",
// two chunks each, with nothing between them but a change of messageId.
func (t *turn) messageIDs() error {
	for _, m := range [][]string{{"first ", "message"}, {"second ", "message"}} {
		id := uuid.NewString()
		for _, c := range m {
			if err := t.sayIn(id, c); err != nil {
				return err
			}
		}
	}
	return nil
}
