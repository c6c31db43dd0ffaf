package demoagent

import (
	"errors"
	"slices"
	"testing"
)

// TestParseAttacksReadsEveryOutcome: the report's lines come back as they
// were written, a detail with parentheses of its own included.
func TestParseAttacksReadsEveryOutcome(t *testing.T) {
	blocked := &attempt{name: AttackReadToken}
	blocked.fail("/d/token", errors.New("open /d/token: no such file (or directory)"))
	won := &attempt{name: AttackWriteOutside}
	won.fail("/a", errors.New("denied"))
	won.win("/b", "wrote it")
	want := []AttackResult{blocked.result(), won.result(), (&attempt{name: AttackHostSocket}).result(),
		{Name: AttackLeaveProcess, Outcome: OutcomeStarted, Detail: "pid 12 in a session of its own, marker m"}}
	var report string
	for _, r := range want {
		report += r.String() + "\n"
	}
	got := ParseAttacks("found something\n" + report + "permission outcome 1: reject_once\n")
	if len(got) != len(want) {
		t.Fatalf("got %d attacks, want %d: %v", len(got), len(want), got)
	}
	for _, w := range want {
		if got[w.Name] != w {
			t.Errorf("attack %s: got %+v, want %+v", w.Name, got[w.Name], w)
		}
	}
	if o := got[AttackReadToken].Outcome; o != OutcomeBlocked {
		t.Errorf("an attack that failed on every target: got %s, want %s", o, OutcomeBlocked)
	}
	if o := got[AttackWriteOutside].Outcome; o != OutcomeSucceeded {
		t.Errorf("an attack that worked on one target: got %s, want %s", o, OutcomeSucceeded)
	}
	if o := got[AttackHostSocket].Outcome; o != OutcomeUntried {
		t.Errorf("an attack with no target: got %s, want %s", o, OutcomeUntried)
	}
}

// TestDiscoverReadsTetherCommandLines: the flags of tetherd serve and
// tetherd host that name a secret, and the paths a bwrap command line
// hides, become targets, and each counts as a secret exposed.
func TestDiscoverReadsTetherCommandLines(t *testing.T) {
	tests := []struct {
		name                          string
		argv                          []string
		tokenFiles, sockets, dataDirs []string
		tokens                        []string
		exposed                       int
	}{
		{"serve", []string{"/usr/bin/tetherd", "serve", "--data-dir", "/d", "--addr", "127.0.0.1:1", "--token=s3cret"},
			[]string{"/d/token", "/d/host/token"}, []string{"/d/host/host.sock", "/d/host.sock"}, []string{"/d"}, []string{"s3cret"}, 2},
		{"host", []string{"tetherd", "host", "--socket", "/h/s", "--token-file", "/h/t", "--tls-key=/h/k"},
			[]string{"/h/t", "/h/k"}, []string{"/h/s"}, nil, nil, 3},
		{"bwrap", []string{"bwrap", "--tmpfs", "/tmp", "--tmpfs", "/d", "--ro-bind", "/dev/null", "/x/token", "--", "tetherd", "--token-file", "/not/a/flag"},
			[]string{"/d/token", "/d/host/token", "/x/token"}, []string{"/d/host/host.sock", "/d/host.sock", "/x/token"}, []string{"/d"}, nil, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &loot{}
			l.fromArgv(tc.argv, "a command line")
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"token files", l.tokenFiles, tc.tokenFiles}, {"sockets", l.sockets, tc.sockets},
				{"data dirs", l.dataDirs, tc.dataDirs}, {"tokens", l.tokens, tc.tokens}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
				}
			}
			if len(l.exposed) != tc.exposed {
				t.Errorf("exposed: got %q, want %d", l.exposed, tc.exposed)
			}
		})
	}
	if tetherProcess("/sbin/init") || !tetherProcess("/usr/local/bin/tetherd") {
		t.Error("tetherProcess: want tetherd's and bwrap's command lines only")
	}
}
