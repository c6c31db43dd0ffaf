package acp

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

func TestIsUpdateNotification(t *testing.T) {
	tests := []struct {
		name string
		line string
		want bool
	}{
		{name: "text chunk", line: chunkLine("a"), want: true},
		{name: "members in another order", line: `{"params":{"sessionId":"s"},"method":"session/update","jsonrpc":"2.0"}`, want: true},
		{name: "spaces everywhere", line: " { \"jsonrpc\" : \"2.0\" ,\t\"method\" : \"session/update\" , \"params\" : { } } \r\n", want: true},
		{name: "null id", line: `{"jsonrpc":"2.0","id":null,"method":"session/update","params":{}}`, want: true},
		{name: "nested method and id do not count", line: `{"method":"session/update","params":{"id":1,"method":"x","a":[{"id":2}],"s":"}\"{"}}`, want: true},
		{name: "last method wins", line: `{"method":"fs/read_text_file","method":"session/update"}`, want: true},
		{name: "unknown update kind", line: unknownKind, want: true},
		{name: "params not an object", line: badParamsLine, want: true},
		{name: "request", line: requestLine},
		{name: "request with an id after the method", line: `{"method":"session/update","id":0}`},
		{name: "response", line: responseLine},
		{name: "cancel request", line: cancelReqLine},
		{name: "extension notification", line: extNotifLine},
		{name: "garbage", line: garbageLine},
		{name: "empty", line: ""},
		{name: "empty object", line: "{}"},
		{name: "array", line: `[{"method":"session/update"}]`},
		{name: "method with escapes", line: `{"method":"session\/update"}`},
		{name: "method not a string", line: `{"method":7}`},
		{name: "key matching only without case", line: `{"Method":"session/update"}`},
		{name: "ID matching only without case", line: `{"method":"session/update","ID":3}`},
		{name: "key with escapes", line: `{"m\u0065thod":"session/update"}`},
		{name: "trailing bytes", line: `{"method":"session/update"} x`},
		{name: "unterminated", line: `{"method":"session/update","params":{"a":"b"`},
		{name: "unterminated string", line: `{"method":"session/update","params":"abc`},
		{name: "missing colon", line: `{"method" "session/update"}`},
		{name: "missing value", line: `{"method":"session/update","params":}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsUpdateNotification([]byte(tt.line)); got != tt.want {
				t.Errorf("got %v, want %v for %q", got, tt.want, tt.line)
			}
			checkSniffAgrees(t, []byte(tt.line))
		})
	}
}

// checkSniffAgrees fails if IsUpdateNotification accepts a line that the
// envelope decode reads as something else than a session/update
// notification (a line the decode refuses is dropped either way).
func checkSniffAgrees(t *testing.T, line []byte) {
	t.Helper()
	if !IsUpdateNotification(line) {
		return
	}
	var m envelope
	if json.Unmarshal(line, &m) != nil {
		return
	}
	if m.ID != nil {
		t.Errorf("sniff says notification, the decode finds id %s: %q", *m.ID, line)
	}
	if m.Method != sdk.ClientMethodSessionUpdate {
		t.Errorf("sniff says session/update, the decode finds method %q: %q", m.Method, line)
	}
}

// FuzzIsUpdateNotification holds the sniff against encoding/json on
// arbitrary lines: it may refuse what the decode accepts (the decode path
// then decides), never the other way round.
func FuzzIsUpdateNotification(f *testing.F) {
	for _, s := range []string{chunkLine("a"), requestLine, responseLine, cancelReqLine, unknownKind,
		`{"id":null,"method":"session/update"}`, `{"method":"session/update","id":1}`,
		`{"METHOD":"session/update"}`, `{"method":"session/update","params":{"x":["]",{"y":"\""}]}}`,
		strings.Repeat(`{"a":`, 20) + `1` + strings.Repeat(`}`, 20)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkSniffAgrees(t, line) })
}
