package commands

import "testing"

func TestCompleteUTF8(t *testing.T) {
	e := []byte("é") // 2 bytes
	z := []byte("中") // 3 bytes
	g := []byte("🙂") // 4 bytes
	cases := []struct {
		name string
		in   []byte
		want int
	}{
		{"ascii", []byte("abc"), 3},
		{"empty", nil, 0},
		{"whole characters", append(append([]byte("a"), e...), z...), 6},
		{"cut 2-byte", append([]byte("a"), e[:1]...), 1},
		{"cut 3-byte after 1", append([]byte("ab"), z[:1]...), 2},
		{"cut 3-byte after 2", append([]byte("ab"), z[:2]...), 2},
		{"cut 4-byte after 3", append([]byte("x"), g[:3]...), 1},
		{"whole 4-byte", append([]byte("x"), g...), 5},
		{"invalid byte left as is", []byte{'a', 0xff}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := completeUTF8(c.in); got != c.want {
				t.Errorf("got %d, want %d", got, c.want)
			}
		})
	}
}
