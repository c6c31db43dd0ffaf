package sessions

import "testing"

// TestHeldInReplay: a native load's replayed user messages show whether the
// agent holds the last prompt; an identical earlier prompt does not count.
func TestHeldInReplay(t *testing.T) {
	cases := []struct {
		name     string
		texts    []string
		replayed []string
		want     bool
	}{
		{"held", []string{"first", "second"}, []string{"first", "second"}, true},
		{"held, wrapped by the agent", []string{"second"}, []string{"<context>x</context>\nsecond"}, true},
		{"held, then the agent's own marker", []string{"first", "second"}, []string{"first", "second", "[Request interrupted by user]"}, true},
		{"not held", []string{"first", "second"}, []string{"first"}, false},
		{"an identical earlier prompt is not this one", []string{"again", "again"}, []string{"again"}, false},
		{"both identical prompts held", []string{"again", "again"}, []string{"again", "again"}, true},
		{"empty prompt text", []string{""}, []string{"anything"}, false},
		{"no turns", nil, []string{"anything"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := heldInReplay(tc.texts, tc.replayed); got != tc.want {
				t.Errorf("heldInReplay(%q, %q): got %v, want %v", tc.texts, tc.replayed, got, tc.want)
			}
		})
	}
}
