package terminal_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/terminal"
)

// follow reads a held command as its follower does, acknowledging what
// it has read, until the command exits; it returns all of it.
func follow(t *testing.T, s *terminal.Set, id string, discardAfter int64) (got []byte, end int64, code *int) {
	t.Helper()
	var off int64
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		discard := discardAfter >= 0 && off >= discardAfter
		c, err := s.Follow(context.Background(), "s", id, off, off, 5*time.Second, discard)
		if err != nil {
			t.Fatal(err)
		}
		if !discard && c.Offset != off {
			t.Fatalf("read at %d came from %d: output was dropped", off, c.Offset)
		}
		got = append(got, c.Data...)
		off = c.End
		if c.Exited {
			return got, c.End, c.ExitCode
		}
	}
	t.Fatal("the command did not end")
	return nil, 0, nil
}

// TestHeldCommandKeepsEverything: a held command writing three times its
// buffer at once loses nothing to a follower that acknowledges as it
// reads; discarded, the rest is only counted and the command runs to its
// exit code; closed while it waits on a full buffer, it ends.
func TestHeldCommandKeepsEverything(t *testing.T) {
	s := terminal.New(terminal.Options{Scrollback: 64 << 10})
	dir := t.TempDir()
	const total = 3 * 64 << 10
	want := strings.Repeat("0123456789abcde\n", total/16)

	c, err := s.RunCommand("s", dir, dir, "yes 0123456789abcde | head -c 196608; exit 3", true)
	if err != nil {
		t.Fatal(err)
	}
	// Not read until its buffer is full: the command waits there rather
	// than lose output.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if l := s.List("s"); len(l) == 1 && l[0].Offset >= 64<<10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not fill its buffer")
		}
	}
	got, end, code := follow(t, s, c.ID, -1)
	if string(got) != want || end != total || code == nil || *code != 3 {
		t.Errorf("held: got %d bytes (equal: %v), end %d, exit %v; want all %d, exit 3", len(got), string(got) == want, end, code, total)
	}

	c, err = s.RunCommand("s", dir, dir, "yes | head -c 10000000; exit 4", true)
	if err != nil {
		t.Fatal(err)
	}
	got, end, code = follow(t, s, c.ID, 1000)
	if len(got) < 1000 || end != 10_000_000 || code == nil || *code != 4 {
		t.Errorf("discarded: got %d bytes, end %d, exit %v; want the first ones, end 10000000, exit 4", len(got), end, code)
	}

	c, err = s.RunCommand("s", dir, dir, "yes", true)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := s.Close("s", c.ID); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("closing a held command waiting on its buffer did not return")
	}
}

// TestCommandsInASandbox: with a sandbox (--terminal-sandbox), a command
// writes the session's directory and cannot read a hidden token beside
// it; without one (the default) it is the user's own tool and can.
func TestCommandsInASandbox(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap must work under CI: %v", err)
		}
		t.Skipf("SKIPPING: bubblewrap does not work here: %v", err)
	}
	secret := t.TempDir()
	token := filepath.Join(secret, "token")
	if err := os.WriteFile(token, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		sandbox *sandbox.Spec
		want    int // the exit code of reading the token
	}{
		{name: "default: unsandboxed", want: 0},
		{name: "sandboxed", sandbox: &sandbox.Spec{Policy: sandbox.Policy{Mode: sandbox.ModeRequired, Writable: []string{}}, Hidden: []string{secret}}, want: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := terminal.New(terminal.Options{Sandbox: c.sandbox})
			dir := t.TempDir()
			cmd, err := s.RunCommand("s", dir, dir, "echo kept > out; cat "+token+" >/dev/null 2>&1", true)
			if err != nil {
				t.Fatal(err)
			}
			_, _, code := follow(t, s, cmd.ID, -1)
			if code == nil || *code != c.want {
				t.Fatalf("reading the token: got exit %v, want %d", code, c.want)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "out")); err != nil || string(b) != "kept\n" {
				t.Fatalf("the session's directory: got %q, %v; want the file written", b, err)
			}
		})
	}
}
