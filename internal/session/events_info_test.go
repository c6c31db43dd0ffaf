package session_test

import (
	"strings"
	"testing"

	"github.com/tether/tether/internal/session"
)

func TestTitles(t *testing.T) {
	long := strings.Repeat("word ", 30)
	tests := []struct {
		name, in, prompt, clean string
	}{
		{"plain", "Fix the parser", "Fix the parser", "Fix the parser"},
		{"first line of a prompt", "Fix the parser\nand the lexer", "Fix the parser", "Fix the parser and the lexer"},
		{"spaces folded", "  Fix \t the   parser ", "Fix the parser", "Fix the parser"},
		{"control characters dropped (PostgreSQL refuses NUL)", "Fix\x00the\x07parser", "Fix the parser", "Fix the parser"},
		{"a long prompt cut at a word", long, strings.TrimSpace(strings.Repeat("word ", 12)) + "…", strings.TrimSpace(long)},
		{"empty", " \n ", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := session.PromptTitle(tc.in); got != tc.prompt {
				t.Errorf("PromptTitle(%q): got %q, want %q", tc.in, got, tc.prompt)
			}
			if got := session.CleanTitle(tc.in); got != tc.clean {
				t.Errorf("CleanTitle(%q): got %q, want %q", tc.in, got, tc.clean)
			}
		})
	}
}
