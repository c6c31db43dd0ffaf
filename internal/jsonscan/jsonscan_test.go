package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tether/tether/internal/jsonscan"
)

func TestValue(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"object", `{"a":[1,{"b":"}"}]} rest`, 19},
		{"array", `[1,[2],"]"]`, 11},
		{"string with escapes", `"a\"b\\" x`, 8},
		{"number", `-12.5e3,`, 7},
		{"literal at the end", `true`, 4},
		{"unterminated object", `{"a":1`, -1},
		{"unterminated string", `"abc`, -1},
		{"string ending in an escape", `"abc\"`, -1},
		{"empty", ``, -1},
		{"delimiter where a value goes", `,1`, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jsonscan.Value([]byte(tt.in), 0); got != tt.want {
				t.Errorf("Value(%q): got %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		in      string
		end     int
		escaped bool
	}{
		{`"plain" x`, 7, false},
		{`"a\u0041"`, 9, true},
		{`"open`, -1, false},
	}
	for _, tt := range tests {
		end, esc := jsonscan.String([]byte(tt.in), 0)
		if end != tt.end || esc != tt.escaped {
			t.Errorf("String(%q): got %d, %v; want %d, %v", tt.in, end, esc, tt.end, tt.escaped)
		}
	}
	if got := jsonscan.SkipSpace([]byte(" \t\r\nx"), 0); got != 4 {
		t.Errorf("SkipSpace: got %d, want 4", got)
	}
}

// FuzzString holds String against a byte-at-a-time scan.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"a"`, `"a\"b"`, `"a\\"b`, `"\\\\\"x"`, `"open`, `"\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		wantEnd, wantEsc := -1, false
		for j := 1; j < len(b); j++ {
			if b[j] == '"' {
				wantEnd = j + 1
				break
			}
			if b[j] == '\\' {
				wantEsc = true
				j++
			}
		}
		end, esc := jsonscan.String(b, 0)
		if end != wantEnd || (end >= 0 && esc != wantEsc) {
			t.Fatalf("String(%q): got %d, %v; want %d, %v", b, end, esc, wantEnd, wantEsc)
		}
	})
}

// FuzzValue holds Value against encoding/json: a valid JSON value
// followed by a delimiter ends where the value does.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"}"}]}`, `["\\",{"x":"\""}]`, `"s"`, `12`, `{"a":"\u0041"}`, `[[[]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || len(b) == 0 || b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' {
			jsonscan.Value(b, 0) // must not panic
			return
		}
		v := bytes.TrimRight(b, " \t\r\n")
		in := append(bytes.Clone(v), ',')
		if got := jsonscan.Value(in, 0); got != len(v) {
			t.Fatalf("Value(%q): got %d, want %d", in, got, len(v))
		}
	})
}

func TestDepth(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"scalar", `"x"`, 0},
		{"empty array", `[]`, 1},
		{"prompt blocks", `[{"type":"text","text":"hi"}]`, 2},
		{"brackets inside strings do not count", `[{"text":"[[[{{{"}]`, 2},
		{"escaped quote inside a string", `[{"text":"a\"[[["}]`, 2},
		{"deepest branch wins", `[[[1]],[2]]`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jsonscan.Depth([]byte(tt.in)); got != tt.want {
				t.Errorf("Depth(%s): got %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}
