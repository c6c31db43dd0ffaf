package sessions

import (
	"testing"

	"github.com/tether/tether/internal/session"
)

// TestNativeForkSource: a fork's agent copies its origin's ACP session
// only when that session holds exactly the fork's transcript.
func TestNativeForkSource(t *testing.T) {
	turn := func(id string, seq int64, state session.TurnState, rewound bool) session.Turn {
		return session.Turn{PromptID: id, Seq: seq, State: state, Rewound: rewound}
	}
	f := forkStart{origin: session.ForkOrigin{SessionID: "origin", PromptID: "p2"}, profile: "demo", runtime: session.RuntimeStandalone}
	origin := session.Session{ID: "origin", AgentProfileID: "demo"}
	ex := session.Executor{Runtime: session.RuntimeStandalone, ResumeToken: "acp-1"}
	two := []session.Turn{turn("p1", 1, session.TurnCompleted, false), turn("p2", 2, session.TurnCompleted, false)}
	type sourceCase struct {
		name   string
		f      forkStart
		origin session.Session
		ex     session.Executor
		turns  []session.Turn
		want   string
	}
	with := func(c sourceCase, change func(*sourceCase)) sourceCase { change(&c); return c }
	base := sourceCase{name: "at the origin's latest turn", f: f, origin: origin, ex: ex, turns: two, want: "acp-1"}
	cases := []sourceCase{
		base,
		with(base, func(c *sourceCase) {
			c.name, c.turns = "a later turn a rewind took back", append(two, turn("p3", 3, session.TurnCompleted, true))
		}),
		with(base, func(c *sourceCase) {
			c.name, c.want, c.turns = "the origin went on", "", append(two, turn("p3", 3, session.TurnCompleted, false))
		}),
		with(base, func(c *sourceCase) {
			c.name, c.want, c.turns = "a turn queued on the origin", "", append(two, turn("p3", 3, session.TurnQueued, false))
		}),
		with(base, func(c *sourceCase) { c.name, c.want, c.f.profile = "another agent (a hand-off)", "", "other" }),
		with(base, func(c *sourceCase) { c.name, c.want, c.f.host = "another executor", "", "far" }),
		with(base, func(c *sourceCase) { c.name, c.want, c.ex.ResumeToken = "no ACP session on the origin", "", "" }),
		with(base, func(c *sourceCase) {
			c.name, c.want, c.origin.InjectContext = "the origin's agent not yet briefed", "", true
		}),
		with(base, func(c *sourceCase) {
			c.name, c.want, c.origin.ContextLost = "the origin's agent lost its context", "", true
		}),
		with(base, func(c *sourceCase) {
			c.name, c.want = "the fork's turn was interrupted", ""
			c.turns = []session.Turn{two[0], turn("p2", 2, session.TurnInterrupted, false)}
		}),
		with(base, func(c *sourceCase) {
			c.name, c.want = "the fork's turn was rewound", ""
			c.turns = []session.Turn{two[0], turn("p2", 2, session.TurnCompleted, true)}
		}),
		with(base, func(c *sourceCase) { c.name, c.want, c.turns = "the fork's turn is gone", "", two[:1] }),
	}
	runNamed(t, cases, func(c sourceCase) string { return c.name }, func(t *testing.T, c sourceCase) {
		if got := nativeForkSource(c.f, c.origin, c.ex, c.turns); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	})
}

// TestForkStartOf: only a fork's first ACP session is copied; a rewind
// on the fork makes its transcript its own.
func TestForkStartOf(t *testing.T) {
	origin := &session.ForkOrigin{SessionID: "origin", PromptID: "p2"}
	cases := []struct {
		name string
		sess session.Session
		ex   session.Executor
		want bool
	}{
		{"a fork's first start", session.Session{ForkedFrom: origin}, session.Executor{}, true},
		{"no fork", session.Session{}, session.Executor{}, false},
		{"a fork with an ACP session of its own", session.Session{ForkedFrom: origin}, session.Executor{ResumeToken: "acp-2"}, false},
		{"a fork rewound", session.Session{ForkedFrom: origin, LastRewind: &session.Rewind{ID: "r1"}}, session.Executor{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := forkStartOf(c.sess, c.ex) != nil; got != c.want {
				t.Errorf("got a fork start %v, want %v", got, c.want)
			}
		})
	}
}
