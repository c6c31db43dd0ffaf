package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHideCoversOnce: a secret inside a directory the sandbox hides gets
// no cover of its own, in whatever order they are hidden (a cover inside
// the tmpfs would create its mount point there and show the secret's
// name: found by test/sandbox's hostile agent with the data dir in the
// workspace); a secret that a bind inside the hidden directory shows again
// is covered; a path nothing shows is left alone.
func TestHideCoversOnce(t *testing.T) {
	ws := real(t.TempDir())
	data := filepath.Join(ws, ".tether")
	state := filepath.Join(data, "state")
	for _, f := range []string{filepath.Join(data, "token"), filepath.Join(data, "agents.yaml"),
		filepath.Join(data, "host", "token"), filepath.Join(state, "secret")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	elsewhere := real(t.TempDir())
	tests := []struct {
		name   string
		binds  []string // bound read-write, in this order
		hidden []string // hidden, in this order
		want   []string // the hiding ops, rendered
	}{
		{"the dir, then what is in it", []string{ws}, []string{data, filepath.Join(data, "token"), filepath.Join(data, "host"), filepath.Join(data, "agents.yaml")},
			[]string{"--tmpfs " + data}},
		{"what is in it, then the dir", []string{ws}, []string{filepath.Join(data, "token"), filepath.Join(data, "host", "token"), filepath.Join(data, "agents.yaml"), data},
			[]string{"--tmpfs " + data}},
		{"a file alone", []string{ws}, []string{filepath.Join(data, "token")},
			[]string{"--ro-bind /dev/null " + filepath.Join(data, "token")}},
		{"a bind inside the hidden dir shows its file again", []string{ws, state}, []string{filepath.Join(state, "secret"), data},
			[]string{"--tmpfs " + data, "--ro-bind /dev/null " + filepath.Join(state, "secret")}},
		{"nothing shows it", []string{elsewhere}, []string{data, filepath.Join(data, "token")}, nil},
		{"hidden twice", []string{ws}, []string{data, data}, []string{"--tmpfs " + data}},
		{"an unset flag", []string{ws}, []string{""}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			for _, d := range tc.binds {
				b.bind("--bind", d)
			}
			for _, h := range tc.hidden {
				b.hide(h)
			}
			if got := hidingOps(b.args("")); !slices.Equal(got, tc.want) {
				t.Errorf("hiding ops: got %q, want %q", got, tc.want)
			}
		})
	}
}

// hidingOps picks the tmpfs and /dev/null mounts out of a command line
// (the sandbox's own /tmp aside), in order.
func hidingOps(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--tmpfs" && args[i+1] != "/tmp":
			out = append(out, strings.Join(args[i:i+2], " "))
		case args[i] == "--ro-bind" && args[i+1] == "/dev/null":
			out = append(out, "--ro-bind /dev/null "+args[i+2])
		}
	}
	return out
}
