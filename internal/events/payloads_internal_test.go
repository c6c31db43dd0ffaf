package events

import (
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/recovery"
)

// TestMarshalPayloadCommonMembers checks the one place the ids get into a
// payload: the draft's ids fill what the payload leaves out, never what it
// sets, for typed payloads and maps alike; a payload value (which would
// lose them) is refused.
func TestMarshalPayloadCommonMembers(t *testing.T) {
	cases := []struct {
		name    string
		draft   Draft
		want    string
		wantErr bool
	}{
		{"typed payload gets the draft's ids",
			Draft{SessionID: "s", TaskID: "t", PromptID: "p", Type: MessageChunk, Payload: &MessageChunkData{MessageID: 7, Role: "agent", Text: "hi"}},
			`{"sessionId":"s","taskId":"t","promptId":"p","messageId":7,"role":"agent","text":"hi"}`, false},
		{"ids the payload sets win",
			Draft{TaskID: "t", Type: TaskStateChanged, Payload: &TaskStateChangedData{Common: Common{SessionID: "moved-by"}, State: "REVIEW", PreviousState: "TODO"}},
			`{"sessionId":"moved-by","taskId":"t","state":"REVIEW","previousState":"TODO"}`, false},
		{"no prompt: no promptId",
			Draft{SessionID: "s", TaskID: "t", Type: SessionClosed, Payload: &SessionClosedData{State: "COMPLETED"}},
			`{"sessionId":"s","taskId":"t","state":"COMPLETED"}`, false},
		{"recovery keeps the sorted member order of stored maps",
			Draft{SessionID: "s", TaskID: "t", Type: SessionRecoveryChanged, Payload: &RecoveryChangedData{Recovery: recovery.Summary{Kind: "none"}}},
			`{"recovery":{"kind":"none","canContinue":false`, false},
		{"map gets the draft's ids",
			Draft{SessionID: "s", TaskID: "t", PromptID: "p", Type: MessageChunk, Payload: map[string]any{"text": "x"}},
			`{"promptId":"p","sessionId":"s","taskId":"t","text":"x"}`, false},
		{"payload value refused",
			Draft{SessionID: "s", Type: SessionClosed, Payload: SessionClosedData{State: "COMPLETED"}}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := marshalPayload(tc.draft)
			if tc.wantErr {
				if !errcode.Is(err, errcode.Internal) {
					t.Fatalf("got %s, %v; want an internal error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(got), tc.want) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
