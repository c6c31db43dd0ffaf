package sessions

import (
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// rewindTurns are five turns in seq order: p1–p3 completed, p4 rewound
// earlier, p5 completed after it.
func rewindTurns() []session.Turn {
	at := time.Unix(1, 0)
	var out []session.Turn
	for i, id := range []string{"p1", "p2", "p3", "p4", "p5"} {
		out = append(out, session.Turn{PromptID: id, Seq: int64(i + 1), State: session.TurnCompleted, StartedAt: &at, Rewound: id == "p4"})
	}
	// Shuffled: the plan orders them by seq.
	out[0], out[4] = out[4], out[0]
	return out
}

func TestPlanRewind(t *testing.T) {
	idle := view{State: session.SessionWaitingForInput}
	for _, tc := range []struct {
		name      string
		v         view
		rewinding bool
		turns     []session.Turn
		last      *session.Rewind
		cmd       rewindCmd
		wantCode  errcode.Code
		want      rewindPlan
	}{
		{name: "to p2: later turns not yet rewound are marked", v: idle, turns: rewindTurns(), cmd: rewindCmd{ToTurn: "p2"},
			want: rewindPlan{ToPromptID: "p2", Rewound: []string{"p3", "p5"}, Turns: 5}},
		{name: "to the latest: nothing marked", v: idle, turns: rewindTurns(), cmd: rewindCmd{ToTurn: "p5"},
			want: rewindPlan{ToPromptID: "p5", Rewound: []string{}, Turns: 5}},
		{name: "a turn runs", v: view{State: session.SessionRunning, Running: &runningView{PromptID: "p5"}}, turns: rewindTurns(),
			cmd: rewindCmd{ToTurn: "p2"}, wantCode: errcode.RewindRunning},
		{name: "a turn is queued", v: view{State: session.SessionWaitingForInput, Queue: []queuedView{{PromptID: "q"}}}, turns: rewindTurns(),
			cmd: rewindCmd{ToTurn: "p2"}, wantCode: errcode.RewindRunning},
		{name: "the agent is starting", v: view{State: session.SessionStarting, Agent: agentStarting}, turns: rewindTurns(),
			cmd: rewindCmd{ToTurn: "p2"}, wantCode: errcode.RewindRunning},
		{name: "another rewind is in progress", v: idle, rewinding: true, turns: rewindTurns(), cmd: rewindCmd{ToTurn: "p2"}, wantCode: errcode.RewindInProgress},
		{name: "closed", v: view{State: session.SessionCompleted}, turns: rewindTurns(), cmd: rewindCmd{ToTurn: "p2"}, wantCode: errcode.SessionTerminal},
		{name: "unknown turn", v: idle, turns: rewindTurns(), cmd: rewindCmd{ToTurn: "nope"}, wantCode: errcode.TurnNotFound},
		{name: "a rewound turn", v: idle, turns: rewindTurns(), cmd: rewindCmd{ToTurn: "p4"}, wantCode: errcode.InvalidState},
		{name: "undo with none", v: idle, turns: rewindTurns(), cmd: rewindCmd{Undo: true}, wantCode: errcode.RewindNotUndoable},
		{name: "undo after a later turn", v: idle, turns: rewindTurns(), last: &session.Rewind{ID: "r1", Rewound: []string{"p4"}, Turns: 4},
			cmd: rewindCmd{Undo: true}, wantCode: errcode.RewindNotUndoable},
		{name: "undo swaps the marks", v: idle, turns: rewindTurns(), last: &session.Rewind{ID: "r1", Rewound: []string{"p4"}, Turns: 5},
			cmd: rewindCmd{Undo: true}, want: rewindPlan{Undoes: "r1", Rewound: []string{}, Restored: []string{"p4"}, Turns: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := planRewind(tc.v, tc.rewinding, tc.turns, tc.last, tc.cmd, "new")
			if tc.wantCode != "" {
				if !errcode.Is(err, tc.wantCode) {
					t.Fatalf("got %v, want %s", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != "new" || got.ToPromptID != tc.want.ToPromptID || got.Undoes != tc.want.Undoes || got.Turns != tc.want.Turns ||
				!slices.Equal(got.Rewound, tc.want.Rewound) || !slices.Equal(got.Restored, tc.want.Restored) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The restore a rewind asks for: the turn's end, falling back to the
// start of the next turn that ran (a rewound one too: its start is the
// end), with the files compared against the last turn that was not
// rewound, or the turn the last rewind went back to.
func TestPlanRewindRestoreSpec(t *testing.T) {
	idle := view{State: session.SessionWaitingForInput}
	p, err := planRewind(idle, false, rewindTurns(), nil, rewindCmd{ToTurn: "p3"}, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Spec; s.Turn != "p3" || s.NextTurn != "p4" || s.LastTurn != "p5" || s.SafetyID != "r2" {
		t.Errorf("got %+v, want p3's end, p4 next, p5 last, safety r2", s)
	}
	last := &session.Rewind{ID: "r1", ToPromptID: "p3", Rewound: []string{"p4"}, Turns: 5}
	if p, err = planRewind(idle, false, rewindTurns(), last, rewindCmd{ToTurn: "p1"}, "r3"); err != nil {
		t.Fatal(err)
	}
	if p.Spec.LastTurn != "p3" {
		t.Errorf("after a rewind to p3 with no turn since: got last turn %q, want p3", p.Spec.LastTurn)
	}
}

func TestPickForkPoint(t *testing.T) {
	for _, tc := range []struct {
		name       string
		at         string
		wantAt     string
		wantNext   string
		wantCopied []string
		wantLatest bool
		wantCode   errcode.Code
	}{
		{name: "default: the latest that ended", wantAt: "p5", wantCopied: []string{"p1", "p2", "p3", "p5"}, wantLatest: true},
		{name: "at p3: the rewound p4 is next", at: "p3", wantAt: "p3", wantNext: "p4", wantCopied: []string{"p1", "p2", "p3"}},
		{name: "a rewound turn", at: "p4", wantCode: errcode.InvalidState},
		{name: "unknown", at: "x", wantCode: errcode.TurnNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pickForkPoint(rewindTurns(), tc.at)
			if tc.wantCode != "" {
				if !errcode.Is(err, tc.wantCode) {
					t.Fatalf("got %v, want %s", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var copied []string
			for _, c := range p.copied {
				copied = append(copied, c.PromptID)
			}
			if p.at.PromptID != tc.wantAt || p.next != tc.wantNext || p.latest != tc.wantLatest || !slices.Equal(copied, tc.wantCopied) {
				t.Errorf("got at %s next %q latest %v copied %v, want %s %q %v %v", p.at.PromptID, p.next, p.latest, copied,
					tc.wantAt, tc.wantNext, tc.wantLatest, tc.wantCopied)
			}
		})
	}
	running := rewindTurns()
	running[0].State = session.TurnRunning // p5
	if _, err := pickForkPoint(running, "p5"); !errcode.Is(err, errcode.RewindRunning) {
		t.Errorf("a running turn: got %v, want %s", err, errcode.RewindRunning)
	}
}

// A rewind carried out is recorded, its executor loses its ACP session
// (the next turn starts a fresh one), and a running agent is retired.
func TestDecideRewound(t *testing.T) {
	at := time.Unix(5, 0).UTC()
	in := rewoundInput{Plan: rewindPlan{ID: "r1", ToPromptID: "p2", Rewound: []string{"p3"}, Turns: 3},
		Files: []session.ChangedFile{{Path: "a.txt", Status: "modified"}}, At: at}
	for _, tc := range []struct {
		name      string
		connected bool
		wantStop  bool
	}{
		{"agent running: retired", true, true},
		{"no agent", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := view{State: session.SessionWaitingForInput, Connected: tc.connected,
				Executor: session.Executor{Runtime: session.RuntimeStandalone, Status: session.ExecutorReady, ResumeToken: "acp-1"}}
			d := decideRewound(v, in)
			if d.Refusal != nil || len(d.Effects) < 2 {
				t.Fatalf("got %+v, want the rewind and the executor recorded", d)
			}
			ev, ok := d.Effects[0].(effRecord).Event.(*session.SessionRewoundData)
			if !ok || ev.RewindID != "r1" || ev.ToPromptID != "p2" || !slices.Equal(ev.Rewound, []string{"p3"}) || len(ev.Files) != 1 || !ev.At.Equal(at) {
				t.Errorf("got first effect %+v, want session.rewound of r1", d.Effects[0])
			}
			x, ok := d.Effects[1].(effRecord).Event.(*session.ExecutorStatusData)
			if !ok || x.ResumeToken != "" || x.Status != session.ExecutorReady {
				t.Errorf("got second effect %+v, want the executor as it is without its ACP session", d.Effects[1])
			}
			stops := len(d.Effects) == 3
			if stops != tc.wantStop {
				t.Errorf("got effects %+v, want the agent retired: %v", d.Effects, tc.wantStop)
			}
			if stops {
				if s, ok := d.Effects[2].(effStopAgent); !ok || s.How != stopRetire {
					t.Errorf("got third effect %+v, want the agent retired", d.Effects[2])
				}
			}
		})
	}
}
