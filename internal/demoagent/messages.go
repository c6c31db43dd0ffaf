package demoagent

import (
	"strconv"
	"strings"
	"time"

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

// messageIDs implements /message-ids [PAUSE_MS]: "first message" and
// "second message", two chunks each, with nothing between them but a
// change of messageId, and a pause of PAUSE_MS between the two (a test
// restarts the daemon there).
func (t *turn) messageIDs(arg string) error {
	pause, err := strconv.Atoi(strings.TrimSpace(arg))
	if arg != "" && (err != nil || pause < 0) {
		return t.say("usage: /message-ids [PAUSE_MS]")
	}
	for i, m := range [][]string{{"first ", "message"}, {"second ", "message"}} {
		if i > 0 && pause > 0 {
			if err := t.pause(time.Duration(pause) * time.Millisecond); err != nil {
				return err
			}
		}
		id := uuid.NewString()
		for _, c := range m {
			if err := t.sayIn(id, c); err != nil {
				return err
			}
		}
	}
	return nil
}
