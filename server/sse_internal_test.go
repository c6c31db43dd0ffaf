package server

import "testing"

// TestAppendDataSplitsEveryLineEnd checks the data: framing of a payload:
// each of SSE's three line ends (LF, CRLF, lone CR) starts a new data:
// line, so a stray line end in a payload can never end the field early.
func TestAppendDataSplitsEveryLineEnd(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"compact JSON", `{"a":1}`, "data: {\"a\":1}\n\n"},
		{"empty", ``, "data: \n\n"},
		{"LF", "a\nb", "data: a\ndata: b\n\n"},
		{"CRLF", "a\r\nb", "data: a\ndata: b\n\n"},
		{"lone CR", "a\rb", "data: a\ndata: b\n\n"},
		{"CR before a later LF", "a\rb\nc", "data: a\ndata: b\ndata: c\n\n"},
		{"LF before a later CR", "a\nb\rc", "data: a\ndata: b\ndata: c\n\n"},
		{"trailing LF", "a\n", "data: a\ndata: \n\n"},
		{"LF LF", "a\n\nb", "data: a\ndata: \ndata: b\n\n"},
		{"CR at the end", "a\r", "data: a\ndata: \n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(appendData(nil, []byte(tc.data))); got != tc.want {
				t.Errorf("appendData(%q): got %q, want %q", tc.data, got, tc.want)
			}
		})
	}
}
