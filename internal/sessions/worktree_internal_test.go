package sessions

import "testing"

func TestWorktreeBranch(t *testing.T) {
	cases := []struct{ name, title, want string }{
		{"words", "Fix the parser", "tether/fix-the-parser-12345678"},
		{"punctuation and case", "  Add --verbose flag (CLI)!  ", "tether/add-verbose-flag-cli-12345678"},
		{"no ascii words", "修复解析器", "tether/session-12345678"},
		{"empty", "", "tether/session-12345678"},
		{"long", "a very long title that goes on and on well past forty characters", "tether/a-very-long-title-that-goes-on-and-on-we-12345678"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := worktreeBranch(c.title, "12345678-aaaa-bbbb"); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
