package connlimit

import "testing"

func TestMaxForFileLimit(t *testing.T) {
	cases := []struct {
		name  string
		limit uint64
		want  int
	}{
		{"unknown", 0, unknownDefault},
		{"tiny", 64, 1},
		{"small keeps the minimum reserve", 200, 136},
		{"container default", 1024, 768},
		{"large keeps the maximum reserve", 20000, 15904},
		{"huge hits the ceiling", 1 << 20, ceiling},
		{"infinity", ^uint64(0), ceiling},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := maxFor(tc.limit); got != tc.want {
				t.Errorf("maxFor(%d): got %d, want %d", tc.limit, got, tc.want)
			}
		})
	}
}
