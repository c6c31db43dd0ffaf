package acp

import (
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// sdkPath decodes line as inbound.route does without the fast path.
func sdkPath(t *testing.T, line []byte) (Update, bool) {
	t.Helper()
	var m envelope
	if json.Unmarshal(line, &m) != nil || m.ID != nil || m.Method != sdk.ClientMethodSessionUpdate {
		return Update{}, false
	}
	var n sdk.SessionNotification
	if json.Unmarshal(m.Params, &n) != nil || n.Validate() != nil {
		return Update{}, false
	}
	return translate(n)
}

// TestFastTextChunkAgreesWithTheSDK checks that every line the fast path
// takes decodes to the Update the SDK's path gives, and that it takes the
// plain text chunks agents stream.
func TestFastTextChunkAgreesWithTheSDK(t *testing.T) {
	const pre = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":`
	for _, tc := range []struct {
		name     string
		line     string
		wantFast bool
	}{
		{"agent text", pre + `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi\n"}}}}`, true},
		{"agent text with message id", pre + `{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"hi"}}}}`, true},
		{"null message id", pre + `{"sessionUpdate":"agent_message_chunk","messageId":null,"content":{"type":"text","text":"hi"}}}}`, true},
		{"thought", pre + `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}}}`, true},
		{"escaped text", pre + `{"content":{"text":"a\"b\\c\u00e9\u2028","type":"text"},"sessionUpdate":"agent_message_chunk"}}}`, true},
		{"text missing", pre + `{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}}}`, true},
		{"unknown members", pre + `{"sessionUpdate":"agent_message_chunk","extra":1,"content":{"type":"text","text":"x","more":[1]}}},"x":2}`, true},
		{"annotations", pre + `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","annotations":{"priority":1}}}}}`, false},
		{"bad annotations", pre + `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","annotations":"nope"}}}}`, false},
		{"meta", pre + `{"sessionUpdate":"agent_message_chunk","_meta":{"a":1},"content":{"type":"text","text":"x"}}}}`, false},
		{"params meta", `{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{},"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`, false},
		{"image", pre + `{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA==","mimeType":"image/png"}}}}`, false},
		{"user chunk", pre + `{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"x"}}}}`, false},
		{"tool call", pre + `{"sessionUpdate":"tool_call","toolCallId":"t1","title":"x_chunk\""}}}`, false},
		{"request", `{"jsonrpc":"2.0","id":3,"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`, false},
		{"wrong type", pre + `{"sessionUpdate":"agent_message_chunk","messageId":5,"content":{"type":"text","text":"x"}}}}`, false},
		{"not json", `agent_chunk" garbage`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fast := fastTextChunk([]byte(tc.line))
			if fast != tc.wantFast {
				t.Fatalf("fast path taken: got %v, want %v", fast, tc.wantFast)
			}
			if !fast {
				return
			}
			want, ok := sdkPath(t, []byte(tc.line))
			if !ok {
				t.Fatalf("the SDK's path drops a line the fast path takes")
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}
