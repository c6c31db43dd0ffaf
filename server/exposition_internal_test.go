package server

import "testing"

func TestExpositionEscapesAndFormats(t *testing.T) {
	cases := []struct {
		name   string
		labels []label
		value  float64
		want   string
	}{
		{"plain integer", nil, 35295232, "m 35295232\n"},
		{"fraction", nil, 0.000324609, "m 0.000324609\n"},
		{"quote, backslash and newline in a label", []label{{"profile", "a\"b\\c\nd"}}, 1, "m{profile=\"a\\\"b\\\\c\\nd\"} 1\n"},
		{"two labels", []label{{"a", "x"}, {"b", "y"}}, 2, "m{a=\"x\",b=\"y\"} 2\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var x exposition
			x.sample("m", tc.labels, tc.value)
			if got := x.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("help escapes newlines", func(t *testing.T) {
		var x exposition
		x.family("m", "gauge", "line one\nline two \\ end")
		if got, want := x.String(), "# HELP m line one\\nline two \\\\ end\n# TYPE m gauge\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}
