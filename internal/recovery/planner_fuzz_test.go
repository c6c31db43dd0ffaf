package recovery_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tether/tether/internal/recovery"
	"github.com/tether/tether/internal/store"
)

// fuzzBytes hands out the fuzzer's bytes; once they run out it yields
// zeros, so every input decodes to some transcript.
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) next() byte {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return f.b[f.i-1]
}

func (f *fuzzBytes) bit() bool { return f.next()&1 == 1 }

func pick[T any](f *fuzzBytes, from []T) T { return from[int(f.next())%len(from)] }

var (
	fuzzTurnStates = []store.TurnState{store.TurnQueued, store.TurnRunning, store.TurnCompleted,
		store.TurnCancelled, store.TurnFailed, store.TurnInterrupted}
	fuzzTurnKinds  = []store.TurnKind{store.TurnInitial, store.TurnPrompt, store.TurnContinue}
	fuzzReasons    = []string{"", "agent_exited", "daemon_restart", "agent_crashed"}
	fuzzRoles      = []store.MessageRole{store.RoleUser, store.RoleAgent, store.RoleThought, store.RoleSystem}
	fuzzToolStatus = []store.ToolCallStatus{store.ToolPending, store.ToolInProgress, store.ToolCompleted, store.ToolFailed}
	fuzzPermStates = []store.PermissionState{store.PermissionPending, store.PermissionSelected,
		store.PermissionCancelled, store.PermissionExpired}
	fuzzSessStates = []store.SessionState{store.SessionCreated, store.SessionStarting, store.SessionRunning,
		store.SessionWaitingForInput, store.SessionCompleted, store.SessionFailed, store.SessionCancelled}
	fuzzTitles = []string{"Run make", "Edit main.go", "Read go.mod", "", "Fetch"}
	fuzzKinds  = []string{"execute", "edit", "read", "", "fetch"}
	// Turn prompt ids are never empty (the store assigns them); output may
	// carry an empty one or one of a turn that does not exist.
	fuzzTurnIDs   = []string{"p1", "p2", "p3", "p4", "p5", "p6"}
	fuzzOutputIDs = []string{"p1", "p2", "p3", "p4", "p5", "p6", "", "ghost"}
)

// decodeInput turns fuzz bytes into a transcript and live state. Turn seqs
// are consecutive unless the bytes ask for a perturbation, so both gapless
// and gapped transcripts are common.
func decodeInput(data []byte) recovery.Input {
	f := &fuzzBytes{b: data}
	var in recovery.Input
	flags := f.next()
	in.Closing = flags&1 != 0
	in.AgentAvailable = flags&2 == 0
	in.ContextLost = flags&4 != 0 && flags&8 != 0 // rarer
	in.State = pick(f, fuzzSessStates)

	nTurns := int(f.next() % 8)
	for i := 0; i < nTurns; i++ {
		t := store.Turn{
			SessionID: "s1",
			PromptID:  pick(f, fuzzTurnIDs),
			Seq:       int64(i + 1),
			Kind:      pick(f, fuzzTurnKinds),
			State:     pick(f, fuzzTurnStates),
		}
		ctl := f.next()
		t.CancelRequested = ctl&1 != 0
		if ctl&0x30 == 0x30 { // perturb the seq: gaps, duplicates, zero
			t.Seq = int64(ctl>>6) + int64(i)
		}
		t.InterruptReason = pick(f, fuzzReasons)
		in.Turns = append(in.Turns, t)
	}
	nMsgs := int(f.next() % 10)
	for i := 0; i < nMsgs; i++ {
		in.Messages = append(in.Messages, store.Message{ID: int64(i + 1), SessionID: "s1",
			PromptID: pick(f, fuzzOutputIDs), Role: pick(f, fuzzRoles), Text: "m", CreatedAt: at(i)})
	}
	nCalls := int(f.next() % 8)
	for i := 0; i < nCalls; i++ {
		in.ToolCalls = append(in.ToolCalls, store.ToolCall{SessionID: "s1",
			ToolCallID: "tc" + string(rune('a'+i)), PromptID: pick(f, fuzzOutputIDs),
			Title: pick(f, fuzzTitles), Kind: pick(f, fuzzKinds), Status: pick(f, fuzzToolStatus),
			Interrupted: f.bit(), CreatedAt: at(i), UpdatedAt: at(i + 1)})
	}
	nPerms := int(f.next() % 4)
	for i := 0; i < nPerms; i++ {
		in.Permissions = append(in.Permissions, store.Permission{ID: "perm" + string(rune('a'+i)), SessionID: "s1",
			PromptID: pick(f, fuzzOutputIDs), State: pick(f, fuzzPermStates)})
	}
	return in
}

func cloneInput(in recovery.Input) recovery.Input {
	out := in
	out.Turns = append([]store.Turn(nil), in.Turns...)
	out.Messages = append([]store.Message(nil), in.Messages...)
	out.ToolCalls = append([]store.ToolCall(nil), in.ToolCalls...)
	out.Permissions = append([]store.Permission(nil), in.Permissions...)
	return out
}

func FuzzPlan(f *testing.F) {
	f.Add([]byte{})
	// idle session, agent available; two turns: completed, interrupted; agent text and a cut-off tool call
	f.Add([]byte{0, 3, 2, 0, 1, 2, 0, 0, 1, 1, 5, 5, 0, 3, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 3, 1})
	// queued after interrupted, pending permission
	f.Add([]byte{0, 3, 3, 0, 1, 5, 0, 1, 1, 1, 5, 0, 1, 2, 1, 0, 0, 2, 1, 0, 1, 1, 1, 0, 1, 0})
	// gapped seqs, context lost, closing, terminal session
	f.Add([]byte{13, 5, 4, 0, 0, 5, 0x30, 1, 1, 1, 0xF0, 1, 2, 2, 5, 2, 2, 0, 7, 1, 6, 1, 0, 0, 3, 0, 0})
	// everything maxed
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255})

	continuable := map[recovery.Kind]bool{recovery.InterruptedPrompt: true, recovery.InterruptedTurn: true}
	knownKinds := map[recovery.Kind]bool{recovery.Clean: true, recovery.InterruptedPrompt: true,
		recovery.InterruptedTurn: true, recovery.DegradedHistory: true}
	knownReasons := map[string]bool{"": true, recovery.ReasonTurnActive: true, recovery.ReasonTurnQueued: true,
		recovery.ReasonPermissionPending: true, recovery.ReasonSessionClosing: true, recovery.ReasonSessionTerminal: true,
		recovery.ReasonAgentUnavailable: true, recovery.ReasonNothingToContinue: true, recovery.ReasonHistoryDegraded: true}

	f.Fuzz(func(t *testing.T, data []byte) {
		in := decodeInput(data)
		orig := cloneInput(in)
		s := recovery.Plan(in) // must not panic

		if !reflect.DeepEqual(in, orig) {
			t.Fatalf("Plan mutated its input")
		}
		if again := recovery.Plan(cloneInput(orig)); !reflect.DeepEqual(s, again) {
			t.Fatalf("Plan is not deterministic:\n%+v\n%+v", s, again)
		}
		if s.DanglingToolCalls == nil {
			t.Fatalf("danglingToolCalls is nil")
		}
		if strings.TrimSpace(s.Notice) == "" {
			t.Fatalf("notice is empty: %+v", s)
		}
		if !knownKinds[s.Kind] {
			t.Fatalf("unknown kind %q", s.Kind)
		}
		if !knownReasons[s.Reason] {
			t.Fatalf("unknown reason %q", s.Reason)
		}
		if s.CanContinue != (s.Reason == "") {
			t.Fatalf("canContinue = %v with reason %q", s.CanContinue, s.Reason)
		}
		if s.Kind == recovery.DegradedHistory && s.CanContinue {
			t.Fatalf("degraded_history can continue: %+v", s)
		}
		if in.ContextLost && s.Kind != recovery.DegradedHistory {
			t.Fatalf("context lost but kind %q", s.Kind)
		}

		running, queued, pending := false, false, false
		for _, tr := range in.Turns {
			running = running || tr.State == store.TurnRunning
			queued = queued || tr.State == store.TurnQueued
		}
		for _, p := range in.Permissions {
			pending = pending || p.State == store.PermissionPending
		}
		if s.CanContinue {
			switch {
			case !continuable[s.Kind]:
				t.Fatalf("canContinue with kind %q", s.Kind)
			case running:
				t.Fatalf("canContinue while a turn is running")
			case queued:
				t.Fatalf("canContinue while a turn is queued")
			case pending:
				t.Fatalf("canContinue while a permission is pending")
			case in.State.Terminal():
				t.Fatalf("canContinue in terminal state %s", in.State)
			case in.Closing:
				t.Fatalf("canContinue while closing")
			case !in.AgentAvailable:
				t.Fatalf("canContinue without an agent")
			}
		}

		// The turn a continuation would pick up: the last non-queued turn by seq.
		var last *store.Turn
		for i := range in.Turns {
			tr := &in.Turns[i]
			if tr.State == store.TurnQueued {
				continue
			}
			if last == nil || tr.Seq >= last.Seq {
				last = tr
			}
		}
		if continuable[s.Kind] {
			if s.PromptID == "" {
				t.Fatalf("kind %q without promptId", s.Kind)
			}
			if last == nil || last.PromptID != s.PromptID || last.State != store.TurnInterrupted || last.CancelRequested {
				t.Fatalf("promptId %q does not name the last turn, an uncancelled interrupted one (last %+v)", s.PromptID, last)
			}
			if s.InterruptReason != last.InterruptReason {
				t.Fatalf("interruptReason %q, turn says %q", s.InterruptReason, last.InterruptReason)
			}
		}
		if s.Kind == recovery.Clean && (s.PromptID != "" || len(s.DanglingToolCalls) != 0) {
			t.Fatalf("clean summary names a turn or dangling calls: %+v", s)
		}
		if s.Kind == recovery.InterruptedPrompt && len(s.DanglingToolCalls) != 0 {
			t.Fatalf("interrupted_prompt with dangling tool calls: %+v", s)
		}
		if s.PromptID == "" && len(s.DanglingToolCalls) != 0 {
			t.Fatalf("dangling tool calls without a turn: %+v", s)
		}

		// Dangling calls are exactly the unfinished or interrupted calls of the turn, in order.
		if s.PromptID != "" {
			var want []string
			for _, c := range in.ToolCalls {
				if c.PromptID == s.PromptID && (c.Interrupted || c.Status == store.ToolPending || c.Status == store.ToolInProgress) {
					want = append(want, c.ToolCallID)
				}
			}
			var got []string
			for _, d := range s.DanglingToolCalls {
				got = append(got, d.ID)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("dangling %v, want %v", got, want)
			}
		}
		if s.Kind == recovery.InterruptedTurn {
			for _, d := range s.DanglingToolCalls {
				if !strings.Contains(s.Notice, d.Title) {
					t.Fatalf("notice %q does not name %q", s.Notice, d.Title)
				}
			}
		}

		// With distinct seqs the caller's turn order does not matter.
		seen := map[int64]bool{}
		distinct := true
		for _, tr := range in.Turns {
			distinct = distinct && !seen[tr.Seq]
			seen[tr.Seq] = true
		}
		if distinct && len(in.Turns) > 1 {
			rev := cloneInput(orig)
			for i, j := 0, len(rev.Turns)-1; i < j; i, j = i+1, j-1 {
				rev.Turns[i], rev.Turns[j] = rev.Turns[j], rev.Turns[i]
			}
			if r := recovery.Plan(rev); !reflect.DeepEqual(r, s) {
				t.Fatalf("turn order changed the plan:\n%+v\n%+v", s, r)
			}
		}

		p := recovery.ContinuationPrompt(s)
		for _, d := range s.DanglingToolCalls {
			if !strings.Contains(p, d.ID) {
				t.Fatalf("continuation prompt does not name %s", d.ID)
			}
		}
		if strings.Contains(strings.ToLower(p), "replay") {
			t.Fatalf("continuation prompt mentions replay:\n%s", p)
		}
	})
}
