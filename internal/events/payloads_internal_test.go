package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
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
			Draft{SessionID: "s", TaskID: "t", PromptID: "p", Type: MessageChunk, Payload: &session.MessageChunkData{MessageID: 7, Role: "agent", Text: "hi"}},
			`{"sessionId":"s","taskId":"t","promptId":"p","messageId":7,"role":"agent","text":"hi"}`, false},
		{"ids the payload sets win",
			Draft{TaskID: "t", Type: TaskStateChanged, Payload: &session.TaskStateChangedData{EventCommon: session.EventCommon{SessionID: "moved-by"}, State: "REVIEW", PreviousState: "TODO"}},
			`{"sessionId":"moved-by","taskId":"t","state":"REVIEW","previousState":"TODO"}`, false},
		{"no prompt: no promptId",
			Draft{SessionID: "s", TaskID: "t", Type: SessionClosed, Payload: &session.SessionClosedData{State: "COMPLETED"}},
			`{"sessionId":"s","taskId":"t","state":"COMPLETED"}`, false},
		{"recovery keeps the sorted member order of stored maps",
			Draft{SessionID: "s", TaskID: "t", Type: SessionRecoveryChanged, Payload: &session.RecoveryChangedData{Recovery: session.Recovery{Kind: "none"}}},
			`{"recovery":{"kind":"none","canContinue":false`, false},
		{"map gets the draft's ids",
			Draft{SessionID: "s", TaskID: "t", PromptID: "p", Type: MessageChunk, Payload: map[string]any{"text": "x"}},
			`{"promptId":"p","sessionId":"s","taskId":"t","text":"x"}`, false},
		{"payload value refused",
			Draft{SessionID: "s", Type: SessionClosed, Payload: session.SessionClosedData{State: "COMPLETED"}}, "", true},
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

// TestFastPayloadJSONMatchesEncodingJSON checks the hand-written chunk
// encoder against encoding/json, byte for byte, on the strings where
// JSON encoders differ.
func TestFastPayloadJSONMatchesEncodingJSON(t *testing.T) {
	texts := []struct{ name, s string }{
		{"empty", ""},
		{"plain", "streamed agent text"},
		{"quotes and backslashes", `say "hi" \ bye`},
		{"controls", "a\nb\rc\td\be\ff\x00g\x1fh\x7f"},
		{"html", "<script>a && b</script>"},
		{"line separators", "x\u2028y\u2029z"},
		{"non-ASCII", "héllo wörld 日本 🎉"},
		{"invalid UTF-8", "bad \xff\xfe byte \xe2\x82"},
	}
	for _, tc := range texts {
		for _, c := range []session.EventCommon{{}, {SessionID: "s", TaskID: "t", PromptID: "p<&>"}, {TaskID: "t"}} {
			t.Run(tc.name, func(t *testing.T) {
				p := &session.MessageChunkData{EventCommon: c, MessageID: -42, Role: "agent", Text: tc.s}
				want, err := json.Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				if got := appendChunkJSON(nil, p); string(got) != string(want) {
					t.Fatalf("got %s, want %s", got, want)
				}
			})
		}
	}
}
