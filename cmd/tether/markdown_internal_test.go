package main

import (
	"strings"
	"testing"
)

// TestMarkdownStreamsWholeBlocks feeds a message in chunks cut at every
// place and checks what is printed, and when: each complete line at once,
// a code block or table only once it is closed, nothing twice, and the
// whole message in order at the end.
func TestMarkdownStreamsWholeBlocks(t *testing.T) {
	// The renderer marks each block it is given, so the test sees the
	// blocks as they were cut.
	render := func(s string) string { return "[" + strings.TrimRight(s, "\n") + "]\n" }
	tests := []struct {
		name   string
		text   string
		blocks []string
		// earliest is, for a block, the length of the text after which it
		// must be out (streamed, not held to the end).
		earliest map[string]int
	}{
		{"lines", "one\ntwo\nthree", []string{"[one]", "[two]", "[three]"}, map[string]int{"[one]": 4, "[two]": 8}},
		{"paragraphs", "a\n\nb\n", []string{"[a]", "", "[b]"}, map[string]int{"[a]": 2, "[b]": 5}},
		{"code block held until closed", "x\n```go\nfunc f() {}\n\nreturn\n```\ny\n",
			[]string{"[x]", "[```go\nfunc f() {}\n\nreturn\n```]", "[y]"}, map[string]int{"[```go\nfunc f() {}\n\nreturn\n```]": 35}},
		{"table held until it ends", "| a | b |\n|---|---|\n| 1 | 2 |\nafter\n",
			[]string{"[| a | b |\n|---|---|\n| 1 | 2 |]", "[after]"}, nil},
		{"unclosed code block at the end", "```\ncode\n", []string{"[```\ncode]"}, nil},
		{"blank lines collapse", "a\n\n\n\nb", []string{"[a]", "", "[b]"}, nil},
	}
	for _, tc := range tests {
		for cut := 1; cut <= len(tc.text); cut++ {
			t.Run(tc.name, func(t *testing.T) {
				m := &markdown{render: render}
				var out strings.Builder
				seen := map[string]int{}
				for i := 0; i < len(tc.text); i += cut {
					j := min(i+cut, len(tc.text))
					out.WriteString(m.add(tc.text[i:j]))
					for b := range tc.earliest {
						if _, ok := seen[b]; !ok && strings.Contains(out.String(), b) {
							seen[b] = j
						}
					}
				}
				out.WriteString(m.end())
				if got, want := out.String(), strings.Join(tc.blocks, "\n")+"\n"; got != want {
					t.Fatalf("chunks of %d: got %q, want %q", cut, got, want)
				}
				for b, at := range tc.earliest {
					if got, ok := seen[b]; !ok || got > at+cut-1 {
						t.Errorf("chunks of %d: block %q out after %d bytes (%v), want by %d", cut, b, got, ok, at)
					}
				}
			})
		}
	}
}
