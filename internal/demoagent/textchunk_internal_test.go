package demoagent

import (
	"encoding/json"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// TestTextChunkMatchesTheSDK checks the hand-encoded chunk and its line
// against what the SDK's types encode to, byte for byte.
func TestTextChunkMatchesTheSDK(t *testing.T) {
	for _, tc := range []struct{ name, messageID, text string }{
		{"plain", "", "chunk 1"},
		{"newline", "", "chunk 1\n"},
		{"with message id", "msg-1", "hello"},
		{"escapes", "m\"1", "quote \" backslash \\ tab \t <html> & \u2028 é \x01"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := acp.UpdateAgentMessageText(tc.text)
			if tc.messageID != "" {
				u.AgentMessageChunk.MessageId = acp.Ptr(tc.messageID)
			}
			want, err := json.Marshal(u)
			if err != nil {
				t.Fatal(err)
			}
			got := textChunk(tc.messageID, tc.text)
			if string(got) != string(want) {
				t.Fatalf("textChunk: got %s, want %s", got, want)
			}
			wantLine, err := updateLine("sess-1", want)
			if err != nil {
				t.Fatal(err)
			}
			if gotLine := textChunkLine("sess-1", got); string(gotLine) != string(wantLine) {
				t.Fatalf("textChunkLine: got %s, want %s", gotLine, wantLine)
			}
		})
	}
}
